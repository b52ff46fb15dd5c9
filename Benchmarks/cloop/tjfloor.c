/* tjfloor: the libjpeg-turbo speed floor for P1 (a speed reference only,
 * not a product: its box filter aliases). For each JPEG: DCT-scaled decode
 * (TurboJPEG) to the smallest n/8 size that still covers the box, an
 * area-average (box) resize to cover the box, a centre crop, and a JPEG
 * encode at the quality given (4:2:0 below 90), everything freed after.
 * Files are read into memory first; N pthreads share files x repeats.
 *
 *   gcc -O2 -o tjfloor tjfloor.c -lturbojpeg -lpthread
 *   ./tjfloor --workers 1 --repeats 3 --size 100 [--quality 80] *.jpg
 *
 * Prints "<n> images in <secs> s: <rate> img/s"; errors to stderr, exit 1. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

static unsigned char **inputs;
static unsigned long *lengths;
static int files, repeats = 1, side = 100, quality = 80, workers = 1;
static int next_job, failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int one(tjhandle dec, tjhandle enc, const unsigned char *jpeg, unsigned long length) {
    int w, h, subsamp, cs;
    if (tjDecompressHeader3(dec, jpeg, length, &w, &h, &subsamp, &cs)) return -1;
    /* Cover: the shorter side becomes `side`. */
    double scale = (double) side / (w < h ? w : h);
    int n;
    tjscalingfactor *factors = tjGetScalingFactors(&n), best = { 1, 1 };
    for (int i = 0; i < n; i++) {
        tjscalingfactor f = factors[i];
        if (f.num > f.denom) continue;
        if (TJSCALED(w, f) >= (int) (w * scale + 0.999) && TJSCALED(h, f) >= (int) (h * scale + 0.999)
            && f.num * best.denom < best.num * f.denom) best = f;
    }
    int sw = TJSCALED(w, best), sh = TJSCALED(h, best);
    unsigned char *decoded = malloc((size_t) sw * sh * 3);
    if (!decoded || tjDecompress2(dec, jpeg, length, decoded, sw, sw * 3, sh, TJPF_RGB, 0)) { free(decoded); return -1; }
    int tw = (int) (w * scale + 0.5), th = (int) (h * scale + 0.5);
    if (tw > sw) tw = sw;
    if (th > sh) th = sh;
    unsigned char *resized = malloc((size_t) tw * th * 3);
    for (int y = 0; y < th; y++) {
        int y0 = y * sh / th, y1 = (y + 1) * sh / th;
        if (y1 <= y0) y1 = y0 + 1;
        for (int x = 0; x < tw; x++) {
            int x0 = x * sw / tw, x1 = (x + 1) * sw / tw;
            if (x1 <= x0) x1 = x0 + 1;
            unsigned sum[3] = { 0, 0, 0 }, count = (unsigned) ((y1 - y0) * (x1 - x0));
            for (int yy = y0; yy < y1; yy++)
                for (int xx = x0; xx < x1; xx++)
                    for (int c = 0; c < 3; c++) sum[c] += decoded[((size_t) yy * sw + xx) * 3 + c];
            for (int c = 0; c < 3; c++) resized[((size_t) y * tw + x) * 3 + c] = (unsigned char) ((sum[c] + count / 2) / count);
        }
    }
    free(decoded);
    int cw = tw < side ? tw : side, ch = th < side ? th : side;
    const unsigned char *crop = resized + ((size_t) ((th - ch) / 2) * tw + (tw - cw) / 2) * 3;
    unsigned char *out = NULL;
    unsigned long out_length = 0;
    int status = tjCompress2(enc, crop, cw, tw * 3, ch, TJPF_RGB, &out, &out_length,
                             quality < 90 ? TJSAMP_420 : TJSAMP_444, quality, 0);
    free(resized);
    tjFree(out);
    return status;
}

static void *worker(void *unused) {
    (void) unused;
    tjhandle dec = tjInitDecompress(), enc = tjInitCompress();
    for (;;) {
        pthread_mutex_lock(&lock);
        int job = next_job++;
        pthread_mutex_unlock(&lock);
        if (job >= files * repeats) break;
        if (one(dec, enc, inputs[job % files], lengths[job % files])) {
            pthread_mutex_lock(&lock);
            failures++;
            pthread_mutex_unlock(&lock);
        }
    }
    tjDestroy(dec);
    tjDestroy(enc);
    return NULL;
}

int main(int argc, char **argv) {
    int first = 1;
    for (; first + 1 < argc && strncmp(argv[first], "--", 2) == 0; first += 2) {
        if (!strcmp(argv[first], "--workers")) workers = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--repeats")) repeats = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--size")) side = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--quality")) quality = atoi(argv[first + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[first]); return 1; }
    }
    files = argc - first;
    if (files < 1 || workers < 1 || repeats < 1 || side < 1) { fprintf(stderr, "usage: tjfloor [--workers N] [--repeats N] [--size S] [--quality Q] FILE...\n"); return 1; }
    inputs = calloc((size_t) files, sizeof *inputs);
    lengths = calloc((size_t) files, sizeof *lengths);
    for (int i = 0; i < files; i++) {
        FILE *f = fopen(argv[first + i], "rb");
        if (!f) { perror(argv[first + i]); return 1; }
        fseek(f, 0, SEEK_END);
        lengths[i] = (unsigned long) ftell(f);
        fseek(f, 0, SEEK_SET);
        inputs[i] = malloc(lengths[i]);
        if (fread(inputs[i], 1, lengths[i], f) != lengths[i]) { perror(argv[first + i]); return 1; }
        fclose(f);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t threads[256];
    if (workers > 256) workers = 256;
    for (int i = 0; i < workers; i++) pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < workers; i++) pthread_join(threads[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (failures) { fprintf(stderr, "%d images failed\n", failures); return 1; }
    int n = files * repeats;
    printf("%d images in %.3f s: %.1f img/s\n", n, secs, n / secs);
    return 0;
}
