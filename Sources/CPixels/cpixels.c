#include "cpixels.h"
#include <string.h>

/* Clang/GCC vector types: 8 floats (two SSE registers on baseline x86-64,
 * one AVX register in the x86-64-v3 clone), 8 bytes (loaded with memcpy: no
 * alignment assumed). */
typedef float cpix_f8 __attribute__((vector_size(32)));
typedef uint8_t cpix_u8x8 __attribute__((vector_size(8)));

static inline uint8_t clamp_byte(float v) {
    v += 0.5f;
    if (v <= 0.0f) return 0;
    if (v >= 255.0f) return 255;
    return (uint8_t) v;
}

/* The column pass of one output row: `samples` weighted sums of the `n`
 * source rows from `s` (rows of `samples` bytes), 8 samples per vector,
 * every tap summed in a register (one store per 8 samples, not one per
 * tap), four blocks at a time (four independent chains of multiply-adds).
 * Inlined, as transpose8, so that each clone below compiles it for its own
 * target. */
static inline __attribute__((always_inline)) void column_sums(const uint8_t *s, int samples, const float *vw, int n,
                                                              float *out) {
    const long stride = samples;
    const int blocks = samples / 8;
    int b = 0;
    for (; b + 4 <= blocks; b += 4) {
        cpix_f8 acc0 = {0}, acc1 = {0}, acc2 = {0}, acc3 = {0};
        for (int k = 0; k < n; k++) {
            const uint8_t *row = s + k * stride + b * 8;
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
        memcpy(out + b * 8, &acc0, sizeof acc0);
        memcpy(out + b * 8 + 8, &acc1, sizeof acc1);
        memcpy(out + b * 8 + 16, &acc2, sizeof acc2);
        memcpy(out + b * 8 + 24, &acc3, sizeof acc3);
    }
    for (; b < blocks; b++) {
        cpix_f8 acc = {0};
        for (int k = 0; k < n; k++) {
            cpix_u8x8 bytes;
            memcpy(&bytes, s + k * stride + b * 8, sizeof bytes);
            acc += vw[k] * __builtin_convertvector(bytes, cpix_f8);
        }
        memcpy(out + b * 8, &acc, sizeof acc);
    }
    for (int i = blocks * 8; i < samples; i++) {
        float a = 0;
        for (int k = 0; k < n; k++) a += vw[k] * (float) s[k * stride + i];
        out[i] = a;
    }
}

/* An 8x8 transpose of 8 vectors: afterwards v[j] lane r is what v[r] lane j
 * was (the AVX unpack / shuffle / 128-bit permute sequence). */
static inline __attribute__((always_inline)) void transpose8(cpix_f8 v[8]) {
    const cpix_f8 t0 = __builtin_shufflevector(v[0], v[1], 0, 8, 1, 9, 4, 12, 5, 13);
    const cpix_f8 t1 = __builtin_shufflevector(v[0], v[1], 2, 10, 3, 11, 6, 14, 7, 15);
    const cpix_f8 t2 = __builtin_shufflevector(v[2], v[3], 0, 8, 1, 9, 4, 12, 5, 13);
    const cpix_f8 t3 = __builtin_shufflevector(v[2], v[3], 2, 10, 3, 11, 6, 14, 7, 15);
    const cpix_f8 t4 = __builtin_shufflevector(v[4], v[5], 0, 8, 1, 9, 4, 12, 5, 13);
    const cpix_f8 t5 = __builtin_shufflevector(v[4], v[5], 2, 10, 3, 11, 6, 14, 7, 15);
    const cpix_f8 t6 = __builtin_shufflevector(v[6], v[7], 0, 8, 1, 9, 4, 12, 5, 13);
    const cpix_f8 t7 = __builtin_shufflevector(v[6], v[7], 2, 10, 3, 11, 6, 14, 7, 15);
    const cpix_f8 s0 = __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
    const cpix_f8 s1 = __builtin_shufflevector(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
    const cpix_f8 s2 = __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
    const cpix_f8 s3 = __builtin_shufflevector(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
    const cpix_f8 s4 = __builtin_shufflevector(t4, t6, 0, 1, 8, 9, 4, 5, 12, 13);
    const cpix_f8 s5 = __builtin_shufflevector(t4, t6, 2, 3, 10, 11, 6, 7, 14, 15);
    const cpix_f8 s6 = __builtin_shufflevector(t5, t7, 0, 1, 8, 9, 4, 5, 12, 13);
    const cpix_f8 s7 = __builtin_shufflevector(t5, t7, 2, 3, 10, 11, 6, 7, 14, 15);
    v[0] = __builtin_shufflevector(s0, s4, 0, 1, 2, 3, 8, 9, 10, 11);
    v[1] = __builtin_shufflevector(s1, s5, 0, 1, 2, 3, 8, 9, 10, 11);
    v[2] = __builtin_shufflevector(s2, s6, 0, 1, 2, 3, 8, 9, 10, 11);
    v[3] = __builtin_shufflevector(s3, s7, 0, 1, 2, 3, 8, 9, 10, 11);
    v[4] = __builtin_shufflevector(s0, s4, 4, 5, 6, 7, 12, 13, 14, 15);
    v[5] = __builtin_shufflevector(s1, s5, 4, 5, 6, 7, 12, 13, 14, 15);
    v[6] = __builtin_shufflevector(s2, s6, 4, 5, 6, 7, 12, 13, 14, 15);
    v[7] = __builtin_shufflevector(s3, s7, 4, 5, 6, 7, 12, 13, 14, 15);
}

/* Eight output rows at a time, lane r of every vector being output row
 * y0 + r. Columns first: each of the 8 rows' column sums (column_sums, into
 * `rows8`), turned 8x8 so that columns[i * 8 + r] is sample i of output row
 * y0 + r. Then rows: sample c of output pixel x, for the 8 rows at once, is
 * a sum of whole vectors, a weight per tap times the column's vector; sums
 * turned back to rows 8 samples at a time and made bytes as clamp_byte
 * does. A loop per output row, its row pass a dot product per pixel (one
 * channel: 8 lanes added across at the end; RGB: a 4-float vector per
 * pixel, 3 lanes used), was bound by the row pass: 600->300 took 0.42 ms
 * for one channel and 0.96 ms for RGB. Each sum is over its taps in order
 * (within 1 of the sums in Double: FastJPEGTests).
 *
 * x86-64 with glibc: a second copy for x86-64-v3 (AVX2, FMA), chosen once
 * at load time (an ifunc). The default copy is the baseline build, for any
 * x86-64. Not under the sanitizers (an ifunc resolver runs before their
 * runtimes start). */
#if defined(__x86_64__) && defined(__linux__) && defined(__clang__) && !__has_feature(thread_sanitizer) \
    && !__has_feature(address_sanitizer)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void cpix_resample(const uint8_t *src, int sw, int channels, uint8_t *dst, int tw, int th,
                   const int32_t *hstart, const int32_t *hcount, const float *hweights, int htaps,
                   const int32_t *vstart, const int32_t *vcount, const float *vweights, int vtaps,
                   float *columns, float *sums) {
    const int samples = sw * channels, out_samples = tw * channels;
    const int blocks = samples / 8;
    float *rows8 = columns + (long) samples * 8;
    for (int y0 = 0; y0 < th; y0 += 8) {
        const int rows = th - y0 < 8 ? th - y0 : 8;
        for (int r = 0; r < 8; r++) {
            float *row = rows8 + (long) r * samples;
            if (r < rows) {
                column_sums(src + (long) vstart[y0 + r] * samples, samples, vweights + (long) (y0 + r) * vtaps,
                            vcount[y0 + r], row);
            } else {
                memset(row, 0, sizeof(float) * (size_t) samples);
            }
        }
        for (int b = 0; b < blocks; b++) {
            cpix_f8 v[8];
            for (int r = 0; r < 8; r++) memcpy(&v[r], rows8 + (long) r * samples + b * 8, sizeof v[r]);
            transpose8(v);
            for (int j = 0; j < 8; j++) memcpy(columns + (long) (b * 8 + j) * 8, &v[j], sizeof v[j]);
        }
        for (int i = blocks * 8; i < samples; i++) {
            for (int r = 0; r < 8; r++) columns[(long) i * 8 + r] = rows8[(long) r * samples + i];
        }
        /* One channel: four output pixels at a time where their tap counts
         * agree (four independent chains of multiply-adds); RGB, and near
         * the edges: one pixel at a time (RGB's three channels are three
         * chains). */
        int x = 0;
        while (x < tw) {
            const int n = hcount[x];
            const float *hw = hweights + (long) x * htaps;
            if (channels == 1 && x + 4 <= tw && hcount[x + 1] == n && hcount[x + 2] == n && hcount[x + 3] == n) {
                const float *p0 = columns + (long) hstart[x] * 8, *p1 = columns + (long) hstart[x + 1] * 8;
                const float *p2 = columns + (long) hstart[x + 2] * 8, *p3 = columns + (long) hstart[x + 3] * 8;
                cpix_f8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
                for (int k = 0; k < n; k++) {
                    cpix_f8 v0, v1, v2, v3;
                    memcpy(&v0, p0 + k * 8, sizeof v0);
                    memcpy(&v1, p1 + k * 8, sizeof v1);
                    memcpy(&v2, p2 + k * 8, sizeof v2);
                    memcpy(&v3, p3 + k * 8, sizeof v3);
                    a0 += hw[k] * v0;
                    a1 += hw[htaps + k] * v1;
                    a2 += hw[2 * htaps + k] * v2;
                    a3 += hw[3 * htaps + k] * v3;
                }
                memcpy(sums + (long) x * 8, &a0, sizeof a0);
                memcpy(sums + (long) x * 8 + 8, &a1, sizeof a1);
                memcpy(sums + (long) x * 8 + 16, &a2, sizeof a2);
                memcpy(sums + (long) x * 8 + 24, &a3, sizeof a3);
                x += 4;
            } else if (channels == 3) {
                const float *p = columns + (long) hstart[x] * 24;
                cpix_f8 a0 = {0}, a1 = {0}, a2 = {0};
                for (int k = 0; k < n; k++) {
                    cpix_f8 v0, v1, v2;
                    memcpy(&v0, p + k * 24, sizeof v0);
                    memcpy(&v1, p + k * 24 + 8, sizeof v1);
                    memcpy(&v2, p + k * 24 + 16, sizeof v2);
                    a0 += hw[k] * v0;
                    a1 += hw[k] * v1;
                    a2 += hw[k] * v2;
                }
                memcpy(sums + (long) x * 24, &a0, sizeof a0);
                memcpy(sums + (long) x * 24 + 8, &a1, sizeof a1);
                memcpy(sums + (long) x * 24 + 16, &a2, sizeof a2);
                x++;
            } else {
                const float *p = columns + (long) hstart[x] * 8;
                cpix_f8 a = {0};
                for (int k = 0; k < n; k++) {
                    cpix_f8 v;
                    memcpy(&v, p + k * 8, sizeof v);
                    a += hw[k] * v;
                }
                memcpy(sums + (long) x * 8, &a, sizeof a);
                x++;
            }
        }
        /* Back to rows, 8 samples at a time. */
        const cpix_f8 half = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
        const cpix_f8 zero = {0};
        const cpix_f8 top = {255, 255, 255, 255, 255, 255, 255, 255};
        int i = 0;
        for (; i + 8 <= out_samples; i += 8) {
            cpix_f8 v[8];
            for (int j = 0; j < 8; j++) memcpy(&v[j], sums + (long) (i + j) * 8, sizeof v[j]);
            transpose8(v);
            for (int r = 0; r < rows; r++) {
                cpix_f8 t = __builtin_elementwise_min(__builtin_elementwise_max(v[r] + half, zero), top);
                cpix_u8x8 b = __builtin_convertvector(t, cpix_u8x8);
                memcpy(dst + (long) (y0 + r) * out_samples + i, &b, sizeof b);
            }
        }
        for (; i < out_samples; i++) {
            for (int r = 0; r < rows; r++) dst[(long) (y0 + r) * out_samples + i] = clamp_byte(sums[(long) i * 8 + r]);
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
