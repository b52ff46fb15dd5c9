/* Shared by the shim's C files; not part of the interface Swift sees. */
#ifndef CVIPS_INTERNAL_H
#define CVIPS_INTERNAL_H
#include "cvips.h"
#include <vips/vips.h>

struct cvips_image {
    VipsImage *image;
    void *buffer;
    size_t length;
    char loader[64];
    int magick;          /* decoded by ImageMagick: rendered from `image`, never re-probed */
};

/* The CVIPS_LOADER_* bit of a loader class name; 0 for any other loader. */
int cvips__loader_bit(const char *loader);
/* To 8-bit sRGB (CMYK, grey, 16-bit and Lab included); `parent` owns the intermediates. */
int cvips__to_srgb(VipsImage *parent, VipsImage *in, VipsImage **out);
/* `in` (3 bands or more) through its embedded ICC profile to 8-bit sRGB;
 * *out is `in` itself when it has no profile, fewer bands, or a profile lcms
 * cannot use. Lazy: pixels are transformed when computed. */
void cvips__profile_to_srgb(VipsImage *parent, VipsImage *in, VipsImage **out);
/* Whether `in` carries an ICC profile whose data colour space is RGB. */
int cvips__has_rgb_profile(VipsImage *in);

#endif
