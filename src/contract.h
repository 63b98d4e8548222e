/*
 * contract: one binary contraction (one path step): classify labels, choose
 * operand and output layouts, pick the cheapest correct kernel, execute.
 *
 * Planning (eb_contract_plan, in contract.c) is pure: it reads two
 * labelled views and the labels the result keeps, and fills an eb_plan
 * without allocating. The plan says which scratch buffers it needs
 * (prep[0], prep[1], tmp) and how large the output is. Execution
 * (eb_contract_exec, in contract_exec.c) only moves data and calls
 * kernels. Eager mode plans at call time; trace mode plans once.
 *
 * Label classes of a step (DESIGN 4.1): batch (in both operands and kept),
 * contracted (in both, summed), free-left / free-right (in one operand and
 * kept), summed out of one operand (in one operand only, not kept; reduced
 * before the main kernel), and repeated inside one operand (a diagonal:
 * the view's strides are added, no copy).
 *
 * Every dtype (dtype.h) runs the same plan structure and kernel kinds; the
 * plan records its dtype. The engine's own GEMM kernels (SMALL_GEMM,
 * VEC_GEMM) and its dot kernel are float64 code: for the other dtypes the
 * planner picks the BLAS kinds (GEMM, GEMV, DOT: s/c/z routines) instead.
 */
#ifndef EB_CONTRACT_H
#define EB_CONTRACT_H

#include <stdint.h>

#include "dtype.h"
#include "kernels.h"
#include "tensor.h"

struct eb_team;

/* A GEMM whose C has a side shorter than EB_SKINNY_MN runs on the
 * engine's own kernel in any layout; one whose short side is from there
 * to EB_SKINNY_SIDE - 1 only where that kernel's rows are the short side:
 * C's long side then has unit stride and lies along the vector lanes
 * (contract.c). Trace lays out the intermediates of the latter
 * accordingly (trace.c, skinny_lead). */
enum { EB_SKINNY_MN = 21, EB_SKINNY_SIDE = 32 };

/* Does the planner give every GEMM with a side below EB_OWN_WIDER_SIDE
 * (and no batch label that an operand is broadcast along) to the own
 * kernel because that kernel runs twice the BLAS's vector width (its
 * AVX-512 row kernel, OpenBLAS's AVX2 kernels)? Otherwise the rules of
 * contract.c (SKINNY_MN, mid_skinny, ...) apply. GEMMs whose sides are
 * both EB_OWN_WIDER_SIDE or longer stay with BLAS (DESIGN 4.1: GEMM work
 * goes to OpenBLAS; the headline matmuls, 128 to 1024 a side, on it). */
enum { EB_OWN_WIDER_SIDE = 128 };
int eb_contract_own_wider(void);

typedef enum {
    EB_KIND_COPY,       /* single operand: permute and/or reduce only */
    EB_KIND_MUL,        /* elementwise multiply (batch labels only) */
    EB_KIND_OUTER,      /* no contracted label (both: permute.h engine) */
    EB_KIND_DOT,        /* contracted labels only (per batch) */
    EB_KIND_GEMV,       /* one side has no free label */
    EB_KIND_GEMM,       /* BLAS ?gemm per batch */
    EB_KIND_SMALL_GEMM, /* own kernel: tiny, skinny or short-K matrices
                           (float64 only) */
    EB_KIND_VEC_GEMM,   /* own kernel: vectors along a unit-stride batch dim
                           (float64 only) */
    EB_KIND_COUNT
} eb_kind;

const char *eb_kind_name(eb_kind k);

/* Does the permutation engine run the whole step (EB_KIND_MUL,
 * EB_KIND_OUTER: any operand and output strides)? */
int eb_kind_engine(eb_kind k);

/* Counters an execution adds to (per sample, reported in records). */
typedef struct {
    int64_t gemm_calls;      /* BLAS ?gemm calls */
    int64_t blas_calls;      /* all BLAS calls, including gemm */
    int64_t permuted_elems;  /* elements written by permutations/reductions */
} eb_exec_counters;

/* Adds from's counts to *to (the parts of a job that ran on threads). */
static inline void eb_exec_counters_add(eb_exec_counters *to,
                                        const eb_exec_counters *from)
{
    to->gemm_calls += from->gemm_calls;
    to->blas_calls += from->blas_calls;
    to->permuted_elems += from->permuted_elems;
}

/* Parts a blocked preparation (eb_plan.bp) splits over: each has its own
 * block of scratch in tmp. */
enum { EB_BP_PARTS = 4 };

typedef struct {
    eb_dtype dt;                  /* element type of operands and output */
    eb_kind kind;
    int64_t nbatch, M, N, K;      /* B = product of batch sizes */
    /* Operand preparation: prep[s] set means operand s is first permuted
     * and/or reduced by xf[s] into a compact scratch of prep_elems[s]. */
    int prep[2];
    eb_xform xf[2];
    int64_t prep_elems[2];
    /* Blocked preparation (EB_KIND_SMALL_GEMM without batch labels, fixed
     * output order): when bp is set, A is not permuted whole but in blocks
     * of bp_len indices of its outermost m label (bp_size long, stride
     * bp_in in A; bp_rows rows of C per index): xf[0] (its dim 0 bp_len
     * long) permutes a block into bp_blk elements of tmp (EB_BP_PARTS such
     * blocks, one per part), and the kernel computes those rows of C from
     * it while it is in cache. prep[0] is then 0; bp_moved: elements the
     * blocks write per run (also the chunks' of cp). */
    int bp;
    int64_t bp_len, bp_size, bp_rows, bp_in, bp_blk, bp_moved;
    /* Chunked preparation (eager's GEMM steps, float64; the kind is then
     * EB_KIND_SMALL_GEMM): when cp is set, operand Y = cp_side is not
     * permuted whole but chunk by chunk. A chunk is Y's labels of
     * smallest stride, about CP_BYTES (a contiguous run of a compact Y),
     * or Y's contracted labels and those (runs of Y); a table moves one
     * into scratch (compact: batch, then m, k for A or k, n for B) and the
     * kernel multiplies it with the other operand (in place, or prepared
     * whole by xf[1 - cp_side]) while it is in cache, into C in its fixed
     * order. The chunk's product is the plan's kernel with cp_M, cp_N,
     * cp_K and the plan's strides and batch dims (nb, bshape, bstride: the
     * chunk's batch labels; Y's strides are the scratch's). The chunks run
     * over Y's other labels: cp_nout dims of cp_shape, strides cp_stride[0]
     * in Y, [1] in the other operand, [2] in C; the last cp_nk of them are
     * contracted labels, whose chunks add into the same block of C. With
     * cp_acc (such labels) the products go to a compact block
     * of cp_cblk elements of scratch (the block, then one product of a
     * batch element to add to it), stored into C after the chunk's last
     * contracted index through offset tables of its m and n labels
     * (vdims, vshape, vstride[g][1] for g = 0: m, 1: n). tmp holds
     * EB_BP_PARTS times cp_blk + cp_cblk elements (a chunk and a block per
     * part), then tables of cp_blk int32s and cp_blk / cp_run int64s,
     * then cp_M + cp_N int64s. */
    int cp, cp_side, cp_nout, cp_nk, cp_acc;
    /* Streamed vector-batch GEMM (eager's GEMM steps, float64, AVX-512;
     * the kind is then EB_KIND_VEC_GEMM with vw 0): when vs is set,
     * operand Y = vs_y holds a run of vs_L batch elements at unit stride
     * and vecstream.h's kernel reads it in place into C' (rows of vs_Lp
     * lanes), ew permutes C' into C. tmp holds 8 doubles of slack (C'
     * and X' are 64-byte aligned in it), X' (vs_R K vs_M vs_Lp
     * elements), C' (vs_R vs_M vs_N vs_Lp), then offset tables (R + K +
     * N int64s for Y, R + K + M + L for X). The groups' dims, outermost
     * first, with strides in X [0] and Y [1] (0 where absent): the other
     * batch labels (vs_R elements) in nb, bshape, bstride; X's free
     * labels (vs_M), Y's
     * free labels (vs_N) and the contracted ones (K) in vdims[0..2],
     * vshape, vstride; the lanes (Y's innermost, in its order) in
     * cp_dims, cp_dshape, cp_dstride. vs_stream: C' is stored
     * non-temporal (larger than the last-level cache). */
    int vs, vs_y, vs_stream;
    int64_t vs_L, vs_Lp, vs_R, vs_M, vs_N;
    /* Batch dims and per-operand strides (0: A, 1: B, 2: C). */
    int nb;
    int64_t bshape[EB_MAX_RANK];
    int64_t bstride[3][EB_MAX_RANK];
    /* Fused matrix strides after preparation. */
    int64_t sam, sak, sbk, sbn, scm, scn;
    /* EB_KIND_SMALL_GEMM: the contracted labels as K1 outer rows of
     * K / K1 inner ones when they are not one stride apart in an operand
     * (read in place, eb_gemm_k); then sak and sbk are the inner strides
     * and sak1, sbk1 the outer ones. K1 = 1 otherwise. */
    int64_t K1, sak1, sbk1;
    /* EB_KIND_VEC_GEMM: the batch dim of length vw has stride vsw[s] in
     * operand s (1, or a small stride read in place: plan_vec_prep) and
     * stride vscw in C; it is left out of bshape. The m, n and k groups
     * keep their dims: vdims[g] dims of vshape[g], with strides
     * vstride[g][0] and [1] in (A, C) for m, (B, C) for n and (A, B) for
     * k. */
    int64_t vw, vsw[2], vscw;
    int vdims[3];
    /* Output: compact over out_ids (in this order). When post is set, the
     * kernel writes a scratch of tmp_elems in its natural layout and xf_post
     * permutes it into the output. */
    int out_rank;
    int out_ids[EB_MAX_RANK];
    int64_t out_elems;
    int post;
    eb_xform xf_post;
    int64_t tmp_elems;
    int64_t vshape[3][EB_MAX_RANK];
    int64_t vstride[3][2][EB_MAX_RANK];
    int64_t cp_M, cp_N, cp_K, cp_blk, cp_cblk;
    int64_t cp_shape[EB_MAX_RANK];
    int64_t cp_stride[3][EB_MAX_RANK];
    /* The chunk's cp_dims dims in Y's order (increasing stride): sizes,
     * strides in Y [0] and in the scratch [1]; the first make runs of
     * cp_run elements of Y. */
    int cp_dims;
    int64_t cp_run;
    int64_t cp_dshape[EB_MAX_RANK];
    int64_t cp_dstride[2][EB_MAX_RANK];
    double flops;                 /* opt_einsum convention */
    /* EB_KIND_MUL and EB_KIND_OUTER: the whole step (after any reducing
     * prep) is one run of the permutation engine, out = A * B over the
     * kept labels, each operand with stride 0 along the labels it lacks:
     * any layouts of A, B and C, no post permutation. */
    eb_perm ew;
} eb_plan;

/*
 * Plan C = contract(A, B) keeping the labels keep[0..nkeep-1], in dtype dt.
 * fixed_order: 1 = the output must be in exactly the order of keep;
 * 0 = the planner picks the order (written to plan->out_ids).
 * b may be NULL for a single-operand step (EB_KIND_COPY).
 * Returns EB_ERR_UNSUPPORTED (with a message) only for ranks beyond
 * EB_MAX_RANK.
 */
eb_status eb_contract_plan(const eb_view *a, const eb_view *b, const int *keep,
                           int nkeep, int fixed_order,
                           const int64_t *label_size, eb_dtype dt,
                           eb_plan *plan, eb_error *err);

/* eb_contract_plan in a fixed output order (eager's), then also with a
 * free label of one operand peeled into the batch loop (the other operand
 * read with stride 0 along it): taken when that moves fewer elements
 * (an operand whose outermost free label keeps the rest from fusing is
 * then read in place instead of permuted whole). */
eb_status eb_contract_plan_peel(const eb_view *a, const eb_view *b,
                                const int *keep, int nkeep,
                                const int64_t *label_size, eb_dtype dt,
                                eb_plan *plan, eb_error *err);

/* Does the batched own-kernel plan p run as eb_kern_gemm_wrows, its
 * innermost batch dim (unit stride in A) looped inside the kernel's row
 * blocks? (Float64, one-level K of at most EB_WROWS_MAX_K, N at most
 * EB_WROWS_MAX_N with unit stride in B and C.) */
enum { EB_WROWS_MIN_W = 8 };
int eb_plan_wrows(const eb_plan *p);

/* Does the vector-batch plan p run as eb_kern_vec_gemv (a side of C of
 * 1, the other operand with unit stride along w, w long)? 1: M = 1, A
 * the small operand; 2: N = 1, B the small one; 0: packed blocks. */
int eb_plan_vec_gemv(const eb_plan *p);

/* Does the permutation engine run plan p (a multiply or outer product)
 * in tiles, or, for an output of 64 KiB or more, in rows of less than
 * 1 KiB, each of which costs a pass of its loop nest (contract.c,
 * EXPAND_*)? */
int eb_plan_engine_slow(const eb_plan *p);

/* Elements a plan moves besides its kernel's own reads and writes:
 * operand preparations, blocked preparation and the output permutation. */
int64_t eb_plan_moved(const eb_plan *p);

/* A step's work as trace counts it (eb_fuse_opts.solo_work, the lanes):
 * its multiply-adds (products) plus the elements it writes (output and
 * prepared operands). */
double eb_plan_work(const eb_plan *p);

/* Execute a plan. All buffers hold elements of plan->dt. prep0/prep1/tmp
 * are scratch buffers of the sizes the plan asks for (in elements; NULL
 * where not needed); out has plan->out_elems elements. The
 * engine's own kernels and permutations split their work over `team`
 * (NULL: the calling thread only); BLAS calls stay on the calling thread. */
void eb_contract_exec(const eb_plan *plan, const void *a, const void *b,
                      void *prep0, void *prep1, void *tmp, void *out,
                      struct eb_team *team, eb_exec_counters *cnt);

#endif
