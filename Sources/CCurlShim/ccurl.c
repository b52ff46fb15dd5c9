#include "ccurl.h"
#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>

struct ccurl_transfer {
    CURL *easy;
    struct curl_slist *headers;
    struct curl_slist *resolve;
    char error[CURL_ERROR_SIZE];
    ccurl_address_fn address_fn;
    void *userdata;
    int blocked;
    /* 1 + the redirect count when a request last went out, 0 when none has
     * since the last new connection: whether the last hop got past libcurl's
     * connect phase (DNS, TCP, TLS). CURLINFO_* cannot say it for a redirect
     * hop: CONNECT_TIME adds up over the hops, and an earlier hop's
     * connection leaves its PRIMARY_IP behind. */
    long sent_hop;
};

/* CURLOPT_OPENSOCKETFUNCTION: the address check sees the resolved address
 * of every new connection, never the URL's host text. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    ccurl_transfer *t = clientp;
    (void) purpose;
    t->sent_hop = 0;  /* a new connection: no request has gone out on it */
    if (t->address_fn && !t->address_fn(t->userdata, &address->addr, (int) address->addrlen)) {
        t->blocked = 1;
        return CURL_SOCKET_BAD;
    }
    return socket(address->family, address->socktype, address->protocol);
}

/* CURLOPT_PREREQFUNCTION: libcurl calls it once a connection is made (or
 * reused) and right before the request goes out on it, on every hop. */
static int before_request(void *clientp, char *primary_ip, char *local_ip, int primary_port, int local_port) {
    ccurl_transfer *t = clientp;
    long redirects = 0;
    (void) primary_ip; (void) local_ip; (void) primary_port; (void) local_port;
    curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_COUNT, &redirects);
    t->sent_hop = redirects + 1;
    return CURL_PREREQFUNC_OK;
}

struct ccurl_multi {
    CURLM *multi;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_result = 0;
static void global_init(void) { global_result = (int) curl_global_init(CURL_GLOBAL_DEFAULT); }

int ccurl_global_init(void) {
    pthread_once(&global_once, global_init);
    return global_result;
}

const char *ccurl_version(void) { return curl_version(); }
const char *ccurl_strerror(int code) { return curl_easy_strerror((CURLcode) code); }

ccurl_transfer *ccurl_transfer_create(const ccurl_request_t *r) {
    ccurl_transfer *t = calloc(1, sizeof(ccurl_transfer));
    if (!t) return NULL;
    t->easy = curl_easy_init();
    if (!t->easy) { free(t); return NULL; }
    CURL *e = t->easy;
    const char *protocols = r->allow_http ? "http,https" : "https";
    int ok = 1;
    ok &= curl_easy_setopt(e, CURLOPT_URL, r->url) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_PRIVATE, t) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, protocols) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, protocols) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, r->max_redirects > 0 ? 1L : 0L) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_MAXREDIRS, r->max_redirects) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, r->connect_timeout_ms) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->timeout_ms) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, r->low_speed_limit) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, r->low_speed_time_s) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) r->max_body_bytes) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "") == CURLE_OK;   /* gzip/deflate/br for svg & co */
    ok &= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_2TLS) == CURLE_OK;
    /* Wait for a connection that may multiplex only where HTTP/2 is possible
     * (https, negotiated by ALPN). On plain http it would queue every transfer
     * to a host behind the first one's response: one slow image held the rest. */
    if (strncasecmp(r->url, "https://", 8) == 0)
        ok &= curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK;
    if (r->user_agent) ok &= curl_easy_setopt(e, CURLOPT_USERAGENT, r->user_agent) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, r->write_fn) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_WRITEDATA, r->userdata) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, r->header_fn) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_HEADERDATA, r->userdata) == CURLE_OK;
    t->address_fn = r->address_fn;
    t->userdata = r->userdata;
    ok &= curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, t) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, before_request) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_PREREQDATA, t) == CURLE_OK;
    /* Proxy environment variables (http_proxy & co.) are ignored. */
    ok &= curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK;
    char line[1024];
    if (r->if_none_match) {
        snprintf(line, sizeof line, "If-None-Match: %s", r->if_none_match);
        t->headers = curl_slist_append(t->headers, line);
    }
    if (r->if_modified_since) {
        snprintf(line, sizeof line, "If-Modified-Since: %s", r->if_modified_since);
        t->headers = curl_slist_append(t->headers, line);
    }
    if (r->accept) {
        snprintf(line, sizeof line, "Accept: %s", r->accept);
        t->headers = curl_slist_append(t->headers, line);
    } else {
        t->headers = curl_slist_append(t->headers, "Accept: image/avif,image/webp,image/*;q=0.9,*/*;q=0.5");
    }
    for (const char *p = r->extra_headers; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t) (end - p) : strlen(p);
        if (n > 0 && n < sizeof line && !memchr(p, '\r', n)) {
            memcpy(line, p, n);
            line[n] = '\0';
            t->headers = curl_slist_append(t->headers, line);
        }
        if (!end) break;
        p = end + 1;
    }
    if (r->body) {
        /* Copied (COPYPOSTFIELDS): the caller's buffer lives only for this call.
         * No wait for "100 Continue" before a large body. (Not an "Expect:"
         * line: libcurl 7.88's SigV4 signs a header meant to be removed.) */
        ok &= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) r->body_length) == CURLE_OK;
        ok &= curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, r->body_length > 0 ? (const char *) r->body : "") == CURLE_OK;
        ok &= curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L) == CURLE_OK;
    }
    if (r->method && strcmp(r->method, "HEAD") == 0) {
        ok &= curl_easy_setopt(e, CURLOPT_NOBODY, 1L) == CURLE_OK;
    } else if (r->method && strcmp(r->method, "GET") != 0) {
        ok &= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method) == CURLE_OK;
    }
    if (r->aws_sigv4) {
        ok &= curl_easy_setopt(e, CURLOPT_AWS_SIGV4, r->aws_sigv4) == CURLE_OK;
        ok &= curl_easy_setopt(e, CURLOPT_USERPWD, r->userpwd ? r->userpwd : "") == CURLE_OK;
    }
    ok &= curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers) == CURLE_OK;
    if (r->resolve) {
        t->resolve = curl_slist_append(NULL, r->resolve);
        ok &= t->resolve && curl_easy_setopt(e, CURLOPT_RESOLVE, t->resolve) == CURLE_OK;
    }
    if (!ok) { ccurl_transfer_destroy(t); return NULL; }
    return t;
}

void ccurl_transfer_destroy(ccurl_transfer *t) {
    if (!t) return;
    curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->headers);
    curl_slist_free_all(t->resolve);
    free(t);
}

void ccurl_transfer_info(ccurl_transfer *t, ccurl_info_t *out) {
    memset(out, 0, sizeof(*out));
    long version = 0;
    char *url = NULL;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &out->status);
    curl_easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &version);
    curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_COUNT, &out->redirect_count);
    curl_easy_getinfo(t->easy, CURLINFO_OS_ERRNO, &out->os_errno);
    curl_easy_getinfo(t->easy, CURLINFO_TOTAL_TIME, &out->total_seconds);
    curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &url);
    out->blocked_address = t->blocked;
    out->request_sent = t->sent_hop == out->redirect_count + 1;
    switch (version) {
        case CURL_HTTP_VERSION_1_0: case CURL_HTTP_VERSION_1_1: out->http_version = 1; break;
        case CURL_HTTP_VERSION_2_0: out->http_version = 2; break;
        case CURL_HTTP_VERSION_3: out->http_version = 3; break;
        default: out->http_version = 0;
    }
    out->effective_url = url;
    out->error = t->error;
}

_Static_assert(CCURL_URLE_UNSUPPORTED_SCHEME == CURLUE_UNSUPPORTED_SCHEME, "the header's copy of the code");

int ccurl_redirect_target(const char *base, const char *location, char **url, char **host) {
    /* How libcurl parses a transfer's URL (lib/url.c) and how it applies a
     * Location (lib/transfer.c, Curl_follow, type FOLLOW_REDIR). */
    const unsigned int as_transfer_url = CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME;
    const unsigned int as_location = CURLU_URLENCODE | CURLU_ALLOW_SPACE;
    CURLU *current = curl_url(), *next = curl_url();
    CURLUcode rc = current && next ? CURLUE_OK : CURLUE_OUT_OF_MEMORY;
    *url = NULL;
    *host = NULL;
    if (!rc) rc = curl_url_set(current, CURLUPART_URL, base, as_transfer_url);
    if (!rc) rc = curl_url_set(current, CURLUPART_URL, location, as_location);
    if (!rc) rc = curl_url_get(current, CURLUPART_URL, url, 0);
    if (!rc) rc = curl_url_set(next, CURLUPART_URL, *url, as_transfer_url);
    if (!rc) rc = curl_url_get(next, CURLUPART_HOST, host, 0);
    if (rc) {
        curl_free(*url);
        curl_free(*host);
        *url = NULL;
        *host = NULL;
    }
    curl_url_cleanup(current);
    curl_url_cleanup(next);
    return (int) rc;
}

const char *ccurl_url_strerror(int code) { return curl_url_strerror((CURLUcode) code); }
void ccurl_free(void *pointer) { curl_free(pointer); }

ccurl_multi *ccurl_multi_create(long max_total, long max_host) {
    ccurl_multi *m = calloc(1, sizeof(ccurl_multi));
    if (!m) return NULL;
    m->multi = curl_multi_init();
    if (!m->multi) { free(m); return NULL; }
    curl_multi_setopt(m->multi, CURLMOPT_PIPELINING, (long) CURLPIPE_MULTIPLEX);
    curl_multi_setopt(m->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max_total);
    curl_multi_setopt(m->multi, CURLMOPT_MAX_HOST_CONNECTIONS, max_host);
    curl_multi_setopt(m->multi, CURLMOPT_MAXCONNECTS, max_total);
    return m;
}

void ccurl_multi_destroy(ccurl_multi *m) {
    if (!m) return;
    curl_multi_cleanup(m->multi);
    free(m);
}

int ccurl_multi_add(ccurl_multi *m, ccurl_transfer *t) { return (int) curl_multi_add_handle(m->multi, t->easy); }
int ccurl_multi_remove(ccurl_multi *m, ccurl_transfer *t) { return (int) curl_multi_remove_handle(m->multi, t->easy); }
int ccurl_multi_perform(ccurl_multi *m, int *running) { return (int) curl_multi_perform(m->multi, running); }
int ccurl_multi_poll(ccurl_multi *m, int timeout_ms) { return (int) curl_multi_poll(m->multi, NULL, 0, timeout_ms, NULL); }
int ccurl_multi_wakeup(ccurl_multi *m) { return (int) curl_multi_wakeup(m->multi); }

int ccurl_multi_next_done(ccurl_multi *m, ccurl_transfer **transfer, int *result) {
    int queued = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(m->multi, &queued))) {
        if (message->msg != CURLMSG_DONE) continue;
        ccurl_transfer *t = NULL;
        curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **) &t);
        *transfer = t;
        *result = (int) message->data.result;
        return 1;
    }
    return 0;
}
