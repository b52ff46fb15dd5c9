#define _GNU_SOURCE
#include "cvips.h"
#include <vips/vips.h>
#include <string.h>

/* A failed libvips call: blocked loaders count as unsupported input. */
static int failure(int kind) {
    const char *message = vips_error_buffer();
    if (message && strstr(message, "blocked")) return CVIPS_UNSUPPORTED;
    if (message && strstr(message, "not a known")) return CVIPS_UNSUPPORTED;
    if (message && strstr(message, "Security limit")) return CVIPS_TOO_LARGE;  /* libheif's own size limits */
    return kind;
}

/* `loader` is a class name ("VipsForeignLoadNsgifBuffer") or a nickname. */
static int is_animation_loader(const char *loader) {
    return strcasestr(loader, "gif") != NULL || strcasestr(loader, "webp") != NULL;
}

/* To 8-bit sRGB (CMYK, grey, 16-bit and Lab included). */
static int to_srgb(VipsImage *parent, VipsImage *in, VipsImage **out) {
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 3);
    VipsInterpretation kind = vips_image_guess_interpretation(in);
    VipsImage *current = in;
    if (kind != VIPS_INTERPRETATION_sRGB || in->BandFmt != VIPS_FORMAT_UCHAR) {
        if (vips_colourspace(current, &t[0], VIPS_INTERPRETATION_sRGB, NULL)) return -1;
        current = t[0];
    }
    if (current->BandFmt != VIPS_FORMAT_UCHAR) {
        if (vips_cast_uchar(current, &t[1], NULL)) return -1;
        current = t[1];
    }
    *out = current;
    return 0;
}

int cvips_render(const void *buffer, size_t length, const cvips_render_options_t *o,
                 void **out, size_t *out_length, cvips_render_result_t *r) {
    memset(r, 0, sizeof(*r));
    *out = NULL;
    *out_length = 0;
    if (o->width < 1 || o->height < 1 || o->width > o->max_output || o->height > o->max_output) {
        vips_error("artcache", "output %dx%d is outside 1..%d", o->width, o->height, o->max_output);
        return CVIPS_TOO_LARGE;
    }
    const char *loader = vips_foreign_find_load_buffer(buffer, length);
    if (!loader) return failure(CVIPS_UNSUPPORTED);

    VipsImage *parent = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 8);
    int status = CVIPS_DECODE;

    /* The header only: nothing is decoded before the limits are checked. */
    t[0] = vips_image_new_from_buffer(buffer, length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (!t[0]) { status = failure(CVIPS_DECODE); goto done; }
    r->source_width = vips_image_get_width(t[0]);
    r->source_height = vips_image_get_page_height(t[0]);
    r->source_frames = is_animation_loader(loader) ? vips_image_get_n_pages(t[0]) : 1;
    if (r->source_frames < 1) r->source_frames = 1;
    if (r->source_frames > o->max_frames) {
        vips_error("artcache", "%d frames (limit %d)", r->source_frames, o->max_frames);
        status = CVIPS_TOO_LARGE;
        goto done;
    }
    long long pixels = (long long) r->source_width * r->source_height * r->source_frames;
    if (r->source_width < 1 || r->source_height < 1 || pixels > o->max_source_pixels) {
        vips_error("artcache", "%dx%d x %d frames = %lld pixels (limit %lld)", r->source_width, r->source_height,
                   r->source_frames, pixels, o->max_source_pixels);
        status = CVIPS_TOO_LARGE;
        goto done;
    }

    /* Shrink-on-load thumbnail of the first frame: auto-rotated, into the box. */
    VipsInteresting crop = o->fit == CVIPS_FIT_COVER ? VIPS_INTERESTING_CENTRE
                         : o->fit == CVIPS_FIT_SMART ? VIPS_INTERESTING_ATTENTION : VIPS_INTERESTING_NONE;
    /* fail_on=truncated: a cut or hollow image is an error, never a grey or
     * black thumbnail stored as if it were the picture. */
    if (vips_thumbnail_buffer((void *) buffer, length, &t[1], o->width, "height", o->height,
                              "size", VIPS_SIZE_DOWN, "crop", crop, "option_string", "fail_on=truncated", NULL)) {
        status = failure(CVIPS_DECODE);
        goto done;
    }
    VipsImage *image;
    if (to_srgb(parent, t[1], &image)) { status = failure(CVIPS_DECODE); goto done; }

    int format = o->format;
    int alpha = vips_image_hasalpha(image);
    if (format == CVIPS_FORMAT_AUTO) format = alpha ? CVIPS_FORMAT_PNG : CVIPS_FORMAT_JPEG;
    if (alpha && format == CVIPS_FORMAT_JPEG) {
        VipsArrayDouble *background = vips_array_double_new(o->background, 3);
        int failed = vips_flatten(image, &t[5], "background", background, NULL);
        vips_area_unref(VIPS_AREA(background));
        if (failed) { status = failure(CVIPS_DECODE); goto done; }
        image = t[5];
        alpha = 0;
    }
    /* Materialise now: decode errors surface here, not inside the encoder. */
    if (!(t[6] = vips_image_copy_memory(image))) { status = failure(CVIPS_DECODE); goto done; }
    image = t[6];

    int saved;
    switch (format) {
    case CVIPS_FORMAT_WEBP:
        saved = vips_webpsave_buffer(image, out, out_length, "Q", o->quality, "strip", TRUE, NULL);
        break;
    case CVIPS_FORMAT_PNG:
        saved = vips_pngsave_buffer(image, out, out_length, "strip", TRUE, "compression", 6, NULL);
        break;
    case CVIPS_FORMAT_AVIF:
        saved = vips_heifsave_buffer(image, out, out_length, "Q", o->quality, "strip", TRUE,
                                     "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, NULL);
        break;
    default:
        saved = vips_jpegsave_buffer(image, out, out_length, "Q", o->quality, "strip", TRUE, NULL);
        format = CVIPS_FORMAT_JPEG;
    }
    if (saved) { status = CVIPS_ENCODE; goto done; }
    r->width = vips_image_get_width(image);
    r->height = vips_image_get_height(image);
    r->format = format;
    r->has_alpha = alpha;
    status = CVIPS_OK;
done:
    g_object_unref(parent);
    return status;
}

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
            VipsImage *srgb;
            if (to_srgb(parent, t[i * 4], &srgb) == 0) {
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

int cvips_test_cmyk_jpeg(int width, int height, int with_profile, void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 6);
    int status = -1;
    *out = NULL;
    if (vips_xyz(&t[0], width, height, NULL)) goto done;
    if (vips_cast_uchar(t[0], &t[1], NULL)) goto done;
    VipsImage *parts[3] = { t[1], t[1], t[1] };
    if (vips_bandjoin(parts, &t[2], 3, NULL)) goto done;  /* 6 bands: x,y x,y x,y */
    if (vips_extract_band(t[2], &t[3], 0, "n", 3, NULL)) goto done;
    if (vips_copy(t[3], &t[4], "interpretation", VIPS_INTERPRETATION_sRGB, NULL)) goto done;
    if (vips_icc_export(t[4], &t[5], "output_profile", "cmyk", NULL)) goto done;
    if (!with_profile) vips_image_remove(t[5], VIPS_META_ICC_NAME);
    status = vips_jpegsave_buffer(t[5], out, out_length, "Q", 90, NULL);
done:
    g_object_unref(parent);
    return status;
}

int cvips_test_oriented_jpeg(int width, int height, int orientation, void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 4);
    int status = -1;
    *out = NULL;
    if (vips_xyz(&t[0], width, height, NULL)) goto done;
    if (vips_extract_band(t[0], &t[1], 0, NULL)) goto done;
    if (vips_cast_uchar(t[1], &t[2], NULL)) goto done;
    if (vips_copy(t[2], &t[3], NULL)) goto done;
    vips_image_set_int(t[3], VIPS_META_ORIENTATION, orientation);
    status = vips_jpegsave_buffer(t[3], out, out_length, "Q", 90, NULL);
done:
    g_object_unref(parent);
    return status;
}

int cvips_test_animated_gif(int width, int height, int frames, void **out, size_t *out_length) {
    VipsImage *parent = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 6);
    int status = -1;
    *out = NULL;
    if (vips_xyz(&t[0], width, height * frames, NULL)) goto done;
    if (vips_extract_band(t[0], &t[1], 1, NULL)) goto done;
    if (vips_cast_uchar(t[1], &t[2], NULL)) goto done;
    VipsImage *parts[3] = { t[2], t[2], t[2] };
    if (vips_bandjoin(parts, &t[3], 3, NULL)) goto done;
    if (vips_copy(t[3], &t[4], "interpretation", VIPS_INTERPRETATION_sRGB, NULL)) goto done;
    vips_image_set_int(t[4], VIPS_META_PAGE_HEIGHT, height);
    status = vips_gifsave_buffer(t[4], out, out_length, NULL);
done:
    g_object_unref(parent);
    return status;
}
