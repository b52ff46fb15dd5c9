/* enctime: CPU time of the JPEG, WebP, AVIF and JPEG XL encoders as the
 * service calls them directly (no libvips around them), for
 * Benchmarks/quality/calibrate.
 *
 *   JPEG: TurboJPEG tjCompress2, RGB, 4:2:0 below quality 90 and 4:4:4 from
 *         90 (TurboJPEG.swift's TurboJPEGEncoder); EFFORT 0 baseline, 1
 *         progressive (TJFLAG_PROGRESSIVE, `[thumbnails] progressive_from`)
 *   WebP: libwebp's advanced API, default preset at `quality`, method `effort`
 *         (what WebPEncodeRGB does at method 4, with the method free)
 *   AVIF: libheif + libaom as AVIFEncoder.swift calls them: aom speed
 *         `effort`, one thread, 4:2:0 planes from cpix_rgb_to_ycbcr420 (the
 *         service's own conversion, compiled in) below quality 90 and RGB
 *         (libheif converts, 4:4:4) from 90, trellis quantisation off at
 *         speed 9; no metadata
 *   JPEG XL (issue 52): libjxl 0.7's encoder as libvips 8.14's jxlsave calls
 *         it, minus its thread pool: 8-bit sRGB, lossy in XYB
 *         (uses_original_profile false), decoding-speed tier 0, effort
 *         `effort` (1-9; libvips allows 3-9), distance from `quality` by
 *         jxlsave's (cjxl's) formula (jxl_distance below), a bare codestream
 *         (no container, no metadata boxes); no parallel runner: one thread
 *
 *   gcc -O2 -o enctime enctime.c ../../Sources/CPixels/cpixels.c \
 *       -I../../Sources/CPixels/include -lturbojpeg -lwebp -lheif -ljxl
 *   ./enctime jpeg|webp|avif|jxl QUALITY EFFORT SIDE PASSES FILE.rgb...
 *   ./enctime avif-files|webp-files|jxl-files QUALITY EFFORT SIDE OUTDIR FILE.rgb...
 *
 * avif-files / webp-files / jxl-files encode each FILE once into
 * OUTDIR/<index>.avif (.webp, .jxl) (for the quality measurements) and
 * print each file's bytes, one per line.
 *
 * Levers (levers.py), from the environment, default off (the service's
 * settings): ENCTIME_AOM="name=value,..." extra libaom options (libheif
 * "aom:name"), ENCTIME_TUNE=ssim|psnr, ENCTIME_CHROMA=444 (4:4:4 at every
 * quality), ENCTIME_TRELLIS=1 (keep trellis quantisation at speed 9);
 * ENCTIME_WEBP="sharp_yuv,autofilter,sns=N,filter=N,segments=N,pass=N".
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
#include <libheif/heif.h>
#include <jxl/encode.h>
#include <math.h>
#include "cpixels.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t encode_jpeg(tjhandle tj, const unsigned char *rgb, int side, int quality, int progressive) {
    unsigned char *out = NULL;
    unsigned long length = 0;
    int subsampling = quality < 90 ? TJSAMP_420 : TJSAMP_444;
    if (tjCompress2(tj, rgb, side, side * 3, side, TJPF_RGB, &out, &length, subsampling, quality,
                    progressive ? TJFLAG_PROGRESSIVE : 0)) {
        fprintf(stderr, "tjCompress2: %s\n", tjGetErrorStr2(tj));
        exit(1);
    }
    tjFree(out);
    return length;
}

static size_t encode_webp(const unsigned char *rgb, int side, int quality, int method, FILE *out) {
    WebPConfig config;
    WebPPicture picture;
    WebPMemoryWriter writer;
    if (!WebPConfigPreset(&config, WEBP_PRESET_DEFAULT, (float) quality) || !WebPPictureInit(&picture)) exit(1);
    config.method = method;
    const char *levers = getenv("ENCTIME_WEBP");
    if (levers && *levers) {
        char copy[256], *rest = copy, *item;
        snprintf(copy, sizeof copy, "%s", levers);
        while ((item = strsep(&rest, ",")) != NULL) {
            char *value = strchr(item, '=');
            int n = value ? atoi(value + 1) : 1;
            if (strncmp(item, "sharp_yuv", 9) == 0) config.use_sharp_yuv = n;
            else if (strncmp(item, "autofilter", 10) == 0) config.autofilter = n;
            else if (strncmp(item, "sns", 3) == 0) config.sns_strength = n;
            else if (strncmp(item, "filter", 6) == 0) config.filter_strength = n;
            else if (strncmp(item, "sharpness", 9) == 0) config.filter_sharpness = n;
            else if (strncmp(item, "segments", 8) == 0) config.segments = n;
            else if (strncmp(item, "pass", 4) == 0) config.pass = n;
            else if (*item) { fprintf(stderr, "unknown ENCTIME_WEBP %s\n", item); exit(1); }
        }
    }
    picture.width = side;
    picture.height = side;
    /* libwebp applies sharp YUV only when it converts ARGB itself (WebPEncode). */
    picture.use_argb = config.use_sharp_yuv ? 1 : 0;
    WebPMemoryWriterInit(&writer);
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = &writer;
    if (!WebPPictureImportRGB(&picture, rgb, side * 3) || !WebPEncode(&config, &picture)) {
        fprintf(stderr, "WebPEncode failed: %d\n", picture.error_code);
        exit(1);
    }
    size_t length = writer.size;
    if (out && fwrite(writer.mem, 1, writer.size, out) != writer.size) exit(1);
    WebPPictureFree(&picture);
    WebPMemoryWriterClear(&writer);
    return length;
}

static void heif_ok(struct heif_error error, const char *step) {
    if (error.code != heif_error_Ok) {
        fprintf(stderr, "libheif %s: %s\n", step, error.message);
        exit(1);
    }
}

static struct heif_error write_file(struct heif_context *context, const void *data, size_t size, void *userdata) {
    (void) context;
    FILE *out = userdata;
    struct heif_error result = {heif_error_Ok, heif_suberror_Unspecified, "Success"};
    if (out && fwrite(data, 1, size, out) != size) result.code = heif_error_Encoding_error;
    return result;
}

static struct heif_error count_bytes(struct heif_context *context, const void *data, size_t size, void *userdata) {
    (void) context; (void) data;
    *(size_t *) userdata += size;
    struct heif_error result = {heif_error_Ok, heif_suberror_Unspecified, "Success"};
    return result;
}

/* AVIFEncoder.swift's encode for 8-bit RGB without alpha. Writes to `out`
 * when it is not NULL; returns the file's size. */
static size_t encode_avif(const unsigned char *rgb, int side, int quality, int speed, FILE *out) {
    struct heif_image *image = NULL;
    const char *force = getenv("ENCTIME_CHROMA");
    int chroma420 = quality < 90 && !(force && strcmp(force, "444") == 0);
    if (chroma420) {
        int half = (side + 1) / 2, ys, cbs, crs;
        heif_ok(heif_image_create(side, side, heif_colorspace_YCbCr, heif_chroma_420, &image), "create");
        heif_ok(heif_image_add_plane(image, heif_channel_Y, side, side, 8), "plane Y");
        heif_ok(heif_image_add_plane(image, heif_channel_Cb, half, half, 8), "plane Cb");
        heif_ok(heif_image_add_plane(image, heif_channel_Cr, half, half, 8), "plane Cr");
        struct heif_color_profile_nclx *nclx = heif_nclx_color_profile_alloc();
        nclx->color_primaries = heif_color_primaries_unspecified;
        nclx->transfer_characteristics = heif_transfer_characteristic_unspecified;
        nclx->matrix_coefficients = heif_matrix_coefficients_ITU_R_BT_601_6;
        nclx->full_range_flag = 1;
        heif_ok(heif_image_set_nclx_color_profile(image, nclx), "nclx");
        heif_nclx_color_profile_free(nclx);
        uint8_t *y = heif_image_get_plane(image, heif_channel_Y, &ys);
        uint8_t *cb = heif_image_get_plane(image, heif_channel_Cb, &cbs);
        uint8_t *cr = heif_image_get_plane(image, heif_channel_Cr, &crs);
        cpix_rgb_to_ycbcr420(rgb, side, side, y, ys, cb, cbs, cr, crs);
    } else {
        int stride;
        heif_ok(heif_image_create(side, side, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &image), "create");
        heif_ok(heif_image_add_plane(image, heif_channel_interleaved, side, side, 8), "plane");
        uint8_t *plane = heif_image_get_plane(image, heif_channel_interleaved, &stride);
        for (int row = 0; row < side; row++) memcpy(plane + (size_t) row * stride, rgb + (size_t) row * side * 3, (size_t) side * 3);
    }
    struct heif_context *context = heif_context_alloc();
    struct heif_encoder *encoder = NULL;
    heif_ok(heif_context_get_encoder_for_format(context, heif_compression_AV1, &encoder), "encoder");
    heif_ok(heif_encoder_set_lossy_quality(encoder, quality), "quality");
    heif_ok(heif_encoder_set_lossless(encoder, 0), "lossless");
    heif_ok(heif_encoder_set_parameter_integer(encoder, "speed", speed), "speed");
    heif_ok(heif_encoder_set_parameter_string(encoder, "chroma", chroma420 ? "420" : "444"), "chroma");
    heif_ok(heif_encoder_set_parameter_integer(encoder, "threads", 1), "threads");
    const char *trellis = getenv("ENCTIME_TRELLIS");
    if (speed >= 9 && !(trellis && *trellis == '1'))
        heif_ok(heif_encoder_set_parameter_string(encoder, "aom:disable-trellis-quant", "1"), "trellis");
    const char *tune = getenv("ENCTIME_TUNE");
    if (tune && *tune) heif_ok(heif_encoder_set_parameter_string(encoder, "tune", tune), "tune");
    const char *levers = getenv("ENCTIME_AOM");
    if (levers && *levers) {
        char copy[512], *rest = copy, *item;
        snprintf(copy, sizeof copy, "%s", levers);
        while ((item = strsep(&rest, ",")) != NULL) {
            char *value = strchr(item, '='), name[128];
            if (!value) continue;
            *value++ = 0;
            snprintf(name, sizeof name, "aom:%s", item);
            heif_ok(heif_encoder_set_parameter_string(encoder, name, value), name);
        }
    }
    heif_ok(heif_context_encode_image(context, image, encoder, NULL, NULL), "encode");
    size_t size = 0;
    struct heif_writer writer = {1, out ? write_file : count_bytes};
    heif_ok(heif_context_write(context, &writer, out ? (void *) out : (void *) &size), "write");
    if (out) size = (size_t) ftell(out);
    heif_encoder_release(encoder);
    heif_context_free(context);
    heif_image_release(image);
    return size;
}

/* libvips 8.14 jxlsave's Q -> butteraugli distance (the formula of cjxl
 * 0.7): 0.1 at Q100, +0.09 per step down to Q30 (6.4), then steeper. */
static float jxl_distance(int quality) {
    return quality >= 30 ? 0.1f + (100 - quality) * 0.09f : 6.4f + powf(2.5f, (30 - quality) / 5.0f) / 6.25f;
}

static void jxl_ok(JxlEncoderStatus status, const char *step) {
    if (status != JXL_ENC_SUCCESS) {
        fprintf(stderr, "libjxl %s failed\n", step);
        exit(1);
    }
}

/* libvips 8.14 jxlsave's calls for an 8-bit sRGB image without alpha or ICC
 * profile, without JxlEncoderSetParallelRunner (one thread). Writes to
 * `out` when it is not NULL; returns the codestream's size. */
static size_t encode_jxl(const unsigned char *rgb, int side, int quality, int effort, FILE *out) {
    JxlEncoder *encoder = JxlEncoderCreate(NULL);
    JxlBasicInfo info;
    JxlEncoderInitBasicInfo(&info);
    info.xsize = side;
    info.ysize = side;
    info.bits_per_sample = 8;
    info.num_color_channels = 3;
    info.uses_original_profile = JXL_FALSE;   /* lossy: XYB, not RGB */
    jxl_ok(JxlEncoderSetBasicInfo(encoder, &info), "SetBasicInfo");
    JxlColorEncoding colour;
    JxlColorEncodingSetToSRGB(&colour, JXL_FALSE);
    jxl_ok(JxlEncoderSetColorEncoding(encoder, &colour), "SetColorEncoding");
    JxlEncoderFrameSettings *settings = JxlEncoderFrameSettingsCreate(encoder, NULL);
    jxl_ok(JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_DECODING_SPEED, 0), "tier");
    jxl_ok(JxlEncoderSetFrameDistance(settings, jxl_distance(quality)), "distance");
    jxl_ok(JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT, effort), "effort");
    jxl_ok(JxlEncoderSetFrameLossless(settings, JXL_FALSE), "lossless");
    JxlPixelFormat format = {3, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    jxl_ok(JxlEncoderAddImageFrame(settings, &format, rgb, (size_t) side * side * 3), "AddImageFrame");
    JxlEncoderCloseInput(encoder);
    size_t capacity = 4096, used = 0;
    uint8_t *buffer = malloc(capacity);
    JxlEncoderStatus status;
    do {
        uint8_t *next = buffer + used;
        size_t avail = capacity - used;
        status = JxlEncoderProcessOutput(encoder, &next, &avail);
        used = (size_t) (next - buffer);
        if (status == JXL_ENC_NEED_MORE_OUTPUT) {
            capacity *= 2;
            buffer = realloc(buffer, capacity);
        } else jxl_ok(status, "ProcessOutput");
    } while (status != JXL_ENC_SUCCESS);
    if (out && fwrite(buffer, 1, used, out) != used) exit(1);
    free(buffer);
    JxlEncoderDestroy(encoder);
    return used;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: enctime jpeg|webp|avif|jxl QUALITY EFFORT SIDE PASSES FILE.rgb...\n"
                        "       enctime avif-files|webp-files|jxl-files QUALITY EFFORT SIDE OUTDIR FILE.rgb...\n");
        return 1;
    }
    const char *codec = argv[1];
    int webp_files = strcmp(codec, "webp-files") == 0, jxl_files = strcmp(codec, "jxl-files") == 0;
    int files_mode = strcmp(codec, "avif-files") == 0 || webp_files || jxl_files;
    int quality = atoi(argv[2]), effort = atoi(argv[3]), side = atoi(argv[4]);
    int passes = files_mode ? 0 : atoi(argv[5]);
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
    if (strncmp(codec, "avif", 4) == 0) heif_init(NULL);
    if (files_mode) {
        for (int i = 0; i < files; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%d.%s", argv[5], i, webp_files ? "webp" : jxl_files ? "jxl" : "avif");
            FILE *out = fopen(path, "wb");
            if (!out) {
                fprintf(stderr, "cannot write %s\n", path);
                return 1;
            }
            size_t size = webp_files ? encode_webp(rgb[i], side, quality, effort, out)
                        : jxl_files ? encode_jxl(rgb[i], side, quality, effort, out)
                                    : encode_avif(rgb[i], side, quality, effort, out);
            if (fclose(out) != 0) return 1;
            printf("%zu\n", size);
        }
        return 0;
    }
    tjhandle tj = tjInitCompress();
    double best = 1e30;
    size_t total = 0;
    for (int p = 0; p < passes; p++) {
        total = 0;
        double start = cpu_now();
        for (int i = 0; i < files; i++)
            total += strcmp(codec, "jpeg") == 0 ? encode_jpeg(tj, rgb[i], side, quality, effort)
                   : strcmp(codec, "webp") == 0 ? encode_webp(rgb[i], side, quality, effort, NULL)
                   : strcmp(codec, "jxl") == 0 ? encode_jxl(rgb[i], side, quality, effort, NULL)
                   : encode_avif(rgb[i], side, quality, effort, NULL);
        double took = cpu_now() - start;
        if (took < best) best = took;
    }
    printf("%.4f %.1f\n", best / files * 1000, (double) total / files);
    tjDestroy(tj);
    return 0;
}
