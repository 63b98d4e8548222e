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

/*
 * The vector-batch GEMM in rows of C along n, for blocks whose C has its
 * n dims as one run (C(x, m, n) at c + cm[m] + x scw + n) and 1 <= N <=
 * 16: per element x of w, C_x = A_x B_x with A_x(m, k) read in place at
 * a + am[m] + ak[k] + x saw (broadcast) and B_x from a pack made by
 * eb_kern_vec_rows_pack, 8 rows of C by N columns in registers. Every
 * element of C is the same chain of multiply-adds as in
 * eb_kern_vec_gemm. K <= EB_VEC_ROWS_MAX_K. Only where
 * eb_gemm512_usable(). Where it pays: contract_exec.c.
 */
enum { EB_VEC_ROWS_MAX_N = 16, EB_VEC_ROWS_MAX_K = 512 };
void eb_kern_vec_rows_avx512(int64_t wb, int64_t M, int64_t N, int64_t K,
                             const double *a, const int64_t *am,
                             const int64_t *ak, int64_t saw,
                             const double *pbw, double *c,
                             const int64_t *cm, int64_t scw);

/* The pack of eb_kern_vec_rows_avx512: element x's B(k, n) at pbw[(x K
 * + k) N + n], from B(k, n) of element x at b + bk[k] + bn[n] + x (w of
 * unit stride in B), for wb elements; K N wb doubles. The next block's
 * first pfw elements (those at x + wb, pfw <= wb; 0: none) are prefetched
 * into L2 meanwhile. */
void eb_kern_vec_rows_pack(int64_t wb, int64_t K, int64_t N, const double *b,
                           const int64_t *bk, const int64_t *bn, double *pbw,
                           int64_t pfw);

#endif
