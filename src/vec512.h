/*
 * vec512: the vector-batch GEMM's blocks in AVX-512 registers, for CPUs
 * where eb_gemm512_usable() holds (the 4-wide blocks of kernels.c run
 * half of a chunk of 8 elements of w per vector there).
 *
 * Called by eb_kern_vec_gemm: same packed block, same C, the same chain of
 * multiply-adds per element of C as the AVX2 blocks (bit for bit), every
 * element of w of the block in one vector of 8 (the last chunk masked).
 */
#ifndef EB_VEC512_H
#define EB_VEC512_H

#include <stdint.h>

/* eb_kern_vec_gemm for a packed block of wb elements of w (kernels.h):
 * C[cm[m] + cn[n] + x scw] = sum_k A[m, k] B[k, n] of element x. Only
 * where eb_gemm512_usable(). */
void eb_kern_vec_packed_avx512(int64_t wb, int64_t M, int64_t N, int64_t K,
                               const double *pa, const double *pb, double *c,
                               const int64_t *cm, const int64_t *cn,
                               int64_t scw);

#endif
