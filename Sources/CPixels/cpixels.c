#include "cpixels.h"
#include <string.h>

/* Clang/GCC vector types: 8 floats (two SSE registers on baseline x86-64,
 * one AVX register in the x86-64-v3 clone), 4 floats (one RGB pixel and a
 * spare lane), 8 bytes (loaded with memcpy: no alignment assumed). */
typedef float cpix_f8 __attribute__((vector_size(32)));
typedef float cpix_f4 __attribute__((vector_size(16)));
typedef uint8_t cpix_u8x8 __attribute__((vector_size(8)));
typedef int32_t cpix_i8 __attribute__((vector_size(32)));

static inline uint8_t clamp_byte(float v) {
    v += 0.5f;
    if (v <= 0.0f) return 0;
    if (v >= 255.0f) return 255;
    return (uint8_t) v;
}

/* `count` sums to bytes as clamp_byte does (+0.5, clamped to 0...255,
 * truncated), 8 at a time. */
static inline void to_bytes(const float *sums, int count, uint8_t *out) {
    int i = 0;
    const cpix_f8 half = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    const cpix_f8 zero = {0};
    const cpix_f8 top = {255, 255, 255, 255, 255, 255, 255, 255};
    for (; i + 8 <= count; i += 8) {
        cpix_f8 v;
        memcpy(&v, sums + i, sizeof v);
        v += half;
        v = __builtin_elementwise_max(v, zero);
        v = __builtin_elementwise_min(v, top);
        cpix_u8x8 b = __builtin_convertvector(v, cpix_u8x8);
        memcpy(out + i, &b, sizeof b);
    }
    for (; i < count; i++) out[i] = clamp_byte(sums[i]);
}

/* x86-64 with glibc: a second copy for x86-64-v3 (AVX2, FMA), chosen once
 * at load time (an ifunc); 600->300 RGB measured 3.65 -> 2.72 ms here. Both
 * passes were bound by the latency of one chain of dependent multiply-adds
 * (13 taps, ~4 cycles each): four independent sums at a time (four 8-sample
 * column blocks, four output pixels) took it from 2.43 to 1.59 ms (fastest
 * of 400, one core), each sum in the same order as before: the same bytes.
 * The row pass then read its pixels straight from `column` (no copy into
 * 4-float pixels) and turned its sums into bytes 8 at a time (no scalar
 * clamp per sample): 1.20 -> 0.88 ms, the same bytes.
 * The default copy is the baseline build, for any x86-64. Not under the
 * sanitizers (an ifunc resolver runs before their runtimes start). */
#if defined(__x86_64__) && defined(__linux__) && defined(__clang__) && !__has_feature(thread_sanitizer) \
    && !__has_feature(address_sanitizer)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void cpix_resample(const uint8_t *src, int sw, int channels, uint8_t *dst, int tw, int th,
                   const int32_t *hstart, const int32_t *hcount, const float *hweights, int htaps,
                   const int32_t *vstart, const int32_t *vcount, const float *vweights, int vtaps,
                   float *column, float *sums) {
    const int row_samples = sw * channels;
    const int blocks = row_samples / 8;
    for (int y = 0; y < th; y++) {
        /* Columns first: the source rows this output row sees, weighted,
         * 8 samples per vector, every tap summed in a register (one store
         * per 8 samples, not one per tap), four blocks at a time. */
        const int first = vstart[y], n = vcount[y];
        const float *vw = vweights + (long) y * vtaps;
        const uint8_t *s = src + (long) first * row_samples;
        int b = 0;
        for (; b + 4 <= blocks; b += 4) {
            cpix_f8 acc0 = {0}, acc1 = {0}, acc2 = {0}, acc3 = {0};
            for (int k = 0; k < n; k++) {
                const uint8_t *row = s + (long) k * row_samples + b * 8;
                cpix_u8x8 b0, b1, b2, b3;
                memcpy(&b0, row, 8);
                memcpy(&b1, row + 8, 8);
                memcpy(&b2, row + 16, 8);
                memcpy(&b3, row + 24, 8);
                acc0 += vw[k] * __builtin_convertvector(b0, cpix_f8);
                acc1 += vw[k] * __builtin_convertvector(b1, cpix_f8);
                acc2 += vw[k] * __builtin_convertvector(b2, cpix_f8);
                acc3 += vw[k] * __builtin_convertvector(b3, cpix_f8);
            }
            memcpy(column + b * 8, &acc0, sizeof acc0);
            memcpy(column + b * 8 + 8, &acc1, sizeof acc1);
            memcpy(column + b * 8 + 16, &acc2, sizeof acc2);
            memcpy(column + b * 8 + 24, &acc3, sizeof acc3);
        }
        for (; b < blocks; b++) {
            cpix_f8 acc = {0};
            for (int k = 0; k < n; k++) {
                cpix_u8x8 bytes;
                memcpy(&bytes, s + (long) k * row_samples + b * 8, sizeof bytes);
                acc += vw[k] * __builtin_convertvector(bytes, cpix_f8);
            }
            memcpy(column + b * 8, &acc, sizeof acc);
        }
        for (int i = blocks * 8; i < row_samples; i++) {
            float a = 0;
            for (int k = 0; k < n; k++) a += vw[k] * (float) s[(long) k * row_samples + i];
            column[i] = a;
        }
        /* Then rows: each output pixel from its source pixels, weighted. */
        uint8_t *out = dst + (long) y * tw * channels;
        if (channels == 3) {
            /* Each pixel's 3 samples loaded as a 4-float vector straight
             * from `column` (the 4th lane is the next pixel's red, summed
             * and never stored), four output pixels at a time where their
             * tap counts agree (everywhere but near the edges); sums go to a
             * float row (`sums`), turned into bytes 8 at a time. */
            int x = 0;
            while (x < tw) {
                const int n4 = hcount[x];
                if (x + 4 > tw || hcount[x + 1] != n4 || hcount[x + 2] != n4 || hcount[x + 3] != n4) {
                    const float *p = column + (long) hstart[x] * 3, *hw = hweights + (long) x * htaps;
                    cpix_f4 acc = {0};
                    for (int k = 0; k < n4; k++) {
                        cpix_f4 v;
                        memcpy(&v, p + k * 3, sizeof v);
                        acc += hw[k] * v;
                    }
                    memcpy(sums + x * 3, &acc, sizeof acc);
                    x++;
                    continue;
                }
                const float *hw = hweights + (long) x * htaps;
                const float *p0 = column + (long) hstart[x] * 3, *p1 = column + (long) hstart[x + 1] * 3;
                const float *p2 = column + (long) hstart[x + 2] * 3, *p3 = column + (long) hstart[x + 3] * 3;
                cpix_f4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
                for (int k = 0; k < n4; k++) {
                    cpix_f4 v0, v1, v2, v3;
                    memcpy(&v0, p0 + k * 3, sizeof v0);
                    memcpy(&v1, p1 + k * 3, sizeof v1);
                    memcpy(&v2, p2 + k * 3, sizeof v2);
                    memcpy(&v3, p3 + k * 3, sizeof v3);
                    a0 += hw[k] * v0;
                    a1 += hw[htaps + k] * v1;
                    a2 += hw[2 * htaps + k] * v2;
                    a3 += hw[3 * htaps + k] * v3;
                }
                memcpy(sums + x * 3, &a0, sizeof a0);
                memcpy(sums + x * 3 + 3, &a1, sizeof a1);
                memcpy(sums + x * 3 + 6, &a2, sizeof a2);
                memcpy(sums + x * 3 + 9, &a3, sizeof a3);
                x += 4;
            }
            to_bytes(sums, tw * 3, out);
        } else {
            /* One sample per pixel (grey, or one plane of YCbCr): each output
             * a dot product, 8 taps per vector (the taps past its count
             * masked to zero: they are the next output's weights, or the
             * spare floats at the end of `hweights`; `column` has 8 spare
             * zeros), the 8 lanes summed at the end, the sums turned into
             * bytes 8 at a time. A sum per tap in one chain was bound by
             * the multiply-add's latency: 600->300 one channel took 0.67
             * ms, now 0.46 (fastest of 6 runs of 1,000, one core). */
            const cpix_i8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
            for (int x = 0; x < tw; x++) {
                const float *hw = hweights + (long) x * htaps;
                const float *p = column + hstart[x];
                const int n = hcount[x];
                cpix_f8 acc = {0};
                int k = 0;
                for (; k + 8 <= n; k += 8) {
                    cpix_f8 w, v;
                    memcpy(&w, hw + k, sizeof w);
                    memcpy(&v, p + k, sizeof v);
                    acc += w * v;
                }
                if (k < n) {
                    cpix_f8 w, v;
                    memcpy(&w, hw + k, sizeof w);
                    memcpy(&v, p + k, sizeof v);
                    const cpix_i8 keep = lane < (n - k);
                    cpix_i8 bits;
                    memcpy(&bits, &w, sizeof bits);
                    bits &= keep;
                    memcpy(&w, &bits, sizeof w);
                    acc += w * v;
                }
                const cpix_f4 half = __builtin_shufflevector(acc, acc, 0, 1, 2, 3) + __builtin_shufflevector(acc, acc, 4, 5, 6, 7);
                sums[x] = half[0] + half[1] + half[2] + half[3];
            }
            to_bytes(sums, tw, out);
        }
    }
}

/* Fixed point, 16 fraction bits: BT.601 (JFIF) coefficients. */
enum {
    CPIX_YR = 19595, CPIX_YG = 38470, CPIX_YB = 7471,        /* 0.299, 0.587, 0.114 */
    CPIX_UR = -11059, CPIX_UG = -21709, CPIX_UB = 32768,     /* -0.168736, -0.331264, 0.5 */
    CPIX_VR = 32768, CPIX_VG = -27439, CPIX_VB = -5329       /* 0.5, -0.418688, -0.081312 */
};

static inline uint8_t fixed_to_byte(int32_t v) {
    v = (v + 32768) >> 16;
    return (uint8_t) (v < 0 ? 0 : v > 255 ? 255 : v);
}

#if defined(__x86_64__) && defined(__linux__) && defined(__clang__) && !__has_feature(thread_sanitizer) \
    && !__has_feature(address_sanitizer)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void cpix_rgb_to_ycbcr420(const uint8_t *rgb, int width, int height,
                          uint8_t *y, int y_stride, uint8_t *cb, int cb_stride, uint8_t *cr, int cr_stride) {
    const long row = (long) width * 3;
    for (int j = 0; j < height; j++) {
        const uint8_t *p = rgb + j * row;
        uint8_t *out = y + (long) j * y_stride;
        for (int i = 0; i < width; i++) {
            out[i] = fixed_to_byte(CPIX_YR * p[3 * i] + CPIX_YG * p[3 * i + 1] + CPIX_YB * p[3 * i + 2]);
        }
    }
    const int cw = (width + 1) / 2, ch = (height + 1) / 2;
    for (int j = 0; j < ch; j++) {
        const uint8_t *p0 = rgb + 2L * j * row;
        const uint8_t *p1 = 2 * j + 1 < height ? p0 + row : p0;
        uint8_t *u = cb + (long) j * cb_stride, *v = cr + (long) j * cr_stride;
        for (int i = 0; i < cw; i++) {
            const int a = 6 * i, b = 2 * i + 1 < width ? a + 3 : a;
            /* Sums of 4 samples (a lone edge pixel counted twice): the
             * block's mean is sum / 4, folded into the shift below. */
            const int32_t r = p0[a] + p0[b] + p1[a] + p1[b];
            const int32_t g = p0[a + 1] + p0[b + 1] + p1[a + 1] + p1[b + 1];
            const int32_t bl = p0[a + 2] + p0[b + 2] + p1[a + 2] + p1[b + 2];
            const int32_t cu = (CPIX_UR * r + CPIX_UG * g + CPIX_UB * bl + (128 << 18) + (1 << 17)) >> 18;
            const int32_t cv = (CPIX_VR * r + CPIX_VG * g + CPIX_VB * bl + (128 << 18) + (1 << 17)) >> 18;
            u[i] = (uint8_t) (cu < 0 ? 0 : cu > 255 ? 255 : cu);
            v[i] = (uint8_t) (cv < 0 ? 0 : cv > 255 ? 255 : cv);
        }
    }
}
