#include "cvips_fixtures.h"
#include "cvips.h"
#include <vips/vips.h>
#include <string.h>

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

/* Test fixtures. A uchar gradient along x (band 0) or y (band 1), repeated
 * into `bands` bands (3: tagged sRGB); a fresh image owned by `parent`, so
 * callers may set metadata on it. */
static VipsImage *gradient(VipsImage *parent, int width, int height, int band, int bands) {
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 5);
    if (vips_xyz(&t[0], width, height, NULL)) return NULL;
    if (vips_extract_band(t[0], &t[1], band, NULL)) return NULL;
    if (vips_cast_uchar(t[1], &t[2], NULL)) return NULL;
    VipsImage *parts[3] = { t[2], t[2], t[2] };
    if (vips_bandjoin(parts, &t[3], bands, NULL)) return NULL;
    if (vips_copy(t[3], &t[4], "interpretation", bands == 3 ? VIPS_INTERPRETATION_sRGB : VIPS_INTERPRETATION_B_W, NULL)) return NULL;
    return t[4];
}

int cvips_test_cmyk_jpeg(int width, int height, int with_profile, void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 1);
    VipsImage *rgb = gradient(parent, width, height, 0, 3);
    int status = -1;
    *out = NULL;
    if (!rgb || vips_icc_export(rgb, &t[0], "output_profile", "cmyk", NULL)) goto done;
    if (!with_profile) vips_image_remove(t[0], VIPS_META_ICC_NAME);
    status = vips_jpegsave_buffer(t[0], out, out_length, "Q", 90, NULL);
done:
    g_object_unref(parent);
    return status;
}

int cvips_test_oriented_jpeg(int width, int height, int orientation, void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage *image = gradient(parent, width, height, 0, 1);
    int status = -1;
    *out = NULL;
    if (image) {
        vips_image_set_int(image, VIPS_META_ORIENTATION, orientation);
        status = vips_jpegsave_buffer(image, out, out_length, "Q", 90, NULL);
    }
    g_object_unref(parent);
    return status;
}

int cvips_test_animated_gif(int width, int height, int frames, void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage *image = gradient(parent, width, height * frames, 1, 3);
    int status = -1;
    *out = NULL;
    if (image) {
        vips_image_set_int(image, VIPS_META_PAGE_HEIGHT, height);
        status = vips_gifsave_buffer(image, out, out_length, NULL);
    }
    g_object_unref(parent);
    return status;
}

int cvips_test_zone_jpeg(int width, int height, int colour, int quality, void **out, size_t *out_length) {
    VipsImage *base = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(base), 5);
    int status = -1;
    *out = NULL;
    *out_length = 0;
    if (vips_zone(&t[0], width, height, NULL)) goto done;
    if (vips_linear1(t[0], &t[1], 127.5, 127.5, NULL)) goto done;
    if (vips_cast_uchar(t[1], &t[2], NULL)) goto done;
    VipsImage *image = t[2];
    if (colour) {
        if (vips_falsecolour(t[2], &t[3], NULL)) goto done;
        image = t[3];
    }
    status = vips_jpegsave_buffer(image, out, out_length, "Q", quality, NULL);
done:
    g_object_unref(base);
    return status;
}

int cvips_test_save_pixels(const void *pixels, int width, int height, int bands, int format, int quality,
                           int effort, void **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    VipsImage *image = vips_image_new_from_memory(pixels, (size_t) width * height * bands, width, height, bands,
                                                  VIPS_FORMAT_UCHAR);
    if (!image) return -1;
    VipsImage *tagged = NULL;
    int status = vips_copy(image, &tagged, "interpretation",
                           bands >= 3 ? VIPS_INTERPRETATION_sRGB : VIPS_INTERPRETATION_B_W, NULL);
    g_object_unref(image);
    if (status) return -1;
    /* The options of cvips_render_save, the product's save step. */
    switch (format) {
    case CVIPS_FORMAT_WEBP:
        status = vips_webpsave_buffer(tagged, out, out_length, "Q", quality, "effort", effort, "strip", TRUE, NULL);
        break;
    case CVIPS_FORMAT_AVIF:
        status = vips_heifsave_buffer(tagged, out, out_length, "Q", quality, "effort", effort, "strip", TRUE,
                                      "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, NULL);
        break;
    default:
        status = vips_jpegsave_buffer(tagged, out, out_length, "Q", quality, "strip", TRUE, NULL);
    }
    g_object_unref(tagged);
    return status;
}
