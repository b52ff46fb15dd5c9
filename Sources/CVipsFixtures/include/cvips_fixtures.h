#ifndef CVIPS_FIXTURES_H
#define CVIPS_FIXTURES_H
/* Test and benchmark fixtures made with libvips. Not part of the product:
 * only test targets and the benchmarks link this. */
#include <stddef.h>

/* A generated test image: a gradient, 3 (RGB) or 4 (RGBA) bands, saved with a
 * libvips suffix (".png", ".jpg[Q=80]", ".gif", ".webp", ".tif", ".heic",
 * ".avif", ".jxl") or "magick:FORMAT" (e.g. "magick:bmp", "magick:ico").
 * Returns 0 and a g_malloc'd buffer (free with cvips_free). It unblocks the
 * JPEG XL and ImageMagick *savers* (never loaders), in the test process only. */
int cvips_test_image(int width, int height, int bands, const char *suffix, void **out, size_t *out_length);

/* A CMYK JPEG (with or without an embedded ICC profile), and a JPEG carrying
 * EXIF orientation `orientation` (the pixels are not rotated). */
int cvips_test_cmyk_jpeg(int width, int height, int with_profile, void **out, size_t *out_length);
int cvips_test_oriented_jpeg(int width, int height, int orientation, void **out, size_t *out_length);
/* A zone plate (concentric rings whose frequency rises to the Nyquist limit
 * at the edges: what a downscale that aliases turns into moire), as a JPEG
 * at `quality`: grey, or coloured through libvips' false colour. */
int cvips_test_zone_jpeg(int width, int height, int colour, int quality, void **out, size_t *out_length);
/* An animated GIF of `frames` frames, each width x height. */
int cvips_test_animated_gif(int width, int height, int frames, void **out, size_t *out_length);
/* An animation of `frames` frames of width x height (each its own grey, a white block moving right), frame i shown
 * for delays[i] ms, looping forever: a GIF, or an animated WebP (`webp`). */
int cvips_test_animation(int width, int height, int frames, int webp, const int *delays, void **out, size_t *out_length);
/* 8-bit pixels (`bands` interleaved: 1 grey, 3 sRGB, 4 sRGBA) encoded by
 * libvips' saver for CVIPS_FORMAT_WEBP, _AVIF or _JPEG with the options the
 * product's save step uses (`effort` is the saver's): the libvips side of
 * encoder comparisons. */
int cvips_test_save_pixels(const void *pixels, int width, int height, int bands, int format, int quality,
                           int effort, void **out, size_t *out_length);

/* Colour management fixtures. A colourful image (red across, green down,
 * blue against red: saturated corners) whose numbers are in `space`,
 * tagged with that space's ICC profile and saved with a libvips suffix
 * (".jpg[Q=95]", ".png") that keeps it; `depth` 8 or 16 (PNG only),
 * `alpha` non-zero adds an opaque alpha band (PNG only):
 *   "p3": converted from sRGB to libvips' built-in Display P3 profile
 *         (as `vips icc_transform in out p3 --embedded`);
 *   "adobe": the same numbers tagged with an Adobe RGB (1998) profile made
 *         by lcms2 (D65, gamma 563/256): they mean more saturated colours;
 *   "srgb": converted to (and tagged with) libvips' built-in sRGB profile;
 *   "none": untagged.
 * An unknown space fails. */
int cvips_test_tagged_image(int width, int height, const char *space, int depth, int alpha, const char *suffix,
                            void **out, size_t *out_length);
/* The Adobe RGB (1998) profile "adobe" tags with (g_malloc'd). */
int cvips_test_adobe_rgb_profile(void **out, size_t *out_length);
/* The colour-managed reference of an encoded image: libvips' icc_transform
 * of the whole image to sRGB with its embedded profile (perceptual intent,
 * the one every profile carries), then a thumbnail
 * into width x height (never enlarging), as a PNG without a profile. */
int cvips_test_managed_thumbnail(const void *buffer, size_t length, int width, int height,
                                 void **out, size_t *out_length);
/* The pixels of an encoded image as libvips decodes them (no colour
 * transform): 8-bit rows of *bands samples. g_malloc'd. */
int cvips_test_pixels(const void *buffer, size_t length, int *width, int *height, int *bands,
                      void **out, size_t *out_length);

/* TIFF fixtures (issue 36): the cvips_test_image gradient (3 bands, values
 * 0...255, width x height) as a TIFF of `kind`:
 *   0: a tiled pyramid with sub-IFDs (each level half the one before);
 *   1: unsigned 16-bit, tagged only sRGB (not RGB16): x * 257;
 *   2: signed 16-bit: x * 257 - 32768;  3: unsigned 32-bit: x * 16843009;
 *   4: signed 32-bit: x * 16843009 - 2^31;
 *   5: an OME-TIFF: three pages (the gradient, then its negative twice) under
 *      an OME-XML ImageDescription.
 * Each integer kind spans its whole range as the 8-bit image spans 0...255. */
int cvips_test_tiff(int width, int height, int kind, void **out, size_t *out_length);

#endif
