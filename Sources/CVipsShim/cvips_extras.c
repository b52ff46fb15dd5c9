#include "cvips_internal.h"
#include <string.h>
#include <tiffio.h>

/* Renders that are not thumbnails of one image: the contact sheet of a
 * result set, and the solid placeholders. */

int cvips_contact_sheet(const void *const *buffers, const size_t *lengths, int count, int cell, int columns,
                        void **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    if (count < 1) return -1;
    VipsImage *parent = vips_image_new();
    VipsImage **tiles = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), count);
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), count * 4 + 2);
    double white[3] = { 255, 255, 255 };
    double blank[3] = { 225, 225, 225 };
    int status = -1;
    for (int i = 0; i < count; i++) {
        VipsImage *tile = NULL;
        if (buffers[i] && vips_thumbnail_buffer((void *) buffers[i], lengths[i], &t[i * 4], cell, "height", cell, NULL) == 0) {
            /* A wide-gamut cell keeps its colours (an sRGB-tagged one goes
             * through lcms too: near identity, and cells are small). */
            VipsImage *managed = t[i * 4], *srgb;
            if (cvips__has_rgb_profile(managed)) cvips__profile_to_srgb(parent, managed, &managed);
            if (cvips__to_srgb(parent, managed, &srgb) == 0) {
                VipsArrayDouble *bg = vips_array_double_new(white, 3);
                if (vips_image_hasalpha(srgb) ? vips_flatten(srgb, &t[i * 4 + 1], "background", bg, NULL) == 0
                                             : vips_copy(srgb, &t[i * 4 + 1], NULL) == 0) {
                    tile = t[i * 4 + 1];
                }
                vips_area_unref(VIPS_AREA(bg));
            }
        }
        vips_error_clear();  /* a broken tile is a blank cell, not a failure */
        int empty = !tile;
        if (empty) {
            /* A blank cell: a uniform light grey square. */
            if (vips_black(&t[i * 4 + 2], 1, 1, "bands", 3, NULL)) goto done;
            if (vips_linear1(t[i * 4 + 2], &t[i * 4 + 3], 1, blank[0], "uchar", TRUE, NULL)) goto done;
            tile = t[i * 4 + 3];
        }
        VipsArrayDouble *bg = vips_array_double_new(empty ? blank : white, 3);
        int failed = vips_gravity(tile, &tiles[i], VIPS_COMPASS_DIRECTION_CENTRE, cell, cell,
                                  "extend", VIPS_EXTEND_BACKGROUND, "background", bg, NULL);
        vips_area_unref(VIPS_AREA(bg));
        if (failed) goto done;
    }
    VipsArrayDouble *bg = vips_array_double_new(white, 3);
    int failed = vips_arrayjoin(tiles, &t[count * 4], count, "across", columns, "shim", 4, "background", bg, NULL);
    vips_area_unref(VIPS_AREA(bg));
    if (failed) goto done;
    if (vips_cast_uchar(t[count * 4], &t[count * 4 + 1], NULL)) goto done;
    status = vips_pngsave_buffer(t[count * 4 + 1], out, out_length, "strip", TRUE, NULL);
done:
    g_object_unref(parent);
    return status;
}

int cvips_solid_image(int width, int height, const double rgb[3], int format, int quality,
                      void **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    VipsImage *parent = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 4);
    int status = CVIPS_ENCODE;
    double one[3] = { 1, 1, 1 };
    if (vips_black(&t[0], width, height, "bands", 3, NULL)) goto done;
    if (vips_linear(t[0], &t[1], one, (double *) rgb, 3, "uchar", TRUE, NULL)) goto done;
    if (vips_copy(t[1], &t[2], "interpretation", VIPS_INTERPRETATION_sRGB, NULL)) goto done;
    int saved;
    switch (format) {
    case CVIPS_FORMAT_PNG: saved = vips_pngsave_buffer(t[2], out, out_length, "strip", TRUE, NULL); break;
    case CVIPS_FORMAT_WEBP: saved = vips_webpsave_buffer(t[2], out, out_length, "Q", quality, "strip", TRUE, NULL); break;
    case CVIPS_FORMAT_AVIF:
        saved = vips_heifsave_buffer(t[2], out, out_length, "Q", quality, "strip", TRUE,
                                     "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, NULL);
        break;
    case CVIPS_FORMAT_JXL: saved = vips_jxlsave_buffer(t[2], out, out_length, "Q", quality, "strip", TRUE, NULL); break;
    default: saved = vips_jpegsave_buffer(t[2], out, out_length, "Q", quality, "strip", TRUE, NULL);
    }
    if (!saved) status = CVIPS_OK;
done:
    vips_error_clear();
    g_object_unref(parent);
    return status;
}

int cvips_tiff_codec_configured(int scheme) {
    if (scheme < 0 || scheme > 0xFFFF) return 0;
    return TIFFIsCODECConfigured((uint16_t) scheme) ? 1 : 0;
}
