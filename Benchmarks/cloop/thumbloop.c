/* thumbloop: the "plain C libvips loop" baseline for Benchmarks/compare/run.
 *
 *   thumbloop --workers N --repeats R --sizes 100x100[,300x300,...] [--quality 80] FILE...
 *
 * Reads every FILE into memory, then N pthreads share the (files x repeats)
 * work. For each image and for EACH size it calls vips_thumbnail_buffer()
 * (size=down) and vips_jpegsave_buffer() (Q, strip) -- i.e. one separate
 * thumbnail_buffer call per size -- and frees everything.
 * libvips is set up as artcache does: vector off, operation cache 0,
 * concurrency 1.
 *
 * Prints one line: "<n> images in <secs> s: <rate> img/s" where n = files x
 * repeats (images, not renders). Errors go to stderr with exit status 1.
 *
 * gcc -O2 -o thumbloop thumbloop.c $(pkg-config --cflags --libs vips) -lpthread
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vips/vips.h>
#include <vips/vector.h> /* vips_vector_set_enabled */

typedef struct { int w, h; } Size;
typedef struct { void *data; size_t len; const char *path; } Blob;

static Blob *blobs;
static int nblobs;
static Size *sizes;
static int nsizes;
static int quality = 80;
static long total;          /* nblobs * repeats */
static long next_item;      /* shared work counter */
static int failed;
static char *first_error;
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

static void usage(void) {
    fprintf(stderr, "usage: thumbloop --workers N --repeats R --sizes WxH[,WxH...] [--quality Q] FILE...\n");
    exit(1);
}

static void die(const char *fmt, const char *arg) {
    fprintf(stderr, "thumbloop: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(1);
}

static long parse_pos(const char *s, const char *what) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0) die("bad %s", what);
    return v;
}

static void parse_sizes(const char *arg) {
    char *copy = strdup(arg), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int w, h; char extra;
        if (sscanf(tok, "%dx%d%c", &w, &h, &extra) == 2) { /* WxH */ }
        else if (sscanf(tok, "%d%c", &w, &extra) == 1) h = w;
        else die("bad size '%s' (want WxH)", tok);
        if (w <= 0 || h <= 0) die("bad size '%s'", tok);
        sizes = realloc(sizes, sizeof(Size) * (nsizes + 1));
        sizes[nsizes++] = (Size){ w, h };
    }
    free(copy);
    if (nsizes == 0) die("no sizes in '%s'", arg);
}

static void read_file(const char *path, Blob *b) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open %s", path);
    if (fseek(f, 0, SEEK_END) != 0) die("cannot seek %s", path);
    long n = ftell(f);
    if (n <= 0) die("empty or unreadable file %s", path);
    rewind(f);
    b->data = malloc((size_t)n);
    if (!b->data || fread(b->data, 1, (size_t)n, f) != (size_t)n) die("cannot read %s", path);
    fclose(f);
    b->len = (size_t)n;
    b->path = path;
}

static void record_error(const char *path) {
    char *msg = vips_error_buffer_copy();   /* also clears the buffer */
    if (msg) g_strchomp(msg);
    pthread_mutex_lock(&err_lock);
    if (!failed) {
        failed = 1;
        first_error = g_strdup_printf("%s: %s", path, msg && *msg ? msg : "unknown libvips error");
    }
    pthread_mutex_unlock(&err_lock);
    g_free(msg);
}

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        long i = __atomic_fetch_add(&next_item, 1, __ATOMIC_RELAXED);
        if (i >= total || __atomic_load_n(&failed, __ATOMIC_RELAXED)) break;
        Blob *b = &blobs[i % nblobs];
        for (int s = 0; s < nsizes; s++) {
            VipsImage *out = NULL;
            void *jpg = NULL;
            size_t jlen = 0;
            if (vips_thumbnail_buffer(b->data, b->len, &out, sizes[s].w,
                                      "height", sizes[s].h, "size", VIPS_SIZE_DOWN, NULL)) {
                record_error(b->path);
                break;
            }
            if (vips_jpegsave_buffer(out, &jpg, &jlen, "Q", quality, "strip", TRUE, NULL)) {
                g_object_unref(out);
                record_error(b->path);
                break;
            }
            g_free(jpg);
            g_object_unref(out);
        }
    }
    vips_thread_shutdown();
    return NULL;
}

int main(int argc, char **argv) {
    int workers = 1;
    long repeats = 1;
    const char *size_arg = NULL;
    int argi = 1;
    for (; argi < argc; argi++) {
        const char *a = argv[argi];
        if (strcmp(a, "--") == 0) { argi++; break; }
        if (strncmp(a, "--", 2) != 0) break;
        if (argi + 1 >= argc) usage();
        const char *v = argv[++argi];
        if (strcmp(a, "--workers") == 0) workers = (int)parse_pos(v, "--workers");
        else if (strcmp(a, "--repeats") == 0) repeats = parse_pos(v, "--repeats");
        else if (strcmp(a, "--sizes") == 0) size_arg = v;
        else if (strcmp(a, "--quality") == 0) {
            quality = (int)parse_pos(v, "--quality");
            if (quality > 100) die("bad %s", "--quality");
        } else die("unknown option %s", a);
    }
    if (!size_arg || argi >= argc) usage();
    parse_sizes(size_arg);

    nblobs = argc - argi;
    blobs = calloc((size_t)nblobs, sizeof(Blob));
    for (int i = 0; i < nblobs; i++) read_file(argv[argi + i], &blobs[i]);
    total = (long)nblobs * repeats;

    if (VIPS_INIT(argv[0])) {
        fprintf(stderr, "thumbloop: VIPS_INIT failed: %s\n", vips_error_buffer());
        return 1;
    }
    vips_vector_set_enabled(FALSE);
    vips_cache_set_max(0);
    vips_concurrency_set(1);

    pthread_t *tids = calloc((size_t)workers, sizeof(pthread_t));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int started = 0;
    for (; started < workers; started++) {
        int rc = pthread_create(&tids[started], NULL, worker, NULL);
        if (rc) {
            fprintf(stderr, "thumbloop: pthread_create: %s\n", strerror(rc));
            __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    for (int t = 0; t < started; t++) pthread_join(tids[t], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    if (failed) {
        fprintf(stderr, "thumbloop: %s\n", first_error ? first_error : "failed");
        return 1;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%ld images in %.3f s: %.1f img/s\n", total, secs, secs > 0 ? (double)total / secs : 0.0);

    for (int i = 0; i < nblobs; i++) free(blobs[i].data);
    free(blobs); free(sizes); free(tids);
    vips_shutdown();
    return 0;
}
