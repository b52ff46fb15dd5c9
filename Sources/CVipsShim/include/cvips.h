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
    CVIPS_TIMEOUT = 5,       /* past options->timeout: stopped with libvips' kill flag */
};

enum { CVIPS_FIT_CONTAIN = 0, CVIPS_FIT_COVER = 1, CVIPS_FIT_SMART = 2 };
enum { CVIPS_FORMAT_JPEG = 0, CVIPS_FORMAT_WEBP = 1, CVIPS_FORMAT_PNG = 2, CVIPS_FORMAT_AVIF = 3, CVIPS_FORMAT_AUTO = 4 };

typedef struct {
    int width;                   /* bounding box */
    int height;
    int fit;                     /* CVIPS_FIT_* */
    int format;                  /* CVIPS_FORMAT_* */
    int quality;                 /* 1..100 */
    double background[3];        /* 0..255, for flattening alpha */
    double timeout;              /* seconds the decode and encode may take; past it the
                                    image's kill flag is set and the render ends with
                                    CVIPS_TIMEOUT (<= 0: no deadline) */
} cvips_render_options_t;

typedef struct {
    int width;
    int height;
    int format;                  /* the format written (auto resolved) */
    int has_alpha;
} cvips_render_result_t;

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

/* Decodes, auto-rotates, converts to sRGB (CMYK too), shrinks on load into
 * the box (never enlarges), crops for cover, flattens alpha when the output
 * has none, strips metadata and encodes. The caller checks the limits from
 * the header first. Returns CVIPS_OK and a g_malloc'd buffer (free with
 * cvips_free), or an error kind; the message is in the libvips error buffer
 * (take it with cvips_error_take). */
int cvips_image_render(cvips_image *image, const cvips_render_options_t *options,
                       void **out, size_t *out_length, cvips_render_result_t *result);

/* The fast path for single-frame formats whose size the caller already read
 * from the header (and checked against its limits): the same as
 * cvips_image_open + cvips_image_render, without the copy of the bytes and
 * the extra header read. `buffer` is only borrowed for the call. */
int cvips_render_buffer(const void *buffer, size_t length, int allowed_loaders, const cvips_render_options_t *options,
                        void **out, size_t *out_length, cvips_render_result_t *result);

/* Several outputs from one decode: the image is decoded once (shrink-on-
 * load) at the scale the most demanding output needs, held in memory, and
 * each output is resized from it and finished as by cvips_image_render.
 * Returns CVIPS_OK when the decode worked; each output then has its own
 * status in statuses[i] (and outs[i], free with cvips_free, when CVIPS_OK).
 * Else the decode's error kind, and no output. */
int cvips_image_render_many(cvips_image *image, const cvips_render_options_t *options, int count,
                            void **outs, size_t *out_lengths, cvips_render_result_t *results, int *statuses);

/* Tiles encoded images (NULL entries become blank cells) into one PNG,
 * `columns` per row, each scaled into a `cell` x `cell` square. */
int cvips_contact_sheet(const void *const *buffers, const size_t *lengths, int count, int cell, int columns,
                        void **out, size_t *out_length);

#endif
