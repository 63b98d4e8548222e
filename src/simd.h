/* simd: register shuffles the hand-vectorized kernels share. */
#ifndef EB_SIMD_H
#define EB_SIMD_H

#include <immintrin.h>

/* The 4 x 4 transpose of r[0..3] in place: r[j][x] <-> r[x][j]. */
__attribute__((target("avx2"), always_inline)) static inline void
eb_transpose4(__m256d *r)
{
    __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]),
            t1 = _mm256_unpackhi_pd(r[0], r[1]),
            t2 = _mm256_unpacklo_pd(r[2], r[3]),
            t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

#endif
