#include "cvips_fixtures.h"
#include "cvips.h"
#include <vips/vips.h>
#include <lcms2.h>
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

int cvips_test_animation(int width, int height, int frames, int webp, const int *delays, void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage *strip = gradient(parent, width, height * frames, 1, 3);
    VipsImage *image = strip ? vips_image_copy_memory(strip) : NULL;
    int status = -1;
    *out = NULL;
    if (image) {
        vips_object_local(parent, image);
        // Each frame its own grey, with a white block moving right: every
        // frame differs wherever it is cropped.
        for (int i = 0; i < frames; i++) {
            vips_draw_rect1(image, 30 + (150 * i) / frames, 0, i * height, width, height, "fill", TRUE, NULL);
            vips_draw_rect1(image, 255, i * width / frames, i * height + height / 4, width / frames, height / 2, "fill", TRUE, NULL);
        }
        vips_image_set_int(image, VIPS_META_PAGE_HEIGHT, height);
        vips_image_set_array_int(image, "delay", delays, frames);
        vips_image_set_int(image, "loop", 0);
        status = webp ? vips_webpsave_buffer(image, out, out_length, "Q", 90, NULL)
                      : vips_gifsave_buffer(image, out, out_length, NULL);
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

/* ---- Colour management (see cvips_fixtures.h). ---- */

int cvips_test_adobe_rgb_profile(void **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    cmsCIExyY white = { 0.3127, 0.3290, 1.0 };
    cmsCIExyYTRIPLE primaries = { { 0.64, 0.33, 1.0 }, { 0.21, 0.71, 1.0 }, { 0.15, 0.06, 1.0 } };
    cmsToneCurve *gamma = cmsBuildGamma(NULL, 563.0 / 256.0);
    if (!gamma) return -1;
    cmsToneCurve *curves[3] = { gamma, gamma, gamma };
    cmsHPROFILE profile = cmsCreateRGBProfile(&white, &primaries, curves);
    cmsFreeToneCurve(gamma);
    if (!profile) return -1;
    int status = -1;
    cmsMLU *description = cmsMLUalloc(NULL, 1);
    cmsUInt32Number size = 0;
    if (description && cmsMLUsetASCII(description, "en", "US", "Adobe RGB (1998) artcache test")
        && cmsWriteTag(profile, cmsSigProfileDescriptionTag, description)
        && cmsSaveProfileToMem(profile, NULL, &size) && size > 0) {
        *out = g_malloc(size);
        if (cmsSaveProfileToMem(profile, *out, &size)) {
            *out_length = size;
            status = 0;
        } else {
            g_free(*out);
            *out = NULL;
        }
    }
    if (description) cmsMLUfree(description);
    cmsCloseProfile(profile);
    return status;
}

/* Red across, green down, blue against red, as tagged sRGB numbers. */
static VipsImage *colourful(VipsImage *parent, int width, int height) {
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 8);
    if (vips_xyz(&t[0], width, height, NULL)) return NULL;
    if (vips_extract_band(t[0], &t[1], 0, NULL) || vips_extract_band(t[0], &t[2], 1, NULL)) return NULL;
    if (vips_linear1(t[1], &t[3], 255.0 / VIPS_MAX(1, width - 1), 0, "uchar", TRUE, NULL)) return NULL;
    if (vips_linear1(t[2], &t[4], 255.0 / VIPS_MAX(1, height - 1), 0, "uchar", TRUE, NULL)) return NULL;
    if (vips_invert(t[3], &t[5], NULL)) return NULL;
    VipsImage *parts[3] = { t[3], t[4], t[5] };
    if (vips_bandjoin(parts, &t[6], 3, NULL)) return NULL;
    if (vips_copy(t[6], &t[7], "interpretation", VIPS_INTERPRETATION_sRGB, NULL)) return NULL;
    return t[7];
}

int cvips_test_tagged_image(int width, int height, const char *space, int depth, int alpha, const char *suffix,
                            void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 4);
    int status = -1;
    *out = NULL;
    *out_length = 0;
    VipsImage *image = colourful(parent, width, height);
    if (!image) goto done;
    if (strcmp(space, "p3") == 0 || strcmp(space, "srgb") == 0) {
        /* Untagged sRGB in, so "embedded" falls back to sRGB. */
        if (vips_icc_transform(image, &t[0], space, "embedded", TRUE, "depth", depth == 16 ? 16 : 8, NULL)) goto done;
        image = t[0];
    } else if (strcmp(space, "adobe") == 0) {
        void *profile = NULL;
        size_t length = 0;
        if (cvips_test_adobe_rgb_profile(&profile, &length) || vips_copy(image, &t[0], NULL)) {
            g_free(profile);
            goto done;
        }
        image = t[0];
        vips_image_set_blob(image, VIPS_META_ICC_NAME, (VipsCallbackFn) g_free, profile, length);
    } else if (strcmp(space, "none") != 0) {
        goto done;
    }
    if (depth == 16 && image->BandFmt != VIPS_FORMAT_USHORT) {
        if (vips_colourspace(image, &t[1], VIPS_INTERPRETATION_RGB16, NULL)) goto done;
        image = t[1];
    }
    if (alpha) {
        if (vips_bandjoin_const1(image, &t[2], image->BandFmt == VIPS_FORMAT_USHORT ? 65535 : 255, NULL)) goto done;
        image = t[2];
    }
    status = vips_image_write_to_buffer(image, suffix, out, out_length, NULL);
done:
    vips_error_clear();
    g_object_unref(parent);
    return status;
}

int cvips_test_managed_thumbnail(const void *buffer, size_t length, int width, int height,
                                 void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 4);
    int status = -1;
    *out = NULL;
    *out_length = 0;
    if (!(t[0] = vips_image_new_from_buffer(buffer, length, "", NULL))) goto done;
    if (vips_icc_transform(t[0], &t[1], "srgb", "embedded", TRUE, "intent", VIPS_INTENT_PERCEPTUAL, "depth", 8, NULL)) goto done;
    if (vips_thumbnail_image(t[1], &t[2], width, "height", height, "size", VIPS_SIZE_DOWN, NULL)) goto done;
    status = vips_pngsave_buffer(t[2], out, out_length, "strip", TRUE, NULL);
done:
    vips_error_clear();
    g_object_unref(parent);
    return status;
}

int cvips_test_pixels(const void *buffer, size_t length, int *width, int *height, int *bands,
                      void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 2);
    int status = -1;
    *out = NULL;
    *out_length = 0;
    if (!(t[0] = vips_image_new_from_buffer(buffer, length, "", NULL))) goto done;
    if (vips_cast_uchar(t[0], &t[1], NULL)) goto done;
    *width = t[1]->Xsize;
    *height = t[1]->Ysize;
    *bands = t[1]->Bands;
    if ((*out = vips_image_write_to_memory(t[1], out_length))) status = 0;
done:
    vips_error_clear();
    g_object_unref(parent);
    return status;
}

int cvips_test_tiff(int width, int height, int kind, void **out, size_t *out_length) {
    void *png = NULL;
    size_t png_length = 0;
    *out = NULL;
    *out_length = 0;
    if (cvips_test_image(width, height, 3, ".png", &png, &png_length)) return -1;
    VipsImage *base = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(base), 4);
    int status = -1;
    if (!(t[0] = vips_image_new_from_buffer(png, png_length, "", NULL))) goto done;
    switch (kind) {
    case 0:
        status = vips_tiffsave_buffer(t[0], out, out_length, "tile", TRUE, "tile_width", 64, "tile_height", 64,
                                      "pyramid", TRUE, "subifd", TRUE, NULL);
        goto done;
    case 1: if (vips_linear1(t[0], &t[1], 257, 0, NULL) || vips_cast(t[1], &t[2], VIPS_FORMAT_USHORT, NULL)) goto done; break;
    case 2: if (vips_linear1(t[0], &t[1], 257, -32768, NULL) || vips_cast(t[1], &t[2], VIPS_FORMAT_SHORT, NULL)) goto done; break;
    case 3: if (vips_linear1(t[0], &t[1], 16843009.0, 0, NULL) || vips_cast(t[1], &t[2], VIPS_FORMAT_UINT, NULL)) goto done; break;
    case 4: if (vips_linear1(t[0], &t[1], 16843009.0, -2147483648.0, NULL) || vips_cast(t[1], &t[2], VIPS_FORMAT_INT, NULL)) goto done; break;
    case 5: {
        /* Three pages (the gradient, then its negative twice) under an
         * OME-XML ImageDescription, as microscopes write them. */
        VipsImage **p = (VipsImage **) vips_object_local_array(VIPS_OBJECT(base), 4);
        if (vips_invert(t[0], &p[0], NULL)) goto done;
        VipsImage *pages[3] = { t[0], p[0], p[0] };
        if (vips_arrayjoin(pages, &p[1], 3, "across", 1, NULL) || vips_copy(p[1], &p[2], NULL)) goto done;
        vips_image_set_int(p[2], VIPS_META_PAGE_HEIGHT, height);
        vips_image_set_string(p[2], VIPS_META_IMAGEDESCRIPTION,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><OME xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\">"
            "<Image ID=\"Image:0\"><Pixels DimensionOrder=\"XYZCT\" SizeC=\"1\" SizeT=\"1\" SizeZ=\"3\" Type=\"uint8\">"
            "</Pixels></Image></OME>");
        status = vips_tiffsave_buffer(p[2], out, out_length, NULL);
        goto done;
    }
    default: goto done;
    }
    if (vips_copy(t[2], &t[3], "interpretation", VIPS_INTERPRETATION_sRGB, NULL)) goto done;
    status = vips_tiffsave_buffer(t[3], out, out_length, NULL);
done:
    g_object_unref(base);
    g_free(png);
    return status;
}
