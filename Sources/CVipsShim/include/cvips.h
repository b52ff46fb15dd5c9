#ifndef CVIPS_H
#define CVIPS_H
/* Non-variadic, glib-free wrappers over libvips: Swift sees only plain C types. */
#include <stddef.h>

/* Process-wide setup, once: vector code (liborc) off, operation cache off,
 * libvips concurrency 1, untrusted loaders blocked. Returns 0 on success. */
int cvips_init(const char *argv0);
const char *cvips_version(void);

/* Takes the libvips error buffer (malloc'd copy, free with cvips_free) and clears it. */
char *cvips_error_take(void);
void cvips_free(void *pointer);

/* A generated test image: a gradient, 3 (RGB) or 4 (RGBA) bands, saved with a
 * libvips suffix (".png", ".jpg[Q=80]", ".gif", ".webp", ".tif", ".heic",
 * ".avif", ".jxl") or "magick:FORMAT" (e.g. "magick:bmp", "magick:ico").
 * Returns 0 and a g_malloc'd buffer (free with cvips_free). For tests and the
 * demo: it unblocks the JPEG XL and ImageMagick *savers* (never loaders). */
int cvips_test_image(int width, int height, int bands, const char *suffix, void **out, size_t *out_length);

typedef struct {
    int width;
    int height;          /* of one page */
    int bands;
    int pages;           /* frames of an animation, 1 otherwise */
    int orientation;     /* EXIF orientation, 1 when absent */
    int has_alpha;
    char loader[64];     /* e.g. "jpegload_buffer" */
} cvips_header_t;

/* Reads only the header of an encoded image (no pixels decoded). */
int cvips_header(const void *buffer, size_t length, cvips_header_t *out);

#endif
