#ifndef CVIPS_H
#define CVIPS_H
/* Non-variadic, glib-free wrappers over libvips: Swift sees only plain C types. */
#include <stddef.h>

/* Process-wide setup, once, with fixed settings (whoever calls first):
 * vector code (liborc) off, operation cache off, libvips concurrency 1,
 * untrusted operations blocked, and every loader blocked but those listed in
 * CVIPS_LOADER_*. Which of those may decode a given input is decided per
 * call (cvips_image_open's `allowed_loaders`), never here. Returns 0 on success. */
int cvips_init(const char *argv0);
const char *cvips_version(void);

/* Loaders an input may be decoded by (a bit mask). */
enum {
    CVIPS_LOADER_JPEG = 1 << 0,
    CVIPS_LOADER_PNG = 1 << 1,
    CVIPS_LOADER_GIF = 1 << 2,
    CVIPS_LOADER_WEBP = 1 << 3,
    CVIPS_LOADER_TIFF = 1 << 4,
    CVIPS_LOADER_HEIF = 1 << 5,   /* HEIC, HEIF, AVIF */
    CVIPS_LOADER_SVG = 1 << 6,
    CVIPS_LOADER_MAGICK = 1 << 7, /* ImageMagick: BMP and ICO only, by the caller's choice */
};

/* A solid-colour image of width x height (RGB 0..255), encoded as
 * CVIPS_FORMAT_JPEG, _PNG, _WEBP or _AVIF: generated placeholders. */
int cvips_solid_image(int width, int height, const double rgb[3], int format, int quality,
                      void **out, size_t *out_length);

/* Bytes libvips holds in its tracked allocations (pixel buffers) now, and
 * the most it has held at once since the process started: /metrics' gauges. */
size_t cvips_tracked_memory(void);
size_t cvips_tracked_memory_highwater(void);

/* Takes the libvips error buffer (malloc'd copy, free with cvips_free) and clears it. */
char *cvips_error_take(void);
void cvips_free(void *pointer);

typedef struct {
    int width;
    int height;          /* of one page */
    int bands;
    int pages;           /* frames of an animation, 1 otherwise */
    int orientation;     /* EXIF orientation, 1 when absent */
    int has_alpha;
    char loader[64];     /* e.g. "jpegload_buffer" */
    int has_exif;
    int has_icc;
    int interpretation;  /* VipsInterpretation */
} cvips_header_t;

/* VIPS_INTERPRETATION_sRGB, for comparing cvips_header_t.interpretation. */
int cvips_interpretation_srgb(void);


/* What a render failed on. */
enum {
    CVIPS_OK = 0,
    CVIPS_UNSUPPORTED = 1,   /* no loader, or the loader is blocked */
    CVIPS_TOO_LARGE = 2,     /* limits exceeded, decided from the header */
    CVIPS_DECODE = 3,        /* corrupt or truncated input */
    CVIPS_ENCODE = 4,        /* the output format could not be written */
    CVIPS_TIMEOUT = 5,       /* past the render's deadline: stopped with libvips' kill flag */
};

enum { CVIPS_FORMAT_JPEG = 0, CVIPS_FORMAT_WEBP = 1, CVIPS_FORMAT_PNG = 2, CVIPS_FORMAT_AVIF = 3, CVIPS_FORMAT_JXL = 4 };

/* One encoded image opened by libvips: header read, no pixel decoded. It
 * owns a copy of the bytes (libvips reads them lazily). */
typedef struct cvips_image cvips_image;

/* NULL on failure, with *error_kind set: CVIPS_UNSUPPORTED when no loader
 * claims the bytes or the one that does is not in `allowed_loaders`
 * (CVIPS_LOADER_* bits), else CVIPS_DECODE. `allowed_loaders` exactly
 * CVIPS_LOADER_MAGICK calls ImageMagick's loader explicitly (never through
 * libvips' probing) and accepts what it decoded only when ImageMagick read
 * it as BMP or ICO; ImageMagick is never reached any other way. Error kinds never depend on the
 * text of libvips' error buffer (one per process, shared by all threads). */
cvips_image *cvips_image_open(const void *buffer, size_t length, int allowed_loaders, int *error_kind);
void cvips_image_free(cvips_image *image);
/* The header; `pages` counts frames for animated formats only (GIF, WebP). */
void cvips_image_header(const cvips_image *image, cvips_header_t *out);

/* One render, step by step. Swift decides every step — the boxes and
 * scales (the fit), the crops, the output format and whether alpha is
 * flattened — and calls them in order; C only makes the libvips calls and
 * hooks the deadline to libvips' kill flag. Every step returns CVIPS_OK or
 * an error kind, CVIPS_TIMEOUT once the deadline has passed (checked at the
 * start of each step, and while pixels are computed through the kill flag).
 * Intermediates belong to the render and go with cvips_render_free. */
typedef struct cvips_render cvips_render;

enum { CVIPS_CROP_NONE = 0, CVIPS_CROP_CENTRE = 1, CVIPS_CROP_ATTENTION = 2 };

typedef struct {
    int width;
    int height;          /* of one frame */
    int has_alpha;
    int pages;           /* frames of an animation (cvips_render_animation), 1 otherwise */
} cvips_render_info_t;

/* A render whose deadline is `timeout` seconds from now (<= 0: none). */
cvips_render *cvips_render_new(double timeout);
void cvips_render_free(cvips_render *render);

/* The decode: a shrink-on-load thumbnail of the first frame, auto-rotated,
 * into width x height (never enlarging), cropped to the box with
 * CVIPS_CROP_CENTRE or not at all (CVIPS_CROP_NONE; an attention crop is
 * cvips_render_crop's, after cvips_render_materialize, under the deadline).
 * fail_on=truncated: a cut or hollow image is an error, never a grey
 * thumbnail. From `source` when given (an ImageMagick image is resized as
 * loaded, never re-probed), else from `buffer` (borrowed for the call),
 * which a loader in `allowed_loaders` must claim (never ImageMagick). */
int cvips_render_thumbnail(cvips_render *render, const cvips_image *source, const void *buffer, size_t length,
                           int allowed_loaders, int width, int height, int crop);
/* The decode of an animated GIF or WebP, every frame (`buffer`, borrowed for
 * the call, claimed by the GIF or WebP loader and allowed): each frame shrunk
 * into box_width x box_height (never enlarging), then, where that is larger
 * than out_width x out_height, cropped at its centre (a cover fit). The
 * current image is the frames stacked top to bottom (libvips' page-height),
 * with the source's frame delays and loop count: a WebP save of it is
 * animated. Swift checks the frame limits from the header first. */
int cvips_render_animation(cvips_render *render, const void *buffer, size_t length, int allowed_loaders,
                           int box_width, int box_height, int out_width, int out_height);
/* The current image's size (of one frame), frames and whether it has alpha. */
void cvips_render_info(const cvips_render *render, cvips_render_info_t *out);
/* Computes the current image into memory under the deadline: several
 * outputs then start from the pixels instead of decoding again. */
int cvips_render_materialize(cvips_render *render);
/* A render that starts from this one's current image, with its deadline
 * (NULL when out of memory). The parent must outlive it. */
cvips_render *cvips_render_branch(const cvips_render *render);
/* Resizes by `scale` (lanczos3, as vips_resize does). */
int cvips_render_resize(cvips_render *render, double scale);
/* Crops to width x height: the centre (CVIPS_CROP_CENTRE) or the subject
 * libvips' attention finds (CVIPS_CROP_ATTENTION). */
int cvips_render_crop(cvips_render *render, int width, int height, int crop);
/* To 8-bit sRGB (CMYK, grey, 16-bit and Lab included). An embedded ICC
 * profile is not applied here: see cvips_render_profile_to_srgb. */
int cvips_render_srgb(cvips_render *render);
/* The current image's embedded ICC profile, borrowed: valid until
 * cvips_render_free (a branch's: its parent's). *data NULL and *length 0 when there is none.
 * (After a CMYK decode it is the CMYK profile libvips imported with.) */
void cvips_render_profile(const cvips_render *render, const void **data, size_t *length);
/* Converts the current RGB image (3 bands, or 4 with alpha) from its
 * embedded ICC profile to 8-bit sRGB (libvips' built-in profile, perceptual
 * intent), as libvips' icc_transform: wide-gamut sources keep their
 * colours. Swift decides when (the profile is RGB and not sRGB). Images
 * without a profile or with fewer bands are left as they are; so is one
 * whose profile lcms cannot use (rendered as before, uncorrected). */
int cvips_render_profile_to_srgb(cvips_render *render);
/* Flattens alpha onto `background` (0..255 RGB). */
int cvips_render_flatten(cvips_render *render, const double background[3]);
/* Computes the current 8-bit image into memory under the deadline and, when
 * its alpha band is 255 everywhere (every frame: libvips loads each GIF as
 * RGBA), drops that band: opaque alpha is not alpha. *dropped is 1 when it
 * was dropped. An image without alpha is left as it is (not computed). */
int cvips_render_drop_opaque_alpha(cvips_render *render, int *dropped);
/* Computes the image into memory under the deadline (decode errors surface
 * here, not inside the encoder), then encodes it as CVIPS_FORMAT_JPEG,
 * _WEBP, _PNG, _AVIF or _JXL (never _AUTO) with metadata stripped. `effort` is
 * the saver's option of that name (webpsave: the method 0..6; heifsave:
 * 0..9, libaom speed 9 - effort; jxlsave: libjxl's effort 1..9;
 * jpegsave: 1 progressive (`interlace`), 0 baseline); PNG ignores it. *out is
 * g_malloc'd: free it with cvips_free. The output carries no ICC profile:
 * it is sRGB (converted from another profile first where the source had
 * one), what a browser assumes of an untagged image, and libvips 8.14's
 * savers would otherwise write the image's profile despite "strip" (lcms'
 * ~7 KB sRGB after icc_transform). */
int cvips_render_save(cvips_render *render, int format, int quality, int effort, void **out, size_t *out_length);

/* Computes the current image (8-bit sRGB: call cvips_render_srgb first)
 * under the deadline and returns its pixels as RGBA rows, alpha 255 where
 * the image has none: placeholders (a ThumbHash, a dominant colour) are
 * computed from them. *out is g_malloc'd: free it with cvips_free. */
int cvips_render_rgba(cvips_render *render, void **out, size_t *out_length);

/* Tiles encoded images (NULL entries become blank cells) into one PNG,
 * `columns` per row, each scaled into a `cell` x `cell` square. */
int cvips_contact_sheet(const void *const *buffers, const size_t *lengths, int count, int cell, int columns,
                        void **out, size_t *out_length);

/* Whether the libtiff libvips reads TIFFs with has a decoder for
 * compression `scheme` (TIFFIsCODECConfigured): a valid TIFF in a scheme
 * it lacks is unsupported, not corrupt. */
int cvips_tiff_codec_configured(int scheme);

#endif
