#define _GNU_SOURCE
#include "cvips.h"
#include <vips/vips.h>
#include <math.h>
#include <string.h>

/* The CVIPS_LOADER_* bit of a loader, by the class name
 * vips_foreign_find_load_buffer returns ("VipsForeignLoadJpegBuffer"); 0 for
 * any loader artcache never uses. */
static int loader_bit(const char *loader) {
    static const struct { const char *prefix; int bit; } table[] = {
        { "VipsForeignLoadJpeg", CVIPS_LOADER_JPEG }, { "VipsForeignLoadPng", CVIPS_LOADER_PNG },
        { "VipsForeignLoadNsgif", CVIPS_LOADER_GIF }, { "VipsForeignLoadWebp", CVIPS_LOADER_WEBP },
        { "VipsForeignLoadTiff", CVIPS_LOADER_TIFF }, { "VipsForeignLoadHeif", CVIPS_LOADER_HEIF },
        { "VipsForeignLoadSvg", CVIPS_LOADER_SVG }, { "VipsForeignLoadMagick", CVIPS_LOADER_MAGICK },
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strncmp(loader, table[i].prefix, strlen(table[i].prefix)) == 0) return table[i].bit;
    }
    return 0;
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

struct cvips_image {
    VipsImage *image;
    void *buffer;
    size_t length;
    char loader[64];
    int magick;          /* decoded by ImageMagick: rendered from `image`, never re-probed */
};

/* A render's deadline: the "eval" signal of the image being computed fires
 * as tiles are produced; past the deadline it sets libvips' kill flag, and
 * the computation stops with an error. */
typedef struct {
    gint64 deadline;     /* g_get_monotonic_time() microseconds; 0: none */
    int expired;
} deadline_t;

static void deadline_start(deadline_t *d, double seconds) {
    d->expired = 0;
    d->deadline = seconds > 0 ? g_get_monotonic_time() + (gint64) (seconds * 1e6) : 0;
}

static void on_eval(VipsImage *image, VipsProgress *progress, void *data) {
    (void) progress;
    deadline_t *d = data;
    if (d->deadline && g_get_monotonic_time() > d->deadline) {
        d->expired = 1;
        vips_image_set_kill(image, TRUE);
    }
}

/* Computes `in` into memory under the deadline (NULL on failure or when
 * killed; d->expired tells which). */
static VipsImage *copy_memory_by(VipsImage *in, deadline_t *d) {
    gulong handler = 0;
    if (d->deadline) {
        if (g_get_monotonic_time() > d->deadline) { d->expired = 1; return NULL; }
        vips_image_set_progress(in, TRUE);
        handler = g_signal_connect(in, "eval", G_CALLBACK(on_eval), d);
    }
    VipsImage *out = vips_image_copy_memory(in);
    if (handler) g_signal_handler_disconnect(in, handler);
    return out;
}

static int is_magick_bmp_or_ico(VipsImage *image) {
    const char *format = NULL;
    if (vips_image_get_typeof(image, "magick-format") == 0 || vips_image_get_string(image, "magick-format", &format)) return 0;
    static const char *accepted[] = { "BMP", "BMP2", "BMP3", "ICO", "ICON" };
    for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
        if (g_ascii_strcasecmp(format, accepted[i]) == 0) return 1;
    }
    return 0;
}

static cvips_image *open_magick(const void *buffer, size_t length, int *error_kind) {
    cvips_image *image = g_new0(cvips_image, 1);
    image->buffer = g_memdup2(buffer, length);
    image->length = length;
    image->magick = 1;
    g_strlcpy(image->loader, "VipsForeignLoadMagickBuffer", sizeof(image->loader));
    if (vips_magickload_buffer(image->buffer, length, &image->image, NULL)) {
        image->image = NULL;
        *error_kind = CVIPS_DECODE;
        cvips_image_free(image);
        return NULL;
    }
    if (!is_magick_bmp_or_ico(image->image)) {
        *error_kind = CVIPS_UNSUPPORTED;
        cvips_image_free(image);
        return NULL;
    }
    return image;
}

cvips_image *cvips_image_open(const void *buffer, size_t length, int allowed_loaders, int *error_kind) {
    *error_kind = CVIPS_OK;
    if (allowed_loaders == CVIPS_LOADER_MAGICK) return open_magick(buffer, length, error_kind);
    allowed_loaders &= ~CVIPS_LOADER_MAGICK;  /* never by probing */
    /* The same probe vips_thumbnail_buffer makes later, on the same bytes:
     * the loader checked here is the one that decodes. */
    const char *loader = vips_foreign_find_load_buffer(buffer, length);
    if (!loader || !(loader_bit(loader) & allowed_loaders)) {
        vips_error_clear();
        *error_kind = CVIPS_UNSUPPORTED;
        return NULL;
    }
    cvips_image *image = g_new0(cvips_image, 1);
    image->buffer = g_memdup2(buffer, length);
    image->length = length;
    g_strlcpy(image->loader, loader, sizeof(image->loader));
    /* The header only: nothing is decoded here. */
    image->image = vips_image_new_from_buffer(image->buffer, length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (!image->image) {
        *error_kind = CVIPS_DECODE;
        cvips_image_free(image);
        return NULL;
    }
    return image;
}

void cvips_image_free(cvips_image *image) {
    if (!image) return;
    if (image->image) g_object_unref(image->image);
    g_free(image->buffer);
    g_free(image);
}

void cvips_image_header(const cvips_image *image, cvips_header_t *out) {
    memset(out, 0, sizeof(*out));
    VipsImage *i = image->image;
    out->width = vips_image_get_width(i);
    out->height = vips_image_get_page_height(i);
    out->bands = vips_image_get_bands(i);
    out->pages = is_animation_loader(image->loader) ? vips_image_get_n_pages(i) : 1;
    if (out->pages < 1) out->pages = 1;
    out->orientation = vips_image_get_orientation(i);
    out->has_alpha = vips_image_hasalpha(i);
    out->has_exif = vips_image_get_typeof(i, VIPS_META_EXIF_NAME) != 0;
    out->has_icc = vips_image_get_typeof(i, VIPS_META_ICC_NAME) != 0;
    out->interpretation = (int) vips_image_get_interpretation(i);
    g_strlcpy(out->loader, image->loader, sizeof(out->loader));
}

/* ---- One render, step by step (see cvips.h). ---- */

struct cvips_render {
    VipsImage *parent;      /* owns the intermediates (its local array) */
    VipsImage *current;     /* borrowed from parent's intermediates, or from the branch's parent */
    deadline_t deadline;
};

/* A slot in the render's intermediates for the next step's output. */
static VipsImage **next_slot(cvips_render *r) {
    return (VipsImage **) vips_object_local_array(VIPS_OBJECT(r->parent), 1);
}

static int past_deadline(cvips_render *r) {
    return r->deadline.deadline && g_get_monotonic_time() > r->deadline.deadline;
}

cvips_render *cvips_render_new(double timeout) {
    cvips_render *r = g_new0(cvips_render, 1);
    r->parent = vips_image_new();
    deadline_start(&r->deadline, timeout);
    return r;
}

void cvips_render_free(cvips_render *r) {
    if (!r) return;
    g_object_unref(r->parent);
    g_free(r);
}

cvips_render *cvips_render_branch(const cvips_render *from) {
    if (!from->current) return NULL;
    cvips_render *r = g_new0(cvips_render, 1);
    r->parent = vips_image_new();
    r->current = from->current;
    r->deadline.deadline = from->deadline.deadline;
    return r;
}

static VipsInteresting interesting_of(int crop) {
    return crop == CVIPS_CROP_CENTRE ? VIPS_INTERESTING_CENTRE
         : crop == CVIPS_CROP_ATTENTION ? VIPS_INTERESTING_ATTENTION : VIPS_INTERESTING_NONE;
}

int cvips_render_thumbnail(cvips_render *r, const cvips_image *source, const void *buffer, size_t length,
                           int allowed_loaders, int width, int height, int crop) {
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsInteresting interesting = crop == CVIPS_CROP_CENTRE ? VIPS_INTERESTING_CENTRE : VIPS_INTERESTING_NONE;
    VipsImage **out = next_slot(r);
    int failed;
    if (source && source->magick) {
        failed = vips_thumbnail_image(source->image, out, width, "height", height, "size", VIPS_SIZE_DOWN,
                                      "crop", interesting, NULL);
    } else {
        const void *bytes = source ? source->buffer : buffer;
        size_t count = source ? source->length : length;
        if (!source) {
            const char *loader = vips_foreign_find_load_buffer(bytes, count);
            if (!loader || !(loader_bit(loader) & allowed_loaders & ~CVIPS_LOADER_MAGICK)) {
                vips_error_clear();
                return CVIPS_UNSUPPORTED;
            }
        }
        failed = vips_thumbnail_buffer((void *) bytes, count, out, width, "height", height, "size", VIPS_SIZE_DOWN,
                                       "crop", interesting, "option_string", "fail_on=truncated", NULL);
    }
    if (failed) return CVIPS_DECODE;
    r->current = *out;
    return CVIPS_OK;
}

void cvips_render_info(const cvips_render *r, cvips_render_info_t *out) {
    memset(out, 0, sizeof(*out));
    if (!r->current) return;
    out->width = vips_image_get_width(r->current);
    out->height = vips_image_get_height(r->current);
    out->has_alpha = vips_image_hasalpha(r->current);
}

int cvips_render_materialize(cvips_render *r) {
    if (!r->current) return CVIPS_DECODE;
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsImage **out = next_slot(r);
    if (!(*out = copy_memory_by(r->current, &r->deadline))) return r->deadline.expired ? CVIPS_TIMEOUT : CVIPS_DECODE;
    r->current = *out;
    return CVIPS_OK;
}

int cvips_render_resize(cvips_render *r, double scale) {
    if (!r->current) return CVIPS_DECODE;
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsImage **out = next_slot(r);
    if (vips_resize(r->current, out, scale, NULL)) return CVIPS_DECODE;
    r->current = *out;
    return CVIPS_OK;
}

int cvips_render_crop(cvips_render *r, int width, int height, int crop) {
    if (!r->current) return CVIPS_DECODE;
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsImage **out = next_slot(r);
    if (vips_smartcrop(r->current, out, width, height, "interesting", interesting_of(crop), NULL)) return CVIPS_DECODE;
    r->current = *out;
    return CVIPS_OK;
}

int cvips_render_srgb(cvips_render *r) {
    if (!r->current) return CVIPS_DECODE;
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsImage *srgb;
    if (to_srgb(r->parent, r->current, &srgb)) return CVIPS_DECODE;
    r->current = srgb;
    return CVIPS_OK;
}

int cvips_render_flatten(cvips_render *r, const double background[3]) {
    if (!r->current) return CVIPS_DECODE;
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsImage **out = next_slot(r);
    VipsArrayDouble *bg = vips_array_double_new(background, 3);
    int failed = vips_flatten(r->current, out, "background", bg, NULL);
    vips_area_unref(VIPS_AREA(bg));
    if (failed) return CVIPS_DECODE;
    r->current = *out;
    return CVIPS_OK;
}

int cvips_render_save(cvips_render *r, int format, int quality, void **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    int status = cvips_render_materialize(r);
    if (status != CVIPS_OK) return status;
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsImage *image = r->current;
    int saved;
    switch (format) {
    case CVIPS_FORMAT_WEBP:
        saved = vips_webpsave_buffer(image, out, out_length, "Q", quality, "strip", TRUE, NULL);
        break;
    case CVIPS_FORMAT_PNG:
        saved = vips_pngsave_buffer(image, out, out_length, "strip", TRUE, "compression", 6, NULL);
        break;
    case CVIPS_FORMAT_AVIF:
        saved = vips_heifsave_buffer(image, out, out_length, "Q", quality, "strip", TRUE,
                                     "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, NULL);
        break;
    case CVIPS_FORMAT_JPEG:
        saved = vips_jpegsave_buffer(image, out, out_length, "Q", quality, "strip", TRUE, NULL);
        break;
    default:
        return CVIPS_ENCODE;
    }
    return saved ? CVIPS_ENCODE : CVIPS_OK;
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
    default: saved = vips_jpegsave_buffer(t[2], out, out_length, "Q", quality, "strip", TRUE, NULL);
    }
    if (!saved) status = CVIPS_OK;
done:
    vips_error_clear();
    g_object_unref(parent);
    return status;
}
