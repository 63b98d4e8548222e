/*
 * permute: the permutation engine. Every step that moves data (operand
 * preparation, permuted outputs, elementwise multiplies and outer products
 * on views of any strides) is one call of it.
 *
 * It computes, over a box of `rank` dims,
 *     out[i . so] = x0[i . s0]              (one source), or
 *     out[i . so] = x0[i . s0] * x1[i . s1] (two sources),
 * where strides are in elements, out's are positive and distinct, and a
 * source's may be 0 (broadcast: an outer product is a multiply whose
 * sources each miss the other's dims).
 *
 * Plan then execute, after HPTT (springer13/hptt): eb_perm_plan makes every
 * decision once per layout (which dims merge, the loop order, which dims
 * form the tile and how large it is, the kernel of the tile, the dim the
 * team splits); eb_perm_exec only moves data. Tiles are chosen so that each
 * array is read or written in runs of whole cache lines:
 *   ROW:   out's innermost dim is also every source's innermost (or a
 *          source is constant along it): contiguous vector rows;
 *   TILE4: a source's unit-stride dim differs from out's: square tiles of
 *          those two dims, moved by AVX2 transposes of 32-byte rows in
 *          registers (4 x 4 doubles or complex64, 8 x 8 floats, 2 x 2
 *          complex128); a tile of two short whole dims repeats over the
 *          transposed source's next contiguous dims (read in one run);
 *   RUNS:  a source t whose innermost dims, a run contiguous in t, are
 *          not out's innermost ones: tiles of (t's run) x (out's run, its
 *          innermost dims, contiguous in out), moved by the same register
 *          transposes, rows of t read and rows of out written at places
 *          from tables of each run's offsets (short dims such as 3 x 3 or
 *          2 x 8 need not be one dim on either side); a second source is
 *          read along out's run, broadcast, or transposed as t is, by how
 *          its strides run over the tile (none of these: GENERIC);
 *   XROW:  out's innermost dim is short (2 to 15 elements) and a source
 *          e is constant along it and contiguous along the next dim (an
 *          outer product's operand, broadcast over the other's short
 *          free dims), the other source, if any, contiguous with out:
 *          rows of out along both dims, e's elements each expanded in
 *          registers over the short dim;
 *   PROW:  out's innermost dim is short (2 to 7 elements) and a source y
 *          is contiguous along it and constant along the next dim (an
 *          outer product's operand whose last label is shared with the
 *          other's, repeated over the other's free dims inside it), the
 *          other source contiguous with out (float64 multiplies): rows
 *          of out along both dims, y's short run repeated in registers
 *          (a vector of it for each phase of the period);
 *   GENERIC: anything else (short dims, strided innermost dims): a tile
 *          spanning each array's innermost dims until each has >= 256
 *          bytes, walked by scalar loops.
 * Tile sides, row pieces and thresholds are sizes in bytes, so every dtype
 * moves the same cache lines as float64. The element operation is a copy
 * by element size (complex64 copies are float64's code) or the dtype's
 * multiply. The AVX2 kernels are chosen at run time (function-level
 * target, no -march); the scalar paths give bit-identical results (the
 * complex multiply rounds each product once, no FMA, in both) and run
 * under valgrind.
 *
 * An eb_perm is a plain value (no pointers): copy it, keep it in a plan.
 */
#ifndef EB_PERMUTE_H
#define EB_PERMUTE_H

#include <stdint.h>

#include "dtype.h"
#include "instance.h"

struct eb_team;

typedef enum {
    EB_PERM_ROW,
    EB_PERM_TILE4,
    EB_PERM_GENERIC,
    EB_PERM_RUNS,
    EB_PERM_XROW,
    EB_PERM_PROW
} eb_perm_mode;

/* How a RUNS plan's second source is loaded: along out's run as out is,
 * constant along it, or along t's run as t is (transposed like t). */
typedef enum {
    EB_RUNS_DIRECT,
    EB_RUNS_BCAST,
    EB_RUNS_TRANS
} eb_runs_how;

typedef struct {
    eb_dtype dt;                    /* element type (0: float64) */
    int rank;                       /* after merging; dims outermost first */
    int nsrc;                       /* 1 or 2 */
    eb_perm_mode mode;
    int tsrc;                       /* TILE4, RUNS: the source read
                                     * transposed; XROW: the expanded
                                     * one; PROW: the repeated one */
    int di;                         /* TILE4: that source's unit dim;
                                     * PROW: the dim out and the other
                                     * source run on along (-1: none) */
    int split;                      /* dim the team splits (-1: none) */
    int loop_src;                   /* GENERIC, RUNS: the array whose
                                     * order the tiles follow (0: out,
                                     * 1: x0, 2: x1) */
    int stream;                     /* ROW: non-temporal stores */
    int scalar;                     /* 1: scalar kernels only (tests) */
    int es;                         /* bytes of an element as moved: the
                                     * dtype's, or 2-4 times it when a
                                     * short innermost dim shared by out
                                     * and x0 moves as one element */
    int nrun;                       /* RUNS: t's run dims, fastest */
    int run[EB_MAX_RANK];           /*   first (t: tsrc) */
    int norun;                      /* RUNS: out's run dims, innermost */
    int orun[EB_MAX_RANK];          /*   first */
    int how;                        /* RUNS, two sources: eb_runs_how of
                                     * the other source */
    int nrep;                       /* RUNS, ROW, TILE4: dims whole in */
    int rep[EB_MAX_RANK];           /*   the tile (its tiles repeated) */
    int64_t elems;                  /* elements (of es bytes) written */
    int64_t shape[EB_MAX_RANK];
    int64_t block[EB_MAX_RANK];     /* tile extent per dim (1: outside) */
    int64_t stride[3][EB_MAX_RANK]; /* 0: out, 1: x0, 2: x1 */
} eb_perm;

/* Plan out = x0 (x1 NULL) or out = x0 * x1 over `rank` dims of `shape`
 * for arrays of element type dt (strides in elements; the multiply is the
 * dtype's, complex (a+bi)(c+di) = (ac-bd) + (ad+bc)i). Dims may come in any
 * order and include size-1 dims. rank may be 0 (one element). */
void eb_perm_plan_dt(eb_perm *p, eb_dtype dt, int rank, const int64_t *shape,
                     const int64_t *out_stride, const int64_t *x0_stride,
                     const int64_t *x1_stride);

/* eb_perm_plan_dt for float64. */
void eb_perm_plan(eb_perm *p, int rank, const int64_t *shape,
                  const int64_t *out_stride, const int64_t *x0_stride,
                  const int64_t *x1_stride);

/* Execute on arrays of the plan's dtype; x1 is ignored for a one-source
 * plan. The work is split over `team` (NULL: the calling thread) when it
 * is large enough. */
void eb_perm_exec(const eb_perm *p, const void *x0, const void *x1,
                  void *out, struct eb_team *team);

/* Prefetch every line of source src (0: x0, 1: x1) that an execution of
 * p reads into L2 (in runs of its contiguous dims): a caller that permutes
 * a block of an operand in memory, then computes from it, fetches the
 * next block while it computes. */
void eb_perm_prefetch(const eb_perm *p, int src, const void *x);

/* Elements of source src (0: x0, 1: x1) one execution reads, each once. */
double eb_perm_src_elems(const eb_perm *p, int src);

/* Bytes read and written by one execution, counting each array once (the
 * traffic the plan's tiles aim for). */
double eb_perm_bytes(const eb_perm *p);

#endif
