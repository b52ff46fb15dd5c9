#include "cvips.h"
#include <vips/vips.h>
#include <vips/vector.h>
#include <string.h>
#include <stdlib.h>
#include <pthread.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_result = 0;
static const char *init_argv0 = "artcache";
static int init_allow_svg = 0;
static int init_allow_magick = 0;

/* libvips warnings (corrupt tiles, ignored profiles) would go to stderr from
 * library code; the typed errors say what matters. */
static void quiet_log(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void) domain; (void) level; (void) message; (void) data;
}

static void init_once_body(void) {
    if (VIPS_INIT(init_argv0)) {
        init_result = -1;
        return;
    }
    /* liborc 0.4.33 (Debian 12) crashes with two threads in libvips at once. */
    vips_vector_set_enabled(FALSE);
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, quiet_log, NULL);
    vips_cache_set_max(0);
    vips_concurrency_set(1);
    vips_block_untrusted_set(TRUE);
    /* Only the loaders we support: everything else stays blocked. */
    vips_operation_block_set("VipsForeignLoad", TRUE);
    static const char *allowed[] = {
        "VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadNsgif",
        "VipsForeignLoadWebp", "VipsForeignLoadTiff", "VipsForeignLoadHeif",
    };
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) vips_operation_block_set(allowed[i], FALSE);
    if (init_allow_svg) vips_operation_block_set("VipsForeignLoadSvg", FALSE);
    if (init_allow_magick) vips_operation_block_set("VipsForeignLoadMagick", FALSE);
}

int cvips_init_with(const char *argv0, int allow_svg, int allow_magick) {
    if (argv0) init_argv0 = argv0;
    init_allow_svg = allow_svg;
    init_allow_magick = allow_magick;
    pthread_once(&init_once, init_once_body);
    return init_result;
}

int cvips_init(const char *argv0) { return cvips_init_with(argv0, 0, 0); }

const char *cvips_version(void) { return vips_version_string(); }

char *cvips_error_take(void) {
    const char *message = vips_error_buffer();
    char *copy = strdup(message ? message : "");
    vips_error_clear();
    return copy;
}

void cvips_free(void *pointer) { g_free(pointer); }

int cvips_test_image(int width, int height, int bands, const char *suffix, void **out, size_t *out_length) {
    VipsImage *base = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(base), 8);
    int status = -1;
    *out = NULL;
    *out_length = 0;
    if (vips_xyz(&t[0], width, height, NULL)) goto done;
    if (vips_extract_band(t[0], &t[1], 0, NULL)) goto done;            /* x */
    if (vips_extract_band(t[0], &t[2], 1, NULL)) goto done;            /* y */
    if (vips_cast_uchar(t[1], &t[3], NULL)) goto done;
    if (vips_cast_uchar(t[2], &t[4], NULL)) goto done;
    {
        VipsImage *parts[4] = { t[3], t[4], t[3], t[4] };
        if (vips_bandjoin(parts, &t[5], bands >= 4 ? 4 : 3, NULL)) goto done;
    }
    if (vips_copy(t[5], &t[6], "interpretation", VIPS_INTERPRETATION_sRGB, NULL)) goto done;
    /* Test fixtures only: the JPEG XL and ImageMagick savers are "untrusted"
     * and blocked by cvips_init. Unblocking savers never lets a hostile input
     * be parsed (their loaders stay blocked). */
    vips_operation_block_set("VipsForeignSaveJxl", FALSE);
    vips_operation_block_set("VipsForeignSaveMagick", FALSE);
    if (strncmp(suffix, "magick:", 7) == 0) {
        status = vips_magicksave_buffer(t[6], out, out_length, "format", suffix + 7, NULL);
    } else {
        status = vips_image_write_to_buffer(t[6], suffix, out, out_length, NULL);
    }
done:
    g_object_unref(base);
    return status;
}


int cvips_interpretation_srgb(void) { return (int) VIPS_INTERPRETATION_sRGB; }
