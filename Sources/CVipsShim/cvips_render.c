#include "cvips_internal.h"
#include <stdint.h>
#include <string.h>

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

/* An integer image libvips' colour conversions would clip — signed 8, 16
 * and 32 bits, unsigned 32, and unsigned 16 not tagged RGB16/GREY16 (those
 * they scale) — scaled from its format's whole range to 0...255 and tagged
 * sRGB (3 bands or more) or B_W. Others are returned as they are. */
static int to_eight_bit(VipsImage *parent, VipsImage *in, VipsImage **out) {
    VipsInterpretation interpretation = vips_image_get_interpretation(in);
    double scale, offset;
    switch (vips_image_get_format(in)) {
    case VIPS_FORMAT_CHAR: scale = 1; offset = 128; break;
    case VIPS_FORMAT_USHORT:
        if (interpretation == VIPS_INTERPRETATION_RGB16 || interpretation == VIPS_INTERPRETATION_GREY16) {
            *out = in;
            return 0;
        }
        scale = 1 / 257.0; offset = 0; break;
    case VIPS_FORMAT_SHORT: scale = 1 / 257.0; offset = 32768 / 257.0; break;
    case VIPS_FORMAT_UINT: scale = 255 / 4294967295.0; offset = 0; break;
    case VIPS_FORMAT_INT: scale = 255 / 4294967295.0; offset = 2147483648.0 * 255 / 4294967295.0; break;
    default:
        *out = in;
        return 0;
    }
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(parent), 3);
    if (vips_linear1(in, &t[0], scale, offset + 0.5, NULL) || vips_cast_uchar(t[0], &t[1], NULL)) return -1;
    VipsInterpretation target = vips_image_get_bands(t[1]) >= 3 ? VIPS_INTERPRETATION_sRGB : VIPS_INTERPRETATION_B_W;
    if (vips_copy(t[1], &t[2], "interpretation", target, NULL)) return -1;
    *out = t[2];
    return 0;
}

/* A TIFF: its first page's full-size image (page 0, subifd -1: libvips'
 * pyramid shortcut would pick the smallest sub-IFD level with size=down),
 * its integer samples scaled to 8 bits, then thumbnailed. */
static int thumbnail_tiff(cvips_render *r, const void *bytes, size_t count, VipsImage **out, int width, int height,
                          VipsInteresting interesting) {
    VipsImage **loaded = next_slot(r);
    if (!(*loaded = vips_image_new_from_buffer(bytes, count, "", "page", 0, "subifd", -1,
                                               "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL))) return -1;
    VipsImage *eight;
    if (to_eight_bit(r->parent, *loaded, &eight)) return -1;
    return vips_thumbnail_image(eight, out, width, "height", height, "size", VIPS_SIZE_DOWN, "crop", interesting, NULL);
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
        const char *loader = source ? source->loader : vips_foreign_find_load_buffer(bytes, count);
        if (!source) {
            if (!loader || !(cvips__loader_bit(loader) & allowed_loaders & ~CVIPS_LOADER_MAGICK)) {
                vips_error_clear();
                return CVIPS_UNSUPPORTED;
            }
        }
        if (loader && cvips__loader_bit(loader) == CVIPS_LOADER_TIFF) {
            failed = thumbnail_tiff(r, bytes, count, out, width, height, interesting);
        } else {
            failed = vips_thumbnail_buffer((void *) bytes, count, out, width, "height", height, "size", VIPS_SIZE_DOWN,
                                           "crop", interesting, "option_string", "fail_on=truncated", NULL);
        }
    }
    if (failed) return CVIPS_DECODE;
    r->current = *out;
    return CVIPS_OK;
}

int cvips_render_animation(cvips_render *r, const void *buffer, size_t length, int allowed_loaders,
                           int box_width, int box_height, int out_width, int out_height) {
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    const char *loader = vips_foreign_find_load_buffer(buffer, length);
    if (!loader || !(cvips__loader_bit(loader) & allowed_loaders & (CVIPS_LOADER_GIF | CVIPS_LOADER_WEBP))) {
        vips_error_clear();
        return CVIPS_UNSUPPORTED;
    }
    VipsImage **strip = next_slot(r);
    // Every frame (n=-1), each shrunk into the box: libvips keeps the
    // frames stacked, their page-height, delays and loop count.
    if (vips_thumbnail_buffer((void *) buffer, length, strip, box_width, "height", box_height, "size", VIPS_SIZE_DOWN,
                              "option_string", "n=-1,fail_on=truncated", NULL)) return CVIPS_DECODE;
    int width = vips_image_get_width(*strip), page = vips_image_get_page_height(*strip);
    int pages = vips_image_get_height(*strip) / page;
    if (out_width >= width && out_height >= page) {
        r->current = *strip;
        return CVIPS_OK;
    }
    // A cover fit: each frame cropped at its centre (libvips' thumbnail
    // would crop the stack as one image), then stacked again.
    int w = MIN(out_width, width), h = MIN(out_height, page);
    VipsImage **frames = (VipsImage **) vips_object_local_array(VIPS_OBJECT(r->parent), pages);
    for (int i = 0; i < pages; i++) {
        if (vips_crop(*strip, &frames[i], (width - w) / 2, i * page + (page - h) / 2, w, h, NULL)) return CVIPS_DECODE;
    }
    VipsImage **joined = next_slot(r), **out = next_slot(r);
    if (vips_arrayjoin(frames, joined, pages, "across", 1, NULL) || vips_copy(*joined, out, NULL)) return CVIPS_DECODE;
    vips_image_set_int(*out, VIPS_META_PAGE_HEIGHT, h);
    r->current = *out;
    return CVIPS_OK;
}

void cvips_render_info(const cvips_render *r, cvips_render_info_t *out) {
    memset(out, 0, sizeof(*out));
    if (!r->current) return;
    out->width = vips_image_get_width(r->current);
    out->height = vips_image_get_height(r->current);
    out->has_alpha = vips_image_hasalpha(r->current);
    int page = vips_image_get_page_height(r->current);
    out->pages = page > 0 && page < out->height ? out->height / page : 1;
    if (out->pages > 1) out->height = page;
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
    if (cvips__to_srgb(r->parent, r->current, &srgb)) return CVIPS_DECODE;
    r->current = srgb;
    return CVIPS_OK;
}

void cvips_render_profile(const cvips_render *r, const void **data, size_t *length) {
    *data = NULL;
    *length = 0;
    if (!r->current || !vips_image_get_typeof(r->current, VIPS_META_ICC_NAME)) return;
    const void *blob = NULL;
    size_t size = 0;
    if (vips_image_get_blob(r->current, VIPS_META_ICC_NAME, &blob, &size) == 0 && blob) {
        *data = blob;
        *length = size;
    }
}

int cvips_render_profile_to_srgb(cvips_render *r) {
    if (!r->current) return CVIPS_DECODE;
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsImage *srgb;
    cvips__profile_to_srgb(r->parent, r->current, &srgb);
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

int cvips_render_drop_opaque_alpha(cvips_render *r, int *dropped) {
    *dropped = 0;
    if (!r->current) return CVIPS_DECODE;
    if (!vips_image_hasalpha(r->current)) return CVIPS_OK;
    int status = cvips_render_materialize(r);
    if (status != CVIPS_OK) return status;
    VipsImage *image = r->current;
    int bands = vips_image_get_bands(image);
    if (image->BandFmt != VIPS_FORMAT_UCHAR || (bands != 2 && bands != 4)) return CVIPS_OK;
    VipsImage **alpha = next_slot(r);
    double least = 0;
    if (vips_extract_band(image, alpha, bands - 1, NULL) || vips_min(*alpha, &least, NULL)) return CVIPS_DECODE;
    if (least < 255) return CVIPS_OK;
    VipsImage **opaque = next_slot(r);
    if (vips_extract_band(image, opaque, 0, "n", bands - 1, NULL)) return CVIPS_DECODE;
    r->current = *opaque;
    *dropped = 1;
    return CVIPS_OK;
}

/* `in` without its ICC profile (a copy sharing its pixels; `in` itself when it has none). */
static int without_profile(cvips_render *r, VipsImage *in, VipsImage **out) {
    *out = in;
    if (!vips_image_get_typeof(in, VIPS_META_ICC_NAME)) return 0;
    VipsImage **copy = next_slot(r);
    if (vips_copy(in, copy, NULL)) return -1;
    vips_image_remove(*copy, VIPS_META_ICC_NAME);
    *out = *copy;
    return 0;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char) v; p[1] = (unsigned char) (v >> 8); p[2] = (unsigned char) (v >> 16); p[3] = (unsigned char) (v >> 24);
}

/* libvips 8.14's webpsave writes a VP8X header and an EXIF chunk (~200
 * bytes, 14% of a 100 px thumbnail) even with "strip". Drops the EXIF and
 * XMP chunks in place (clearing their VP8X flags), and the VP8X header too
 * when nothing else needs it (no ICC profile, alpha or animation: one
 * image chunk left), which is libwebp's simple format, as the fast path's
 * WebP. Anything that does not parse as a RIFF WebP is left as it is. */
static void webp_drop_metadata(unsigned char *data, size_t *length) {
    size_t n = *length;
    if (n < 20 || memcmp(data, "RIFF", 4) != 0 || memcmp(data + 8, "WEBP", 4) != 0) return;
    /* First pass: every chunk must fit, and what is there. */
    size_t vp8x = 0, images = 0, others = 0;
    for (size_t k = 12; k < n;) {
        if (k + 8 > n) return;
        size_t size = le32(data + k + 4), padded = size + (size & 1);
        if (padded > n - k - 8) return;
        if (memcmp(data + k, "VP8X", 4) == 0) { if (size < 10) return; vp8x = k; }
        else if (memcmp(data + k, "VP8 ", 4) == 0 || memcmp(data + k, "VP8L", 4) == 0) images++;
        else if (memcmp(data + k, "EXIF", 4) != 0 && memcmp(data + k, "XMP ", 4) != 0) others++;
        k += 8 + padded;
    }
    if (!vp8x) return;
    unsigned char flags = data[vp8x + 8] & (unsigned char) ~0x0C; /* EXIF 0x08, XMP 0x04 */
    data[vp8x + 8] = flags;
    int simple = flags == 0 && images == 1 && others == 0;
    size_t to = 12;
    for (size_t k = 12; k < n;) {
        size_t size = le32(data + k + 4), chunk = 8 + size + (size & 1);
        int drop = memcmp(data + k, "EXIF", 4) == 0 || memcmp(data + k, "XMP ", 4) == 0 || (simple && k == vp8x);
        if (!drop) {
            memmove(data + to, data + k, chunk);
            to += chunk;
        }
        k += chunk;
    }
    put_le32(data + 4, (uint32_t) (to - 8));
    *length = to;
}

int cvips_render_save(cvips_render *r, int format, int quality, int effort, void **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    int status = cvips_render_materialize(r);
    if (status != CVIPS_OK) return status;
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsImage *image;
    if (without_profile(r, r->current, &image)) return CVIPS_ENCODE;
    int saved;
    switch (format) {
    case CVIPS_FORMAT_WEBP:
        saved = vips_webpsave_buffer(image, out, out_length, "Q", quality, "effort", effort, "strip", TRUE, NULL);
        if (!saved) webp_drop_metadata(*out, out_length);
        break;
    case CVIPS_FORMAT_PNG:
        saved = vips_pngsave_buffer(image, out, out_length, "strip", TRUE, "compression", 6, NULL);
        break;
    case CVIPS_FORMAT_AVIF:
        saved = vips_heifsave_buffer(image, out, out_length, "Q", quality, "effort", effort, "strip", TRUE,
                                     "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, NULL);
        break;
    case CVIPS_FORMAT_JPEG:
        saved = vips_jpegsave_buffer(image, out, out_length, "Q", quality, "strip", TRUE, "interlace", effort != 0, NULL);
        break;
    case CVIPS_FORMAT_JXL:
        saved = vips_jxlsave_buffer(image, out, out_length, "Q", quality, "effort", effort, "strip", TRUE, NULL);
        break;
    default:
        return CVIPS_ENCODE;
    }
    return saved ? CVIPS_ENCODE : CVIPS_OK;
}

int cvips_render_rgba(cvips_render *r, void **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    if (!r->current) return CVIPS_DECODE;
    if (past_deadline(r)) return CVIPS_TIMEOUT;
    VipsImage *image = r->current;
    if (image->BandFmt != VIPS_FORMAT_UCHAR || image->Bands < 3 || image->Bands > 4) return CVIPS_ENCODE;
    if (image->Bands == 3) {
        VipsImage **opaque = next_slot(r);
        if (vips_bandjoin_const1(image, opaque, 255, NULL)) return CVIPS_DECODE;
        image = *opaque;
    }
    r->current = image;
    int status = cvips_render_materialize(r);
    if (status != CVIPS_OK) return status;
    size_t size = 0;
    void *pixels = vips_image_write_to_memory(r->current, &size);
    if (!pixels) return CVIPS_DECODE;
    *out = pixels;
    *out_length = size;
    return CVIPS_OK;
}
