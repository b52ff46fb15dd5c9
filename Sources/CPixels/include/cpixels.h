#ifndef CPIXELS_H
#define CPIXELS_H
/* The fast path's hot loops: a separable resample of 8-bit interleaved
 * pixels with precomputed taps (Resampler.swift computes and memoizes
 * them), and RGB to the YCbCr 4:2:0 planes an AV1 encoder takes. In C so
 * that they run at a usable speed in debug builds too (the reliability
 * suite and the tests run debug binaries; Swift at -Onone made the resample
 * about 20x slower than libjpeg's decode). Pure arithmetic: no allocation,
 * no library, no error path. */
#include <stdint.h>

/* For output column x: hcount[x] weights hweights[x * htaps + k] applied to
 * source columns hstart[x] + k; rows likewise with v*. `channels` 1 (grey,
 * or one plane of YCbCr) or 3 (RGB), interleaved in rows of sw * channels
 * bytes. `columns` is scratch of sw * channels * 16 floats, `sums` of
 * tw * channels * 8 (eight output rows at a time). */
void cpix_resample(const uint8_t *src, int sw, int channels, uint8_t *dst, int tw, int th,
                   const int32_t *hstart, const int32_t *hcount, const float *hweights, int htaps,
                   const int32_t *vstart, const int32_t *vcount, const float *vweights, int vtaps,
                   float *columns, float *sums);

/* 8-bit RGB (`rgb`, rows of `width * 3` bytes) to YCbCr 4:2:0 planes:
 * BT.601 matrix, full range (JPEG's own YCbCr, and what AVIFEncoder's
 * `colr` box says: matrix 6, full range). Y per pixel; Cb and Cr, of
 * (width + 1) / 2 x (height + 1) / 2 samples, from the mean of each 2x2
 * block's RGB (the pixels the block has, at odd edges). Rounded to nearest;
 * planes may have strides larger than their width. */
void cpix_rgb_to_ycbcr420(const uint8_t *rgb, int width, int height,
                          uint8_t *y, int y_stride, uint8_t *cb, int cb_stride, uint8_t *cr, int cr_stride);

#endif
