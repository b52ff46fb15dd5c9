#ifndef CCURL_H
#define CCURL_H
/* Non-variadic wrappers over libcurl (curl_easy_setopt & co. are variadic).
 * Swift sees only plain C types and opaque pointers. */
#include <stddef.h>

typedef size_t (*ccurl_data_fn)(char *data, size_t size, size_t count, void *userdata);
/* Asked before every new connection (each redirect hop included) with the
 * address libcurl is about to connect to (a sockaddr_in / sockaddr_in6):
 * nonzero allows it; 0 refuses it and the transfer fails with
 * CURLE_COULDNT_CONNECT and `blocked_address` set in its info. */
typedef int (*ccurl_address_fn)(void *userdata, const void *sockaddr, int length);

typedef struct {
    const char *url;
    const char *user_agent;
    const char *if_none_match;       /* NULL: not sent */
    const char *if_modified_since;   /* NULL: not sent */
    long connect_timeout_ms;
    long timeout_ms;
    long low_speed_limit;            /* bytes per second */
    long low_speed_time_s;
    long max_redirects;
    int allow_http;                  /* 0: https only, also for redirects */
    long long max_body_bytes;        /* also enforced while streaming by write_fn */
    ccurl_data_fn write_fn;
    ccurl_data_fn header_fn;
    ccurl_address_fn address_fn;     /* NULL: every address allowed */
    void *userdata;
    const char *accept;              /* NULL: the image Accept every origin gets */
    const char *extra_headers;       /* NULL, or "Name: value" lines, each ended by '\n'
                                      * (a line holding a CR, or longer than 1 KiB, is left out) */
    const char *method;              /* NULL: GET; "HEAD" sends no body back; "PUT", "DELETE"... */
    const void *body;                /* NULL: no request body; else body_length bytes, copied */
    long long body_length;
    const char *aws_sigv4;           /* NULL, or CURLOPT_AWS_SIGV4's "aws:amz:REGION:SERVICE": libcurl signs */
    const char *userpwd;             /* with aws_sigv4: "ACCESS_KEY:SECRET_KEY" */
    const char *resolve;             /* NULL, or one CURLOPT_RESOLVE entry "HOST:PORT:ADDR[,ADDR...]": the
                                      * addresses tried, in turn, in place of the resolver's */
} ccurl_request_t;

typedef struct ccurl_transfer ccurl_transfer;   /* an easy handle with its header list */
typedef struct ccurl_multi ccurl_multi;

typedef struct {
    long status;
    long http_version;        /* 1, 2, 3 (0 unknown) */
    long redirect_count;
    long os_errno;
    double total_seconds;
    const char *effective_url; /* valid until the transfer is destroyed */
    const char *error;         /* curl's detailed message for the last error */
    int blocked_address;       /* a connection was refused by address_fn */
    int request_sent;          /* the last hop's request went out: its connection was made
                                * (a timeout without it is one of libcurl's connect phase) */
} ccurl_info_t;

/* curl_global_init, once per process (thread-safe). */
int ccurl_global_init(void);
const char *ccurl_version(void);
const char *ccurl_strerror(int code);

ccurl_transfer *ccurl_transfer_create(const ccurl_request_t *request);
void ccurl_transfer_destroy(ccurl_transfer *transfer);
void ccurl_transfer_info(ccurl_transfer *transfer, ccurl_info_t *out);

/* Where a redirect goes, read the way libcurl reads it when it follows one
 * (lib/transfer.c, Curl_follow): `location` set on a URL handle holding
 * `base` (the URL of the response that carried it, parsed as libcurl parses
 * a transfer's URL) with CURLU_URLENCODE | CURLU_ALLOW_SPACE; the URL read
 * back; then that URL parsed again, as the next hop's connection does, and
 * its host read (CURLUPART_HOST: IPv4 normalized, IPv6 in brackets).
 * Returns 0 with *url and *host set (free both with ccurl_free), else the
 * CURLUcode and both NULL. */
int ccurl_redirect_target(const char *base, const char *location, char **url, char **host);
#define CCURL_URLE_UNSUPPORTED_SCHEME 5  /* CURLUE_UNSUPPORTED_SCHEME: a scheme libcurl does not know */
const char *ccurl_url_strerror(int code);
void ccurl_free(void *pointer);

ccurl_multi *ccurl_multi_create(long max_total_connections, long max_host_connections);
void ccurl_multi_destroy(ccurl_multi *multi);
int ccurl_multi_add(ccurl_multi *multi, ccurl_transfer *transfer);
int ccurl_multi_remove(ccurl_multi *multi, ccurl_transfer *transfer);
int ccurl_multi_perform(ccurl_multi *multi, int *running);
int ccurl_multi_poll(ccurl_multi *multi, int timeout_ms);
/* Thread-safe: makes a ccurl_multi_poll in progress return. */
int ccurl_multi_wakeup(ccurl_multi *multi);
/* The next finished transfer: returns 1 and fills the outputs, 0 when none. */
int ccurl_multi_next_done(ccurl_multi *multi, ccurl_transfer **transfer, int *result);

#endif
