/* enctime: CPU time of the JPEG and WebP encoders as the service calls them
 * directly (no libvips around them), for Benchmarks/quality/calibrate.
 *
 *   JPEG: TurboJPEG tjCompress2, RGB, baseline, 4:2:0 below quality 90 and
 *         4:4:4 from 90 (TurboJPEG.swift's TurboJPEGEncoder)
 *   WebP: libwebp's advanced API, default preset at `quality`, method `effort`
 *         (what WebPEncodeRGB does at method 4, with the method free)
 *
 *   gcc -O2 -o enctime enctime.c -lturbojpeg -lwebp
 *   ./enctime jpeg|webp QUALITY EFFORT SIDE PASSES FILE.rgb...
 *
 * Each FILE.rgb is SIDE x SIDE interleaved 8-bit RGB. A pass encodes every
 * file once; the pass with the least CPU time (CLOCK_PROCESS_CPUTIME_ID)
 * counts. Prints "<ms per image> <mean bytes>"; errors to stderr, exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>
#include <webp/encode.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t encode_jpeg(tjhandle tj, const unsigned char *rgb, int side, int quality) {
    unsigned char *out = NULL;
    unsigned long length = 0;
    int subsampling = quality < 90 ? TJSAMP_420 : TJSAMP_444;
    if (tjCompress2(tj, rgb, side, side * 3, side, TJPF_RGB, &out, &length, subsampling, quality, 0)) {
        fprintf(stderr, "tjCompress2: %s\n", tjGetErrorStr2(tj));
        exit(1);
    }
    tjFree(out);
    return length;
}

static size_t encode_webp(const unsigned char *rgb, int side, int quality, int method) {
    WebPConfig config;
    WebPPicture picture;
    WebPMemoryWriter writer;
    if (!WebPConfigPreset(&config, WEBP_PRESET_DEFAULT, (float) quality) || !WebPPictureInit(&picture)) exit(1);
    config.method = method;
    picture.width = side;
    picture.height = side;
    WebPMemoryWriterInit(&writer);
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = &writer;
    if (!WebPPictureImportRGB(&picture, rgb, side * 3) || !WebPEncode(&config, &picture)) {
        fprintf(stderr, "WebPEncode failed: %d\n", picture.error_code);
        exit(1);
    }
    size_t length = writer.size;
    WebPPictureFree(&picture);
    WebPMemoryWriterClear(&writer);
    return length;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: enctime jpeg|webp QUALITY EFFORT SIDE PASSES FILE.rgb...\n");
        return 1;
    }
    int jpeg = strcmp(argv[1], "jpeg") == 0;
    int quality = atoi(argv[2]), effort = atoi(argv[3]), side = atoi(argv[4]), passes = atoi(argv[5]);
    int files = argc - 6;
    size_t frame = (size_t) side * side * 3;
    unsigned char **rgb = calloc(files, sizeof *rgb);
    for (int i = 0; i < files; i++) {
        FILE *f = fopen(argv[6 + i], "rb");
        rgb[i] = malloc(frame);
        if (!f || fread(rgb[i], 1, frame, f) != frame) {
            fprintf(stderr, "cannot read %d bytes from %s\n", (int) frame, argv[6 + i]);
            return 1;
        }
        fclose(f);
    }
    tjhandle tj = tjInitCompress();
    double best = 1e30;
    size_t total = 0;
    for (int p = 0; p < passes; p++) {
        total = 0;
        double start = cpu_now();
        for (int i = 0; i < files; i++)
            total += jpeg ? encode_jpeg(tj, rgb[i], side, quality) : encode_webp(rgb[i], side, quality, effort);
        double took = cpu_now() - start;
        if (took < best) best = took;
    }
    printf("%.4f %.1f\n", best / files * 1000, (double) total / files);
    tjDestroy(tj);
    return 0;
}
