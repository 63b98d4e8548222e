/*
 * gemm512: the small GEMM's row kernel in AVX-512 registers, for CPUs
 * whose BLAS runs 8-wide vectors (there the 4-wide kernels in kernels.c
 * reach about half the dgemm rate: docs/engine-gemm.md, "AVX-512").
 *
 * Called by eb_kern_small_gemm where eb_gemm512_usable() holds (the CPU
 * and the OS have AVX-512F; Valgrind's virtual CPU does not, so callgrind
 * windows count the AVX2 kernels) and C is row-major. Beta = 0 like every
 * kernel (kernels.h).
 */
#ifndef EB_GEMM512_H
#define EB_GEMM512_H

#include <stdint.h>

#include "kernels.h"

int eb_gemm512_usable(void);

/* eb_kern_small_gemm's row kernel for a row-major C (scn = 1), any A
 * and B: C[m,n] = sum_{k1,k} A[m,(k1,k)] B[(k1,k),n], arguments as
 * there. B is read in place where its columns are contiguous (sbn = 1),
 * else its panels are copied; a two-level K is walked through offset
 * tables. Only where eb_gemm512_usable(). */
void eb_kern_gemm_rowc_avx512(int64_t M, int64_t N, int64_t K,
                              const double *a, int64_t sam, const double *b,
                              int64_t sbn, const eb_gemm_k *k, double *c,
                              int64_t scm);

/* Is a GEMM with N columns and KT contracted rows in all (B's columns
 * contiguous or not) one chunk of one slice of the row kernel: N <= 32,
 * KT <= 512, KT N <= 4096? */
int eb_gemm512_one_panel(int64_t N, int64_t KT);

/* C_w = A_w B_w for W GEMMs of one shape at strides saw, sbw, scw (a batch
 * dim), arguments as eb_kern_gemm_rowc_avx512's, each one panel
 * (eb_gemm512_one_panel(N, k->K1 K)): the row kernel's blocks without its
 * set-up per element (B_w copied to a row-major panel where its columns
 * are apart, a two-level K through tables made once), bit for bit the
 * results of W calls of eb_kern_gemm_rowc_avx512. Only where
 * eb_gemm512_usable(). */
void eb_kern_gemm_batch_avx512(int64_t W, int64_t M, int64_t N, int64_t K,
                               const double *a, int64_t sam, int64_t saw,
                               const double *b, int64_t sbn, int64_t sbw,
                               const eb_gemm_k *k, double *c, int64_t scm,
                               int64_t scw);

/* C = A B for at most EB_FEW_K512_ROWS rows of C, a B with contiguous
 * columns (sbn = 1) and K1 K <= EB_FEW_K_MAX (kernels.h), C stored either
 * way (scm, scn): every row of B read once per 16 columns, all of K
 * summed in registers. Arguments as eb_kern_small_gemm's; each element
 * of C the same chain of multiply-adds as in the row kernels. Only where
 * eb_gemm512_usable(). */
enum { EB_FEW_K512_ROWS = 12 };
void eb_kern_gemm_few_k_avx512(int64_t M, int64_t N, int64_t K,
                               const double *a, int64_t sam, const double *b,
                               const eb_gemm_k *k, double *c, int64_t scm,
                               int64_t scn);

#endif
