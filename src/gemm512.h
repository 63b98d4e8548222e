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

#endif
