/*
 * kernels: the engine's own compute kernels (everything that is not BLAS).
 *
 * All kernels overwrite their output (beta = 0 semantics): an output is
 * never read before it is written, so callers never zero it first. Strides
 * are in elements and may be any value (including 0 for size-1 axes).
 * Kernel symbols start with eb_kern_ so that profiles can group them.
 */
#ifndef EB_KERNELS_H
#define EB_KERNELS_H

#include <stdint.h>

#include "instance.h"
#include "permute.h"

/* sum_k a[k*sa] * b[k*sb]. */
double eb_kern_dot(int64_t K, const double *a, int64_t sa, const double *b,
                   int64_t sb);

/* The contracted dims of a GEMM as two levels: K1 outer rows of K inner
 * ones; element (k1, k) of A's row at k1 * sak1 + k * sak, of B's column
 * at k1 * sbk1 + k * sbk. K1 = 1 is a plain GEMM. */
typedef struct {
    int64_t K1, sak1, sak, sbk1, sbk;
} eb_gemm_k;

/* Offsets of the flattened contracted rows [f0, f0 + kc) of a two-level
 * K (k1 < K1 outer, k < K inner): k1 sak1 + k sak into aoff, k1 sbk1 +
 * k sbk into boff (the row kernels' tables). */
void eb_gemm_k_offsets(int64_t f0, int64_t kc, int64_t K, const eb_gemm_k *k,
                       int64_t *aoff, int64_t *boff);

/* C[m,n] = sum_{k1,k} A[m,(k1,k)] B[(k1,k),n] with general strides, for
 * small and skinny matrices where a BLAS call costs more than the
 * arithmetic or OpenBLAS's kernels are weak (a side of C below 32). The
 * two-level K reads an operand whose contracted dims are not one stride
 * apart in place. K >= 1, k->K1 >= 1. */
void eb_kern_small_gemm(int64_t M, int64_t N, int64_t K, const double *a,
                        int64_t sam, const double *b, int64_t sbn,
                        const eb_gemm_k *k, double *c, int64_t scm,
                        int64_t scn);

/* The short-K kernels' set-up for the K1 K contracted rows t of a
 * two-level K: boff[t] the offset of B's row t, ap[t M + r] A's element
 * (r, t) of its M rows (sam apart). */
void eb_gemm_few_k_pack(int64_t M, int64_t K, const double *a, int64_t sam,
                        const eb_gemm_k *k, int64_t *boff, double *ap);

/* The batch kernels' tables for a two-level K of K1 K rows in all:
 * eb_gemm_k_offsets of every row into aoff and boff, and i n into poff
 * (the rows of B's copy, n columns wide). */
void eb_gemm_batch_tables(int64_t K, const eb_gemm_k *k, int64_t n,
                          int64_t *aoff, int64_t *boff, int64_t *poff);

/* B's kc x n block copied row-major into bt: row i at b + boff[i] (or
 * b + i sbk where boff is NULL), its columns sbn apart. */
void eb_gemm_pack_b(int64_t kc, int64_t n, const double *b, int64_t sbk,
                    const int64_t *boff, int64_t sbn, double *bt);

/* The batch kernels prefetch the next element's rows of A (M contiguous
 * elements at each of total contracted offsets: aoff[q], or q sak where
 * aoff is NULL) where C's rows are at least EB_BATCH_PF_MIN_N long (a
 * prefetch per line of A's rows is then at most one per 16 multiply-adds
 * of a row, lm's thousands of 4 x 4 x 4 products go without) and a block
 * is at most EB_BATCH_PF_MAX elements: gm_queen's eager step of 59049 x
 * (81 x 27 x 9), A read in place (43 M elements in three streams of its
 * rows), waited on the broadcasts of A: 81-87 -> 68 ms. */
enum { EB_BATCH_PF_MIN_N = 16, EB_BATCH_PF_MAX = 4096 };
static inline int eb_gemm_batch_pf(int64_t W, int64_t M, int64_t N,
                                   int64_t total, int64_t sam)
{
    return W > 1 && sam == 1 && N >= EB_BATCH_PF_MIN_N &&
           M * total <= EB_BATCH_PF_MAX;
}
static inline void eb_gemm_prefetch_a(const double *a, int64_t M,
                                      int64_t total, int64_t sak,
                                      const int64_t *aoff)
{
    for (int64_t q = 0; q < total; q++) {
        const double *r = a + (aoff ? aoff[q] : q * sak);
        uintptr_t l0 = (uintptr_t)r & ~(uintptr_t)63,
                  l1 = (uintptr_t)(r + M - 1);
        for (uintptr_t l = l0; l <= l1; l += 64)
            __builtin_prefetch((const void *)l);
    }
}

/* W calls of eb_kern_small_gemm, element w's operands and output at
 * a + w saw, b + w sbw, c + w scw (a batch dim): the same results, with
 * the kernel's set-up once for all W where the elements are tiny GEMMs
 * (one panel of the AVX-512 row kernel). */
void eb_kern_small_gemm_batch(int64_t W, int64_t M, int64_t N, int64_t K,
                              const double *a, int64_t sam, int64_t saw,
                              const double *b, int64_t sbn, int64_t sbw,
                              const eb_gemm_k *k, double *c, int64_t scm,
                              int64_t scn, int64_t scw);

/* Which form eb_kern_small_gemm_batch takes for more than one element of
 * M x N x (k->K1 K) at these strides: 0 a call of eb_kern_small_gemm per
 * element, 1 the batch kernel on C's rows, 2 on the rows of C^T = B^T A^T
 * (C column-major). */
int eb_kern_small_gemm_batch_form(int64_t M, int64_t N, int64_t K,
                                  const eb_gemm_k *k, int64_t sam,
                                  int64_t sbn, int64_t scm, int64_t scn);

/* Does eb_kern_small_gemm take C's at most eb_kern_few_k_rows_max() rows
 * against a B with contiguous columns (sbn = 1), K1 K <= EB_FEW_K_MAX and
 * at least 2^16 elements of B, summing all of K in registers 8 (AVX2) or
 * 16 (AVX-512) columns at a time (B streamed from memory once, at any
 * length of N)? The rows: EB_FEW_ROWS_MAX in AVX2's registers,
 * EB_FEW_K512_ROWS where the AVX-512 kernels run (gemm512.h). */
enum { EB_FEW_ROWS_MAX = 6, EB_FEW_K_MAX = 64 };
int eb_kern_few_k_rows_max(void);
int eb_kern_small_gemm_few_k(int64_t M, int64_t N, int64_t KT, int64_t sbn);

/*
 * C_w = A_w B_w for W consecutive batch elements w (C_w[m][n] at c + m scm
 * + w scw + n, A_w[m][k] at a + m sam + k sak + w, B_w[k][n] at b + k sbk
 * + w sbw + n) when w has unit stride in A and n in B and C: the batch
 * element loop runs inside each block of rows, so that A is read along
 * its rows' runs of w (one small GEMM per element read each element of A
 * from another line). N <= EB_WROWS_MAX_N.
 */
enum { EB_WROWS_MAX_N = 16, EB_WROWS_MAX_K = 128 };
void eb_kern_gemm_wrows(int64_t M, int64_t N, int64_t K, int64_t W,
                        const double *a, int64_t sam, int64_t sak,
                        const double *b, int64_t sbk, int64_t sbw, double *c,
                        int64_t scm, int64_t scw);

/*
 * The vector-batch GEMM: C[w, m, n] = sum_k A[w, m, k] B[w, k, n] where w
 * has unit stride in A and B (stride scw in C), for batched products whose
 * batch dim is the innermost one of both operands. One small GEMM per
 * batch element would read every element from another cache line (and
 * page). Instead w is cut into blocks of wb <= EB_VEC_WBLOCK; a block of
 * A and B is packed in chunks of 8 elements of w (chunk x holds, one after
 * another, 8 elements of every row: per (m, k) for A, per (k, n) for B),
 * then C is computed from the packed block with vectors along w.
 * m, n and k may each stand for several dims in any layout: the caller
 * gives offset tables (A at am[m] + ak[k], B at bk[k] + bn[n], C at
 * cm[m] + cn[n]).
 */
enum { EB_VEC_WBLOCK = 64, EB_VEC_MAX_DIM = 512 };

/* Pack rows (i, j), i in [i0, i1), j < nj, of a block of wb elements:
 * element x of row (i, j) = src[oi[i] + oj[j] + x sw] goes to
 * dst[(x / 8) * 8 * rows + (i * nj + j) * 8 + x % 8], rows = (all i) * nj.
 * sw >= 1 is w's stride in src (a small one: w's run interleaved with a
 * short innermost dim, read in place instead of permuted first). */
void eb_kern_vec_pack(int64_t i0, int64_t i1, int64_t nj, const double *src,
                      const int64_t *oi, const int64_t *oj, int64_t wb,
                      int64_t sw, int64_t rows, double *dst);

/*
 * The vector-batch GEMM where one side of C is 1 (M = 1: C[w, n] = sum_k
 * A[w, k] B[w, k, n]; N = 1 the same with A and B's roles swapped) and
 * the larger operand g has unit stride along w: C[w, j] = sum_k s[k, w]
 * g[j, k, w], j < J. Nothing of g is reused, so it is not packed: each
 * of its rows (j, k) (at gj[j] + gk[k]) is read once, along w, by
 * chunks of 8 elements of w whose sums over all of K stay in registers
 * (four columns j at a time), the small operand's rows k (at sk[k], w
 * at stride ssw) copied into runs first (all of w where that fits
 * EB_VEC_GEMV_SPAN doubles, else blocks of EB_VEC_GEMV_W). C(w, j) is at
 * cj[j] + w scw; c, s and g point at the first w. scratch: at least
 * eb_kern_vec_gemv_scratch(wb, K) doubles. Taken from EB_VEC_GEMV_MIN_W
 * elements of w.
 */
enum { EB_VEC_GEMV_W = 512, EB_VEC_GEMV_MIN_W = 64,
       EB_VEC_GEMV_SPAN = 32768 };
/* Doubles of scratch eb_kern_vec_gemv needs for at most wb elements of
 * w. */
int64_t eb_kern_vec_gemv_scratch(int64_t wb, int64_t K);
void eb_kern_vec_gemv(int64_t wb, int64_t J, int64_t K, const double *s,
                      const int64_t *sk, int64_t ssw, const double *g,
                      const int64_t *gj, const int64_t *gk, double *c,
                      const int64_t *cj, int64_t scw, double *scratch);

/* C for one block packed by eb_kern_vec_pack: pa with rows (m, k), pb
 * with rows (k, n). c points at the block's first w. */
void eb_kern_vec_gemm(int64_t wb, int64_t M, int64_t N, int64_t K, const double *pa, const double *pb,
                      double *c, const int64_t *cm, const int64_t *cn,
                      int64_t scw);

/*
 * A permutation with optional reduction: out is compact row-major over
 * `rank` dims of `shape`; out[idx] = sum over the reduced dims of
 * in[sum idx[d]*in_stride[d] + sum r[e]*red_stride[e]].
 * A pure permutation (red_rank 0) is planned once by eb_xform_plan for the
 * permutation engine (permute.h); a reduction runs row by row here.
 */
typedef struct {
    eb_dtype dt;  /* element type of in and out (0: float64); set before
                   * eb_xform_simplify / eb_xform_plan */
    int rank;
    int64_t shape[EB_MAX_RANK];
    int64_t in_stride[EB_MAX_RANK];
    int red_rank;
    int64_t red_shape[EB_MAX_RANK];
    int64_t red_stride[EB_MAX_RANK];
    int planned;  /* perm holds the engine's plan (red_rank 0) */
    eb_perm perm;
} eb_xform;

/* Drop size-1 dims and merge dims that are contiguous in both out and in;
 * then plan the permutation (eb_xform_plan). */
void eb_xform_simplify(eb_xform *x);

/* Plan a pure permutation for the engine (nothing for a reduction). */
void eb_xform_plan(eb_xform *x);

/* Elements written (product of shape). */
int64_t eb_xform_out_elems(const eb_xform *x);

/* Execute; a planned permutation splits over `team` (NULL: this thread),
 * a reduction runs on this thread. */
void eb_kern_xform(const eb_xform *x, const void *in, void *out,
                   struct eb_team *team);

#endif
