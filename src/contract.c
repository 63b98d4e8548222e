/* contract: planning of one binary contraction step (execution:
 * contract_exec.c). */
#include "contract.h"

#include <stddef.h>
#include <string.h>

#include "blas.h"
#include "gemm512.h"
#include "vecstream.h"

/* Batches of matrices at most this many multiply-adds go to the engine's own
 * small-GEMM kernel instead of one BLAS call each: below it, a BLAS call's
 * fixed cost (argument checks, packing, beta pass) outweighs its faster
 * inner kernel. */
enum { SMALL_MNK = 32768 };

/* Matrices with at most this many contracted elements (a short K) also go
 * to the own kernel, batched or not: such a product is bound by writing C,
 * and OpenBLAS writes C twice (its beta pass, then the result) and packs
 * both operands, while the own kernel writes C once from registers. */
enum { LOW_K = 16 };

/* A GEMM whose C has a side shorter than this also goes to the own kernel:
 * OpenBLAS's kernels are weak on such shapes (its 1710 x 19 x 19 and
 * 19 x 19 x 1710 GEMMs ran at 15 to 20 GFLOP/s where the own kernel runs
 * at 24 to 38, docs/engine-gemm.md), it writes C twice (its beta pass,
 * then the result), and the own kernel reads operands whose contracted
 * labels are two strides apart in place. From 21 columns up the two were
 * even (404 x 21 x 480: 25 against 27 GFLOP/s) with C's short side
 * contiguous; up to EB_SKINNY_SIDE the own kernel takes such GEMMs in the
 * other orientation only (mid_skinny, eb_contract_plan). */
enum { SKINNY_MN = EB_SKINNY_MN };

/* A GEMM with every side at most this and M and N multiples of 4 (whole
 * vectors and register blocks of the own kernel) goes to the own kernel
 * too: OpenBLAS's beta pass, packing and call cost are a large share of
 * such a product (a 64^3 GEMM: 17.8% of its instructions are OpenBLAS's
 * memset of C). One-thread minima of 300 interleaved runs, own / BLAS
 * time over the four transpositions, three runs: 32^3 0.74-1.04, 48^3
 * 0.79-1.00, 64^3 0.78-0.96; at 80^3 one transposition was 17% slower and
 * odd sides (40 x 70 x 90) 8-26% slower, so those stay on BLAS. */
#ifndef SMALL_SIDE
#define SMALL_SIDE 64
#endif

/* ... unless its long side is past this: the lm networks' 12 x 13200 x
 * 144 steps ran at 11-12 GFLOP/s on the own kernel against 16 on BLAS
 * (plan --time, two interleaved rounds, 1 and 2 threads), gm_queen's
 * 9 x 19683 x 27 was at best even. */
enum { SKINNY_MAX_LONG = 8192 };

static const char *const kind_names[EB_KIND_COUNT] = {
    [EB_KIND_COPY] = "copy",   [EB_KIND_MUL] = "mul",
    [EB_KIND_OUTER] = "outer", [EB_KIND_DOT] = "dot",
    [EB_KIND_GEMV] = "gemv",   [EB_KIND_GEMM] = "gemm",
    [EB_KIND_SMALL_GEMM] = "small-gemm", [EB_KIND_VEC_GEMM] = "vec-gemm",
};

const char *eb_kind_name(eb_kind k)
{
    return (unsigned)k < EB_KIND_COUNT ? kind_names[k] : "?";
}

/* An operand's distinct labels of size > 1, with diagonal strides summed. */
typedef struct {
    int n;
    int id[EB_MAX_RANK];
    int64_t size[EB_MAX_RANK];
    int64_t stride[EB_MAX_RANK];
    int64_t elems;
} axes;

typedef struct {
    int n;
    int id[EB_MAX_RANK];
} group;

static int find(const int *ids, int n, int l)
{
    for (int k = 0; k < n; k++)
        if (ids[k] == l)
            return k;
    return -1;
}

static void merge_view(const eb_view *v, axes *x)
{
    x->n = 0;
    x->elems = 1;
    for (int a = 0; a < v->rank; a++) {
        if (v->shape[a] == 1)
            continue;
        int k = find(x->id, x->n, v->ids[a]);
        if (k >= 0) {
            x->stride[k] += v->stride[a]; /* diagonal: i == i */
            continue;
        }
        x->id[x->n] = v->ids[a];
        x->size[x->n] = v->shape[a];
        x->stride[x->n] = v->stride[a];
        x->elems *= v->shape[a];
        x->n++;
    }
}

static int64_t stride_of(const axes *x, int l)
{
    int k = find(x->id, x->n, l);
    return k >= 0 ? x->stride[k] : 0;
}

static int64_t group_size(const group *g, const int64_t *label_size)
{
    int64_t n = 1;
    for (int k = 0; k < g->n; k++)
        n *= label_size[g->id[k]];
    return n;
}

/* Labels of g in the order they appear in x (x must contain them all). */
static void order_by(const group *g, const axes *x, group *out)
{
    out->n = 0;
    for (int k = 0; k < x->n; k++)
        if (find(g->id, g->n, x->id[k]) >= 0)
            out->id[out->n++] = x->id[k];
}

/* Labels of g in the order of `ids` (which contains them all). */
static void order_by_ids(const group *g, const int *ids, int n, group *out)
{
    out->n = 0;
    for (int k = 0; k < n; k++)
        if (find(g->id, g->n, ids[k]) >= 0)
            out->id[out->n++] = ids[k];
}

/* Can group g (in this order) be addressed as one dim of x? Gives its
 * stride (0 for an empty group). */
static int fuse(const axes *x, const group *g, const int64_t *label_size,
                int64_t *stride)
{
    if (g->n == 0) {
        *stride = 0;
        return 1;
    }
    for (int k = 0; k + 1 < g->n; k++)
        if (stride_of(x, g->id[k]) !=
            stride_of(x, g->id[k + 1]) * label_size[g->id[k + 1]])
            return 0;
    *stride = stride_of(x, g->id[g->n - 1]);
    return 1;
}

/* A compact layout of the concatenation of groups. */
static void compact_axes(const group *const *gs, int ng,
                         const int64_t *label_size, axes *x)
{
    x->n = 0;
    for (int q = 0; q < ng; q++)
        for (int k = 0; k < gs[q]->n; k++) {
            x->id[x->n] = gs[q]->id[k];
            x->size[x->n] = label_size[gs[q]->id[k]];
            x->n++;
        }
    int64_t s = 1;
    for (int k = x->n - 1; k >= 0; k--) {
        x->stride[k] = s;
        s *= x->size[k];
    }
    x->elems = s;
}

/* Do x and y hold the same labels with the same strides? */
static int same_axes(const axes *x, const axes *y)
{
    if (x->n != y->n)
        return 0;
    for (int k = 0; k < x->n; k++)
        if (x->id[k] != y->id[k] || x->stride[k] != y->stride[k])
            return 0;
    return 1;
}

/* The compact layout of the required output order: keep's labels of size
 * > 1. */
static void keep_axes(const int *keep, int nkeep, const int64_t *label_size,
                      axes *c)
{
    group all = {0};
    for (int k = 0; k < nkeep; k++)
        if (label_size[keep[k]] > 1)
            all.id[all.n++] = keep[k];
    const group *one[1] = {&all};
    compact_axes(one, 1, label_size, c);
}

/* Is a (rows x cols) matrix with these strides usable by BLAS, which needs
 * one unit stride and a leading dimension covering the other side? */
static int blas_matrix(int64_t rows, int64_t cols, int64_t sr, int64_t sc)
{
    int64_t max = eb_blas_max_dim();
    if (rows > max || cols > max || sr > max || sc > max)
        return 0;
    return (sc == 1 && sr >= cols) || (sr == 1 && sc >= rows);
}

static int blas_vector(int64_t n, int64_t inc)
{
    return n <= eb_blas_max_dim() && inc >= 1 && inc <= eb_blas_max_dim();
}

typedef struct {
    group b, m, k, n;
} orders;

/* Elements of an operand prepared so that the other may take a two-level
 * K of its own (evaluate). */
enum { KPREP_MAX = 4096 };

/* Everything a candidate ordering decides. */
typedef struct {
    int prep[2], post;
    int ksplit;         /* k's outer labels for a two-level K, or 0 */
    int kprep;          /* operands (bit s) prepared for the two-level K */
    axes lay[2], c;     /* operand layouts after prep; output layout */
    axes tmp;           /* kernel output layout when post */
    int64_t cost;       /* elements moved */
} layout;

/* Is the dot product of kind DOT a BLAS call (every dtype but float64,
 * whose own kernel takes any stride)? Its operands must then have unit
 * stride: OpenBLAS 0.3.21's Haswell cdotu/zdotu kernels read one element
 * past the last one of a strided vector (valgrind memcheck; contiguous
 * vectors are read exactly), so strided operands are prepared first. */
static int blas_dot(const eb_plan *p)
{
    return p->kind == EB_KIND_DOT && p->dt != EB_F64;
}

static int kind_ok_a(eb_kind kind, const eb_plan *p, int64_t sam, int64_t sak)
{
    if (kind == EB_KIND_GEMM || (kind == EB_KIND_GEMV && p->N == 1))
        return blas_matrix(p->M, p->K, sam, sak);
    if (blas_dot(p))
        return sak == 1;
    if (kind == EB_KIND_GEMV)
        return blas_vector(p->K, sak);
    return 1;
}

static int kind_ok_b(eb_kind kind, const eb_plan *p, int64_t sbk, int64_t sbn)
{
    if (kind == EB_KIND_GEMM || (kind == EB_KIND_GEMV && p->M == 1))
        return blas_matrix(p->K, p->N, sbk, sbn);
    if (blas_dot(p))
        return sbk == 1;
    if (kind == EB_KIND_GEMV)
        return blas_vector(p->K, sbk);
    return 1;
}

static int kind_ok_c(eb_kind kind, const eb_plan *p, int64_t scm, int64_t scn)
{
    if (kind == EB_KIND_GEMM)
        return blas_matrix(p->M, p->N, scm, scn);
    if (kind == EB_KIND_GEMV)
        return p->N == 1 ? blas_vector(p->M, scm) : blas_vector(p->N, scn);
    return 1;
}

int eb_kind_engine(eb_kind kind)
{
    return kind == EB_KIND_MUL || kind == EB_KIND_OUTER;
}

/* Operand side s (0: A with groups m,k; 1: B with groups k,n). */
static void layout_operand(const eb_plan *p, const axes *in, int nsum,
                           const orders *o, int s, const int64_t *label_size,
                           layout *L)
{
    const group *g1 = s == 0 ? &o->m : &o->k;
    const group *g2 = s == 0 ? &o->k : &o->n;
    int64_t s1, s2;
    /* The permutation engine takes any strides; with a two-level K
     * (ksplit), k need not fuse as a whole. */
    int ok = nsum == 0 && !(L->kprep >> s & 1) &&
             (eb_kind_engine(p->kind) ||
              (((L->ksplit && g1 == &o->k) || fuse(in, g1, label_size, &s1)) &&
               ((L->ksplit && g2 == &o->k) || fuse(in, g2, label_size, &s2))));
    if (ok && !eb_kind_engine(p->kind) && !L->ksplit)
        ok = s == 0 ? kind_ok_a(p->kind, p, s1, s2)
                    : kind_ok_b(p->kind, p, s1, s2);
    L->prep[s] = !ok;
    if (ok) {
        L->lay[s] = *in;
    } else {
        /* A batch label at stride 0 (a widened operand: see
         * eb_contract_plan_peel) stays at stride 0: the operand is
         * prepared once, not once per index of that label. */
        group bb = {0}, bz = {0};
        int64_t copies = 1;
        for (int q = 0; q < o->b.n; q++) {
            int l = o->b.id[q];
            if (stride_of(in, l) == 0) {
                bz.id[bz.n++] = l;
                copies *= label_size[l];
            } else {
                bb.id[bb.n++] = l;
            }
        }
        const group *gs[3] = {&bb, g1, g2};
        axes *x = &L->lay[s];
        compact_axes(gs, 3, label_size, x);
        for (int q = 0; q < bz.n; q++) {
            x->id[x->n] = bz.id[q];
            x->size[x->n] = label_size[bz.id[q]];
            x->stride[x->n] = 0;
            x->n++;
        }
        L->cost += in->elems / copies;
    }
}

static void layout_output(const eb_plan *p, const orders *o, const int *keep,
                          int nkeep, int fixed, int tpost,
                          const int64_t *label_size, layout *L)
{
    /* An outer product in its own order puts the larger operand's free
     * labels innermost: its rows are then copied whole, scaled. With
     * tpost (WIDE_POST) the kernel writes C with its longer side
     * innermost and a post permutation puts it in the fixed order. */
    int swap = p->kind == EB_KIND_OUTER && L->lay[0].elems > L->lay[1].elems;
    if (tpost)
        swap = p->M > p->N;
    const group *gs[3] = {&o->b, swap ? &o->n : &o->m,
                          swap ? &o->m : &o->n};
    compact_axes(gs, 3, label_size, &L->tmp);
    L->post = 0;
    if (!fixed) {
        L->c = L->tmp;
        return;
    }
    keep_axes(keep, nkeep, label_size, &L->c);
    int64_t scm, scn;
    if (tpost && !same_axes(&L->c, &L->tmp)) {
        L->post = 1;
        L->cost += L->c.elems;
        return;
    }
    int ok = eb_kind_engine(p->kind) ||
             (fuse(&L->c, &o->m, label_size, &scm) &&
              fuse(&L->c, &o->n, label_size, &scn) &&
              kind_ok_c(p->kind, p, scm, scn));
    if (!ok) {
        L->post = 1;
        L->cost += L->c.elems;
    }
}

/* The labels [q0, q1) of group g. */
static group sub_group(const group *g, int q0, int q1)
{
    group s = {.n = q1 - q0};
    memcpy(s.id, g->id + q0, (size_t)s.n * sizeof(int));
    return s;
}

/*
 * For the own GEMM kernel: where the contracted labels k (in this order)
 * do not fuse into one dim of both operands, the first split of k into
 * outer and inner labels that each fuse in both (a two-level K, read in
 * place); 0 when k fuses or no split does.
 */
static int k_split(const axes *ax, const group *k, const int64_t *label_size)
{
    int64_t s;
    if (fuse(&ax[0], k, label_size, &s) && fuse(&ax[1], k, label_size, &s))
        return 0;
    for (int q = 1; q < k->n; q++) {
        group outer = sub_group(k, 0, q), inner = sub_group(k, q, k->n);
        if (fuse(&ax[0], &outer, label_size, &s) &&
            fuse(&ax[0], &inner, label_size, &s) &&
            fuse(&ax[1], &outer, label_size, &s) &&
            fuse(&ax[1], &inner, label_size, &s))
            return q;
    }
    return 0;
}

/* Elements x holds in memory: its labels at stride 0 (a widened
 * operand's) not counted. */
static int64_t stored_elems(const axes *x)
{
    int64_t n = 1;
    for (int q = 0; q < x->n; q++)
        if (x->stride[q] != 0)
            n *= x->size[q];
    return n;
}

/* A two-level K that only operand s must fuse (the other is prepared,
 * compact in k's order): its split where k does not fuse whole in s, or
 * 0. */
static int k_split_one(const axes *ax, int s, const group *k,
                       const int64_t *label_size)
{
    int64_t st;
    if (fuse(&ax[s], k, label_size, &st))
        return 0;
    for (int q = 1; q < k->n; q++) {
        group outer = sub_group(k, 0, q), inner = sub_group(k, q, k->n);
        if (fuse(&ax[s], &outer, label_size, &st) &&
            fuse(&ax[s], &inner, label_size, &st))
            return q;
    }
    return 0;
}

static void evaluate(const eb_plan *p, const axes *ax, const int *nsum,
                     const orders *o, const int *keep, int nkeep, int fixed,
                     int tpost, const int64_t *label_size, layout *L)
{
    L->cost = 0;
    L->ksplit = p->kind == EB_KIND_SMALL_GEMM && !nsum[0] && !nsum[1]
                    ? k_split(ax, &o->k, label_size)
                    : 0;
    /* A small operand (at most KPREP_MAX elements) whose k does not split
     * like the other's is prepared, so that the large one is read in
     * place through its own two-level K (lm eager's hf0lC,klhcf->0Ckc
     * peeled over 0: A's (h f) and l, B's 1024 elements in any order). */
    L->kprep = 0;
    for (int s = 0; s < 2 && p->kind == EB_KIND_SMALL_GEMM && !nsum[0] &&
                    !nsum[1] && !L->ksplit;
         s++)
        if (stored_elems(&ax[1 - s]) <= KPREP_MAX &&
            (L->ksplit = k_split_one(ax, s, &o->k, label_size)) != 0)
            L->kprep = 1 << (1 - s);
    layout_operand(p, &ax[0], nsum[0], o, 0, label_size, L);
    if (p->kind != EB_KIND_COPY)
        layout_operand(p, &ax[1], nsum[1], o, 1, label_size, L);
    layout_output(p, o, keep, nkeep, fixed, tpost, label_size, L);
    /* The own kernel computes a C whose m side is the contiguous one as
     * C^T = B^T A^T, reading A^T as its right operand: a prepared A then
     * goes k-major, m contiguous, or the kernel copies its panels once
     * more (gm_queen's 4374 x 27 x 9 blocks, C written column-major). */
    const axes *kc = L->post ? &L->tmp : &L->c;
    int64_t scm, scn;
    if (p->kind == EB_KIND_SMALL_GEMM && L->prep[0] && !L->ksplit &&
        p->M > 1 && fuse(kc, &o->m, label_size, &scm) && scm == 1 &&
        !(fuse(kc, &o->n, label_size, &scn) && scn == 1)) {
        const group *gs[3] = {&o->b, &o->k, &o->m};
        compact_axes(gs, 3, label_size, &L->lay[0]);
    }
}

/* Small batched matrices or a short K (SMALL_MNK, LOW_K). */
static int tiny_gemm(const eb_plan *p)
{
    return (p->nbatch > 1 && p->M * p->N * p->K <= SMALL_MNK) ||
           p->K <= LOW_K;
}

/* Every side at most SMALL_SIDE, M and N multiples of 4, and a BLAS
 * without small-matrix kernels of its own: OpenBLAS's for its AVX-512
 * cores ran 32^3 to 64^3 1.2-2.1x faster than the own kernel over the
 * four transpositions, its Haswell kernels 0.68-1.02x as fast
 * (docs/bench.md, "Fifteenth round"). */
static int small_square(const eb_plan *p)
{
    return p->M <= SMALL_SIDE && p->N <= SMALL_SIDE && p->K <= SMALL_SIDE &&
           p->M % 4 == 0 && p->N % 4 == 0 && !eb_blas_small_kernels();
}

/* Does the own kernel run twice the BLAS's vector width: its AVX-512 row
 * kernel against the BLAS's AVX2 kernels on a CPU with AVX-512 (OpenBLAS
 * told to run its Haswell kernels)? There it ran every skinny GEMM
 * measured faster, both ways round, long sides of 13200 and 19683 too
 * (own / BLAS time 0.31-0.91, one exception at 1.09 that skinny_to_blas
 * keeps on BLAS; docs/engine-gemm.md, "AVX-512"), so every GEMM with a
 * side below EB_OWN_WIDER_SIDE goes to it (sides of 32 to 127 too:
 * lm's 64 x 1996 x 64, read in place through a two-level K where BLAS
 * needed B permuted, 0.43-0.50x the time; 121 x 1100 x 144 0.55x; every
 * such step of mera 0.34-0.97x; docs/bench.md, "Twenty-fifth round"),
 * batched ones only where every batch label has a stride in both
 * operands (own_batch): with a batch
 * along which B is broadcast, mera's 136 x 9720 x 441 became 17 batch
 * elements of 8 rows, each reading all of a 34 MB B from memory (eager
 * 1.12x slower). Never under Valgrind (no AVX-512), so callgrind windows
 * keep the rules below. */
int eb_contract_own_wider(void)
{
    return eb_gemm512_usable() && !eb_blas_avx512();
}

/* Is p (kind not yet set) a GEMM whose short side is from SKINNY_MN to
 * EB_SKINNY_SIDE - 1, not taken by the own kernel for other reasons? */
static int mid_skinny(const eb_plan *p)
{
    int64_t shorter = p->M < p->N ? p->M : p->N;
    return shorter >= SKINNY_MN && shorter < EB_SKINNY_SIDE &&
           !tiny_gemm(p) && !small_square(p) && p->dt == EB_F64;
}

/* A side of C past SKINNY_MAX_LONG may still be the own kernel's where
 * the other side is a few rows against a short K (eb_kern_small_gemm_few_k,
 * B streamed once with all of K in registers): gm_queen's 81 x (3 x 19683
 * x 27), B row-major, 37-38 ms on BLAS. Whether B's columns are contiguous
 * is known once the layout is chosen (few_k_to_blas). */
static int few_k_long(const eb_plan *p)
{
    return p->M <= eb_kern_few_k_rows_max() && p->K <= EB_FEW_K_MAX;
}

/* A few_k_long GEMM whose chosen layout leaves B's long side strided (or
 * K two-level) is not the few-K kernel's: BLAS's, where BLAS can run that
 * layout as it is (one level of K, every matrix with a unit stride and a
 * leading dimension: blas_layout), else planned again as a GEMM
 * (plan). The layout was chosen for the own kernel, which reads a
 * two-level K in place: a GEMM of 5 x 415800 x 24 whose K is (v, D), v
 * outermost and D innermost in B, went to dgemm with K1 = 6 and gave
 * wrong sums. */
static int few_k_to_blas(const eb_plan *p, int own)
{
    return p->kind == EB_KIND_SMALL_GEMM && !tiny_gemm(p) && !own &&
           (p->M > SKINNY_MAX_LONG || p->N > SKINNY_MAX_LONG) &&
           !eb_kern_small_gemm_few_k(p->M, p->N, p->K1 * p->K, p->sbn);
}

/* Can BLAS run the plan's layout as it is: one level of K, every matrix
 * with a unit stride and a leading dimension? */
static int blas_layout(const eb_plan *p)
{
    return p->K1 == 1 && blas_matrix(p->M, p->K, p->sam, p->sak) &&
           blas_matrix(p->K, p->N, p->sbk, p->sbn) &&
           blas_matrix(p->M, p->N, p->scm, p->scn);
}

/* How plan() treats mid_skinny GEMMs (see eb_contract_plan): BLAS, the
 * own kernel, or the own kernel writing C through a post permutation. */
enum { WIDE_BLAS, WIDE_OWN, WIDE_POST };

/* Does every batch label of gb have a stride in both operands (not a
 * label one operand is broadcast along, which a batch loop would read
 * again for every index)? */
static int own_batch(const axes *ax, const group *gb)
{
    for (int q = 0; q < gb->n; q++)
        if (stride_of(&ax[0], gb->id[q]) == 0 ||
            stride_of(&ax[1], gb->id[q]) == 0)
            return 0;
    return 1;
}

/* Does a GEMM not taken by the rules before it go to the own kernel as a
 * skinny one? own: eb_contract_own_wider(), own_batched: own_batch,
 * few_k: whether few_k_long counts (plan: 0 once the few-K kernel's
 * layout proved out of reach). */
static int skinny_own(const eb_plan *p, int wide, int own, int own_batched,
                      int few_k)
{
    if (own && (p->nbatch == 1 || own_batched))
        return p->M < EB_OWN_WIDER_SIDE || p->N < EB_OWN_WIDER_SIDE;
    if (p->M >= SKINNY_MN && p->N >= SKINNY_MN && !(wide && mid_skinny(p)))
        return 0;
    return (p->M <= SKINNY_MAX_LONG && p->N <= SKINNY_MAX_LONG) ||
           (few_k && few_k_long(p));
}

static eb_kind pick_kind(const eb_plan *p, int wide, int own,
                         int own_batched, int few_k)
{
    if (p->M == 1 && p->N == 1 && p->K == 1)
        return EB_KIND_MUL;
    if (p->K == 1)
        return EB_KIND_OUTER;
    if (p->M == 1 && p->N == 1)
        return EB_KIND_DOT;
    if (p->dt != EB_F64) /* the own GEMM kernels are float64 code */
        return p->M == 1 || p->N == 1 ? EB_KIND_GEMV : EB_KIND_GEMM;
    if (tiny_gemm(p))
        return EB_KIND_SMALL_GEMM;
    if (p->M == 1 || p->N == 1)
        return EB_KIND_GEMV;
    if (small_square(p))
        return EB_KIND_SMALL_GEMM;
    if (skinny_own(p, wide, own, own_batched, few_k))
        return EB_KIND_SMALL_GEMM;
    return EB_KIND_GEMM;
}

/* An xform of elements of dt from `in` into the compact layout `out` (its
 * labels at stride 0 are not stored), summing `sum`. */
static void make_xform(eb_dtype dt, const axes *in, const axes *out,
                       const group *sum, eb_xform *x)
{
    x->dt = dt;
    x->rank = 0;
    for (int d = 0; d < out->n; d++) {
        if (out->stride[d] == 0)
            continue; /* a broadcast label, not stored (layout_operand) */
        x->shape[x->rank] = out->size[d];
        x->in_stride[x->rank] = stride_of(in, out->id[d]);
        x->rank++;
    }
    x->red_rank = sum->n;
    for (int e = 0; e < sum->n; e++) {
        int k = find(in->id, in->n, sum->id[e]);
        x->red_shape[e] = in->size[k];
        x->red_stride[e] = in->stride[k];
    }
    eb_xform_simplify(x);
}

/* Classify the labels of both operands into the groups of the plan. */
static void classify(const axes *ax, int two, const int *keep, int nkeep,
                     group *b, group *m, group *k, group *n, group *sum)
{
    b->n = m->n = k->n = n->n = sum[0].n = sum[1].n = 0;
    for (int s = 0; s < (two ? 2 : 1); s++)
        for (int q = 0; q < ax[s].n; q++) {
            int l = ax[s].id[q];
            int in_other = two && find(ax[1 - s].id, ax[1 - s].n, l) >= 0;
            int kept = find(keep, nkeep, l) >= 0;
            if (in_other && s == 1)
                continue; /* classified from A */
            if (in_other)
                (kept ? b : k)->id[(kept ? b : k)->n++] = l;
            else if (kept)
                (s == 0 ? m : n)->id[(s == 0 ? m : n)->n++] = l;
            else
                sum[s].id[sum[s].n++] = l;
        }
}

/* Merge adjacent batch dims that are contiguous in all three operands,
 * so that loops (and the elementwise kernel's runs) are as long as they
 * can be. */
static void fuse_batch(eb_plan *p)
{
    int r = 0;
    for (int d = 0; d < p->nb; d++) {
        if (p->bshape[d] == 1)
            continue;
        int merge = r > 0;
        for (int s = 0; s < 3 && merge; s++)
            merge = p->bstride[s][r - 1] == p->bstride[s][d] * p->bshape[d];
        if (merge) {
            p->bshape[r - 1] *= p->bshape[d];
            for (int s = 0; s < 3; s++)
                p->bstride[s][r - 1] = p->bstride[s][d];
            continue;
        }
        p->bshape[r] = p->bshape[d];
        for (int s = 0; s < 3; s++)
            p->bstride[s][r] = p->bstride[s][d];
        r++;
    }
    p->nb = r;
}

/* Limits of the vector-batch GEMM: its offset tables live on the stack
 * (EB_VEC_MAX_DIM), and past this much work per batch element, preparing
 * the operands for one large GEMM each pays for itself. */
enum { VEC_MAX_MNK = 1 << 20, VEC_MIN_W = 8 };

/* The dims of group g in x's strides (two views) into the plan. */
static void vec_group(const group *g, const axes *x0, const axes *x1,
                      const int64_t *label_size, eb_plan *p, int gi)
{
    p->vdims[gi] = g->n;
    for (int q = 0; q < g->n; q++) {
        p->vshape[gi][q] = label_size[g->id[q]];
        p->vstride[gi][0][q] = stride_of(x0, g->id[q]);
        p->vstride[gi][1][q] = stride_of(x1, g->id[q]);
    }
}

/* p cleared down to its step's shape (dtype, kind, batch, M, N, K), for
 * another form of the step to be planned into it. */
static void plan_reset(eb_plan *p)
{
    eb_plan q = *p;
    memset(p, 0, offsetof(eb_plan, bshape));
    p->dt = q.dt;
    p->kind = q.kind;
    p->nbatch = q.nbatch;
    p->M = q.M;
    p->N = q.N;
    p->K = q.K;
}

/*
 * The vector-batch form (EB_KIND_VEC_GEMM), when a batch label has unit
 * stride in both operands: vectors run along it and nothing is permuted.
 * Without it such a step either permutes both operands (2 (M + N) K
 * elements per batch element moved, against M N K multiply-adds) or runs
 * one small GEMM per batch element with every load on another cache line.
 * w: that batch label (its strides not checked), or -1 for the first
 * whose strides in both operands are 1 to max_sw. Returns 1 when the plan
 * took this form.
 */
static int plan_vec_w(const axes *ax, const group *gb, const group *gm,
                      const group *gk, const group *gn, const int *nsum,
                      const int *keep, int nkeep, int fixed_order,
                      const int64_t *label_size, int64_t max_sw, int w,
                      eb_plan *p)
{
    if (p->dt != EB_F64 || (p->kind != EB_KIND_SMALL_GEMM &&
                             p->kind != EB_KIND_GEMM &&
                             p->kind != EB_KIND_GEMV))
        return 0;
    if (nsum[0] || nsum[1] || p->M > EB_VEC_MAX_DIM || p->N > EB_VEC_MAX_DIM ||
        p->K > EB_VEC_MAX_DIM || p->M * p->N * p->K > VEC_MAX_MNK)
        return 0;
    for (int q = 0; q < gb->n && w < 0; q++) {
        int64_t s0 = stride_of(&ax[0], gb->id[q]),
                s1 = stride_of(&ax[1], gb->id[q]);
        if (s0 >= 1 && s0 <= max_sw && s1 >= 1 && s1 <= max_sw &&
            label_size[gb->id[q]] >= VEC_MIN_W)
            w = gb->id[q];
    }
    if (w < 0)
        return 0;
    /* Output: the required order, else (other batch, m, n, w) so that
     * vectors are stored whole. */
    group rest = {0}, wg = {.n = 1, .id = {w}};
    for (int q = 0; q < gb->n; q++)
        if (gb->id[q] != w)
            rest.id[rest.n++] = gb->id[q];
    axes c;
    if (fixed_order) {
        keep_axes(keep, nkeep, label_size, &c);
        p->out_rank = nkeep;
        memcpy(p->out_ids, keep, (size_t)nkeep * sizeof(int));
    } else {
        const group *gs[4] = {&rest, gm, gn, &wg};
        compact_axes(gs, 4, label_size, &c);
        p->out_rank = c.n;
        memcpy(p->out_ids, c.id, (size_t)c.n * sizeof(int));
        for (int k = 0; k < nkeep; k++)
            if (label_size[keep[k]] == 1)
                p->out_ids[p->out_rank++] = keep[k];
    }
    p->kind = EB_KIND_VEC_GEMM;
    p->post = 0;
    p->out_elems = c.elems;
    p->tmp_elems = EB_VEC_WBLOCK * (p->M * p->K + p->K * p->N); /* packs */
    p->vw = label_size[w];
    p->vsw[0] = stride_of(&ax[0], w);
    p->vsw[1] = stride_of(&ax[1], w);
    p->vscw = stride_of(&c, w);
    p->nb = rest.n;
    for (int q = 0; q < rest.n; q++) {
        int l = rest.id[q];
        p->bshape[q] = label_size[l];
        p->bstride[0][q] = stride_of(&ax[0], l);
        p->bstride[1][q] = stride_of(&ax[1], l);
        p->bstride[2][q] = stride_of(&c, l);
    }
    fuse_batch(p);
    vec_group(gm, &ax[0], &c, label_size, p, 0);
    vec_group(gn, &ax[1], &c, label_size, p, 1);
    vec_group(gk, &ax[0], &ax[1], label_size, p, 2);
    if (eb_plan_vec_gemv(p)) {
        /* Its scratch per part (at most EB_VEC_WBLOCK / 8 parts, each
         * at most all of w). */
        int64_t g = EB_VEC_WBLOCK / 8 * eb_kern_vec_gemv_scratch(p->vw, p->K);
        p->tmp_elems = g > p->tmp_elems ? g : p->tmp_elems;
    }
    return 1;
}

/* plan_vec_w with w picked there: the first batch label of at least
 * VEC_MIN_W elements whose strides in both operands are 1 to max_sw. */
static int plan_vec(const axes *ax, const group *gb, const group *gm,
                    const group *gk, const group *gn, const int *nsum,
                    const int *keep, int nkeep, int fixed_order,
                    const int64_t *label_size, int64_t max_sw, eb_plan *p)
{
    return plan_vec_w(ax, gb, gm, gk, gn, nsum, keep, nkeep, fixed_order,
                      label_size, max_sw, -1, p);
}

/* Matrices of at most this many multiply-adds per batch element may take
 * the vector-batch form after permuting one operand (plan_vec_prep): on
 * larger ones the own and BLAS kernels on compact matrices win despite
 * the extra permutation. Up to a stride of VEC_GATHER_SW (a cache line)
 * the operand is not permuted but gathered by the pack. */
enum { VEC_PREP_MAX_MNK = 1 << 15, VEC_GATHER_SW = 8 };

/* Is a batch label of x stored inside the span of its other labels? Then
 * one small GEMM per batch element reads each of its rows from another
 * cache line, in as many streams as the matrix has rows. */
static int batch_inside(const axes *x, const group *gb)
{
    int64_t bmin = -1, omax = 0;
    for (int q = 0; q < x->n; q++) {
        if (find(gb->id, gb->n, x->id[q]) < 0)
            omax = x->stride[q] > omax ? x->stride[q] : omax;
        else if (bmin < 0 || x->stride[q] < bmin)
            bmin = x->stride[q];
    }
    return bmin >= 0 && bmin < omax;
}

/* Elements a planned step (one small GEMM or BLAS call per batch element)
 * moves, counting an operand read in place with its batch labels inside
 * its rows as if it were moved: that costs as much (see batch_inside). */
static int64_t batched_cost(const eb_plan *p, const axes *ax, const group *gb)
{
    int64_t cost = p->post ? p->out_elems : 0;
    for (int s = 0; s < 2; s++) {
        if (p->prep[s])
            cost += p->prep_elems[s];
        else if (p->nbatch > 1 && batch_inside(&ax[s], gb) &&
                 !(s == 0 && eb_plan_wrows(p)))
            cost += ax[s].elems; /* (not A read along w's runs) */
    }
    return cost;
}

/*
 * The vector-batch form when a batch label w of at least VEC_MIN_W has
 * unit stride in one operand only: the other operand is permuted (w moved
 * innermost, its other labels in their order) and the step runs as
 * EB_KIND_VEC_GEMM. This is the layout an eager step gets when one
 * operand's canonical order ends with the batch label (say a token batch)
 * and the other's does not: without it the step permutes the large
 * operand, or both, or reads it in place one batch element at a time.
 * Taken when the permuted operand has fewer elements than the plan p
 * moves (batched_cost). Replaces p and returns 1 when taken.
 */
static int plan_vec_prep(const axes *ax, const group *gb, const group *gm,
                         const group *gk, const group *gn, const int *nsum,
                         const int *keep, int nkeep, int fixed_order,
                         const int64_t *label_size, eb_plan *p)
{
    if (p->dt != EB_F64 || /* EB_KIND_VEC_GEMM is float64 code */
        (p->kind != EB_KIND_SMALL_GEMM && p->kind != EB_KIND_GEMM &&
         p->kind != EB_KIND_GEMV) ||
        nsum[0] || nsum[1] || p->M > EB_VEC_MAX_DIM ||
        p->N > EB_VEC_MAX_DIM || p->K > EB_VEC_MAX_DIM ||
        p->M * p->N * p->K > VEC_PREP_MAX_MNK)
        return 0;
    int w = -1, y = 0;
    for (int q = 0; q < gb->n && w < 0; q++) {
        int l = gb->id[q];
        int u0 = stride_of(&ax[0], l) == 1, u1 = stride_of(&ax[1], l) == 1;
        /* (not a label at stride 0, a widened operand's: see
         * eb_contract_plan_peel) */
        if (label_size[l] >= VEC_MIN_W && u0 != u1 &&
            stride_of(&ax[0], l) != 0 && stride_of(&ax[1], l) != 0) {
            w = l;
            y = u0; /* the operand without unit stride */
        }
    }
    if (w < 0 || ax[y].elems >= batched_cost(p, ax, gb))
        return 0;
    /* A small stride of w (a short innermost dim inside it, say lm's
     * hmf0F with F of 4) whose inner labels are the pack's inner rows
     * (k for A, n for B), so that each line is used whole while cached:
     * the pack gathers w in place, nothing is permuted. */
    int64_t sw = stride_of(&ax[y], w);
    int gather = sw <= VEC_GATHER_SW;
    for (int q = 0; q < ax[y].n && gather; q++)
        if (ax[y].stride[q] < sw)
            gather = find((y ? gn : gk)->id, (y ? gn : gk)->n,
                          ax[y].id[q]) >= 0;
    /* The other labels in their memory order (largest stride first), so
     * that the permutation moves w alone. */
    group g = {0};
    for (int q = 0; q < ax[y].n; q++) {
        int l = ax[y].id[q], at = g.n;
        if (l == w)
            continue;
        while (at > 0 && stride_of(&ax[y], g.id[at - 1]) < ax[y].stride[q]) {
            g.id[at] = g.id[at - 1];
            at--;
        }
        g.id[at] = l;
        g.n++;
    }
    g.id[g.n++] = w;
    const group *one[1] = {&g};
    axes lay[2] = {ax[0], ax[1]};
    compact_axes(one, 1, label_size, &lay[y]);
    /* On a copy: p stays as it was if the form is not taken after all. */
    eb_plan q = *p;
    plan_reset(&q);
    if (gather) {
        if (!plan_vec(ax, gb, gm, gk, gn, nsum, keep, nkeep, fixed_order,
                      label_size, VEC_GATHER_SW, &q))
            return 0;
    } else {
        if (!plan_vec(lay, gb, gm, gk, gn, nsum, keep, nkeep, fixed_order,
                      label_size, 1, &q))
            return 0;
        group none = {0};
        make_xform(q.dt, &ax[y], &lay[y], &none, &q.xf[y]);
        q.prep[y] = 1;
        q.prep_elems[y] = lay[y].elems;
    }
    q.flops = (double)p->nbatch * (double)p->M * (double)p->N *
              (double)p->K * 2;
    *p = q;
    return 1;
}

/* May the vector-batch pack read operand x with w at its stride there
 * (at most VEC_GATHER_SW) in place? The labels inside that stride must all
 * be rows of one of the pack's row groups g1, g2, so that the lines the
 * pack reads are used whole while cached (four adjacent rows at a time:
 * eb_kern_vec_pack). */
static int vec_gather_ok(const axes *x, int w, const group *g1,
                         const group *g2)
{
    int64_t sw = stride_of(x, w);
    int in1 = 1, in2 = 1;
    for (int q = 0; q < x->n; q++)
        if (x->stride[q] < sw) {
            in1 = in1 && find(g1->id, g1->n, x->id[q]) >= 0;
            in2 = in2 && find(g2->id, g2->n, x->id[q]) >= 0;
        }
    return sw >= 1 && sw <= VEC_GATHER_SW && (in1 || in2);
}

/*
 * The vector-batch form in a fixed output order (eager's) when the batch
 * label w has a small stride in both operands, each with a short inner
 * dim inside it (lm's vJ0H,p0J->v0Hp: w over H of 4 in A, over J of 4 in
 * B): both packs read w in place, where the plan p would permute an
 * operand or the output (p moves elements). Replaces p and returns 1
 * when taken.
 */
static int plan_vec_gather(const axes *ax, const group *gb, const group *gm,
                           const group *gk, const group *gn, const int *nsum,
                           const int *keep, int nkeep, int fixed_order,
                           const int64_t *label_size, eb_plan *p)
{
    if (!fixed_order || p->dt != EB_F64 ||
        (p->kind != EB_KIND_SMALL_GEMM && p->kind != EB_KIND_GEMM &&
         p->kind != EB_KIND_GEMV) ||
        nsum[0] || nsum[1] || p->M > EB_VEC_MAX_DIM ||
        p->N > EB_VEC_MAX_DIM || p->K > EB_VEC_MAX_DIM ||
        p->M * p->N * p->K > VEC_PREP_MAX_MNK ||
        !(p->prep[0] || p->prep[1] || p->post))
        return 0;
    /* w as plan_vec picks it */
    int w = -1;
    for (int q = 0; q < gb->n && w < 0; q++) {
        int64_t s0 = stride_of(&ax[0], gb->id[q]),
                s1 = stride_of(&ax[1], gb->id[q]);
        if (s0 >= 1 && s0 <= VEC_GATHER_SW && s1 >= 1 &&
            s1 <= VEC_GATHER_SW && label_size[gb->id[q]] >= VEC_MIN_W)
            w = gb->id[q];
    }
    if (w < 0 || !vec_gather_ok(&ax[0], w, gm, gk) ||
        !vec_gather_ok(&ax[1], w, gk, gn))
        return 0;
    eb_plan q = *p;
    plan_reset(&q);
    if (!plan_vec(ax, gb, gm, gk, gn, nsum, keep, nkeep, fixed_order,
                  label_size, VEC_GATHER_SW, &q))
        return 0; /* not reached: w qualifies */
    q.flops = p->flops;
    *p = q;
    return 1;
}

/* Does operand x hold, for each element of w, the rows of its vector-batch
 * pack (g1 outer, g2 inner, each row-major in its group's order: see
 * vec_group) as one compact run in that order, with every other label
 * outside it? Then a pack block reads each line whole and in storage
 * order, however far apart w's elements are. The inner group must give
 * the pack four adjacent rows at a time (eb_kern_vec_pack: loads of 4
 * transposed in registers, not gathers): a multiple of 4, or a single
 * row with the outer group a multiple of 4. */
static int vec_pack_compact(const axes *x, int w, const group *g1,
                            const group *g2, const int64_t *label_size)
{
    const group *gs[2] = {g2, g1};
    int64_t span = 1, n[2] = {1, 1};
    for (int s = 0; s < 2; s++)
        for (int q = gs[s]->n - 1; q >= 0; q--) {
            int l = gs[s]->id[q];
            if (stride_of(x, l) != span)
                return 0;
            span *= label_size[l];
            n[s] *= label_size[l];
        }
    for (int q = 0; q < x->n; q++)
        if (x->stride[q] < span && find(g1->id, g1->n, x->id[q]) < 0 &&
            find(g2->id, g2->n, x->id[q]) < 0)
            return 0;
    return stride_of(x, w) >= span &&
           (n[0] % 4 == 0 || (n[0] == 1 && n[1] % 4 == 0));
}

/*
 * The vector-batch form where a batch label w of at least VEC_MIN_W has
 * unit stride in the output (trace's desired order or eager's) and not in
 * the operands, each of which holds its pack's rows for one element of w
 * as a compact run (vec_pack_compact): the packs read w at its stride
 * from whole lines, and C is stored in vectors along w. Taken in place of
 * a small GEMM per batch element that writes C, strided both ways,
 * through a tile scattered element by element w's elements apart, with
 * nothing prepared (lm brackets' 0ÃÎß,0ßÄ->ÄÃÎ0, 1996 x (16 x 4 x 4):
 * 1744 instructions per batch element, 553 so), for products of at most
 * VEC_OUT_MAX_MNK multiply-adds: lm's 1100 x (12 x 12 x 12) ran faster
 * alone so (0.57 -> 0.35 ms) but slower in its network (0.65 -> 0.81 ms,
 * its packs of 147 KiB against 40 for the brackets' steps), docs/bench.md.
 * Replaces p and returns 1 when taken.
 */
enum { VEC_OUT_MAX_MNK = 512 };

static int plan_vec_out(const axes *ax, const group *gb, const group *gm,
                        const group *gk, const group *gn, const int *nsum,
                        const int *keep, int nkeep, int fixed_order,
                        const int64_t *label_size, eb_plan *p)
{
    if (!fixed_order || p->dt != EB_F64 || p->kind != EB_KIND_SMALL_GEMM ||
        p->scm == 1 || p->scn == 1 || p->prep[0] || p->prep[1] || p->post ||
        nsum[0] || nsum[1] || p->M * p->N * p->K > VEC_OUT_MAX_MNK)
        return 0;
    axes c; /* the output's strides in the required order */
    keep_axes(keep, nkeep, label_size, &c);
    int w = -1;
    for (int q = 0; q < gb->n && w < 0; q++) {
        int l = gb->id[q];
        if (label_size[l] >= VEC_MIN_W && stride_of(&c, l) == 1 &&
            stride_of(&ax[0], l) != 1 && stride_of(&ax[1], l) != 1 &&
            vec_pack_compact(&ax[0], l, gm, gk, label_size) &&
            vec_pack_compact(&ax[1], l, gk, gn, label_size))
            w = l;
    }
    if (w < 0)
        return 0;
    eb_plan q = *p;
    plan_reset(&q);
    if (!plan_vec_w(ax, gb, gm, gk, gn, nsum, keep, nkeep, fixed_order,
                    label_size, 0, w, &q))
        return 0; /* not reached: the limits are checked above */
    q.flops = p->flops;
    *p = q;
    return 1;
}

/* Scratch one block of a blocked preparation fills: well inside L2, so
 * that the kernel reads the block from cache, not memory. A preparation
 * of less than BP_MIN_BLOCKS such blocks is done whole. */
#ifndef BP_BYTES
#define BP_BYTES (1 << 17)
#endif
enum { BP_MIN_BLOCKS = 2 };

/*
 * Blocked preparation (eb_plan.bp) of a small-GEMM step without batch
 * labels whose A must be permuted (in eager's fixed orders, an operand
 * whose free and contracted labels interleave): A is permuted block by
 * block along its outermost m label into a scratch of about BP_BYTES,
 * and each block's rows of C are computed from it while it is in cache.
 * A whole preparation writes A to memory and the kernel reads it back.
 * (Blocks along a batch label were tried and dropped: docs/bench.md.)
 */
static void plan_blocked(const axes *ax, const layout *best, const orders *o,
                         const int *nsum, int fixed_order,
                         const int64_t *label_size, eb_plan *p)
{
    if (!fixed_order || p->kind != EB_KIND_SMALL_GEMM || p->post ||
        nsum[0] || nsum[1] || !p->prep[0] || o->b.n > 0 || o->m.n == 0)
        return;
    int d = o->m.id[0];
    int64_t size = label_size[d], per = p->prep_elems[0] / size;
    int64_t len = BP_BYTES / (int64_t)eb_dtype_size(p->dt) / per;
    if (len < 2 || size < BP_MIN_BLOCKS * len)
        return; /* (a block of one index would lose its dim 0) */
    /* Blocks of A compact [m][k], d outermost (a whole preparation may
     * have been laid out k-major for a column-major C: see evaluate). */
    axes blk = best->lay[0];
    if (blk.id[0] != d) {
        const group *gs[2] = {&o->m, &o->k};
        compact_axes(gs, 2, label_size, &blk);
        fuse(&blk, &o->m, label_size, &p->sam);
        fuse(&blk, &o->k, label_size, &p->sak);
    }
    blk.size[0] = len;
    blk.elems = per * len;
    group none = {0};
    make_xform(p->dt, &ax[0], &blk, &none, &p->xf[0]);
    p->bp = 1;
    p->bp_len = len;
    p->bp_size = size;
    p->bp_rows = p->M / size;
    p->bp_in = stride_of(&ax[0], d);
    p->bp_blk = blk.elems;
    p->bp_moved = p->prep_elems[0];
    p->prep[0] = 0;
    p->prep_elems[0] = 0;
    p->tmp_elems = EB_BP_PARTS * p->bp_blk;
}

/* A chunked preparation (eb_plan.cp) is taken for an operand of at least
 * CP_MIN_OPERAND elements (8 MiB of float64: a whole preparation goes
 * to memory and back; smaller ones were not measured, lm's and mera's
 * operands of 17 K-335 K elements that would qualify keep their plans),
 * in chunks of CP_BYTES at most and CP_MIN_ELEMS at least (128 KiB were
 * faster than 32, 64 or 256 KiB on tensornetwork's step), and when the
 * elements its chunks along contracted labels add up are at most half
 * the operand's elements. */
#ifndef CP_BYTES
#define CP_BYTES BP_BYTES
#endif
enum { CP_MIN_OPERAND = 1 << 20, CP_MIN_ELEMS = 1024, CP_MIN_RUN = 32 };

/* The labels of g that are (in = 1) or are not (in = 0) in h. */
static group group_filter(const group *g, const group *h, int in)
{
    group r = {0};
    for (int q = 0; q < g->n; q++)
        if ((find(h->id, h->n, g->id[q]) >= 0) == in)
            r.id[r.n++] = g->id[q];
    return r;
}

/* The labels of a chunk of Y (ord: Y's dims by increasing stride): with
 * kfirst, all of Y's contracted labels gk first (0 if they do not fit);
 * then the others in ord while they fit. *run: the length of the run of
 * Y the chunk's dims of smallest stride make (1 if none has stride 1). */
static int chunk_labels(const axes *Y, const int *ord, const group *gk,
                        int kfirst, group *in, group *out, int64_t *chunk,
                        int64_t *run)
{
    int64_t cap = CP_BYTES / (int64_t)sizeof(double), n = 1;
    in->n = out->n = 0;
    int full = 0;
    for (int pass = kfirst ? 0 : 1; pass < 2; pass++)
        for (int q = 0; q < Y->n; q++) {
            int l = Y->id[ord[q]], isk = find(gk->id, gk->n, l) >= 0;
            if (kfirst && (pass == 0) != isk)
                continue;
            if (!full && n * Y->size[ord[q]] <= cap) {
                in->id[in->n++] = l;
                n *= Y->size[ord[q]];
            } else {
                if (pass == 0)
                    return 0;
                full = 1;
                out->id[out->n++] = l;
            }
        }
    *chunk = n;
    *run = 1;
    for (int q = 0; q < Y->n; q++) {
        if (find(in->id, in->n, Y->id[ord[q]]) < 0 ||
            Y->stride[ord[q]] != *run)
            break;
        *run *= Y->size[ord[q]];
    }
    return 1;
}

/*
 * Chunked preparation (eb_plan.cp) of eager's GEMM step p (planned by
 * eb_contract_plan in the fixed output order `keep`; float64) whose larger
 * prepared operand Y is large: instead of permuting Y
 * whole (written to memory, read back by the kernel; a permutation of a
 * canonical intermediate whose labels interleave, as 24 dims of 2, runs
 * far below copy bandwidth because every tile touches dozens of pages),
 * Y is permuted one chunk of its innermost labels at a time into a
 * scratch that stays in cache, and the chunk's product is computed from
 * there. Y is read once, in runs as long as the chunk. Needs the chunk's
 * free labels and the other operand's each to be one dim of C (with
 * chunks whose products went to a compact block stored into C through
 * offset tables otherwise, gm_queen's two such steps and tensornetwork's
 * step 311 ran slower than with Y prepared whole: dropped). The products
 * go straight into C, or, when chunks along contracted labels add up,
 * into a compact block stored into C after the last. The other operand
 * is read in place when its free labels and the chunk's contracted
 * labels are each one dim of it, else prepared whole.
 */
static void plan_chunked(const eb_view *a, const eb_view *b, const int *keep,
                         int nkeep, const int64_t *label_size, eb_plan *p)
{
    if ((p->kind != EB_KIND_SMALL_GEMM && p->kind != EB_KIND_GEMM &&
         p->kind != EB_KIND_GEMV) ||
        p->dt != EB_F64 || p->bp)
        return;
    axes ax[2], cc;
    merge_view(a, &ax[0]);
    merge_view(b, &ax[1]);
    group gbb, gmm, gkk, gnn, sum[2];
    classify(ax, 1, keep, nkeep, &gbb, &gmm, &gkk, &gnn, sum);
    if (sum[0].n || sum[1].n)
        return;
    const group *gb = &gbb, *gm = &gmm, *gk = &gkk, *gn = &gnn;
    keep_axes(keep, nkeep, label_size, &cc);
    const axes *c = &cc;
    int y = p->prep[1] && (!p->prep[0] || p->prep_elems[1] >= p->prep_elems[0]);
    if (!p->prep[y])
        return;
    int x = 1 - y;
    const axes *Y = &ax[y], *X = &ax[x];
    /* The chunk: Y's labels by increasing stride while they fit (one run
     * of a compact Y); when its contracted labels outside it would add
     * up too much, Y's contracted labels and then the others by stride
     * (runs of Y at least CP_MIN_RUN long, nothing added up). */
    int ord[EB_MAX_RANK];
    for (int q = 0; q < Y->n; q++) {
        int r = q;
        for (; r > 0 && Y->stride[ord[r - 1]] > Y->stride[q]; r--)
            ord[r] = ord[r - 1];
        ord[r] = q;
    }
    group in, out;
    int64_t chunk = 0, run = 0;
    for (int kfirst = 0; kfirst < 2 && !chunk; kfirst++) {
        if (!chunk_labels(Y, ord, gk, kfirst, &in, &out, &chunk, &run))
            continue;
        group ko = group_filter(&out, gk, 1);
        int64_t kout = group_size(&ko, label_size);
        if (chunk < CP_MIN_ELEMS || (kfirst && run < CP_MIN_RUN) ||
            2 * p->out_elems * (kout - 1) > Y->elems)
            chunk = 0;
    }
    if (!chunk || Y->elems < CP_MIN_OPERAND)
        return;
    /* Groups of the chunk's product: batch and free labels in C's order,
     * contracted ones in X's. */
    const group *fyg = y ? gn : gm, *fxg = y ? gm : gn;
    /* The chunk's products have all of X's free labels on one side: the
     * own kernel takes them where that side is short (a BLAS step's too). */
    if (p->kind != EB_KIND_SMALL_GEMM &&
        group_size(fxg, label_size) >= EB_SKINNY_MN)
        return;
    group t = group_filter(gb, &in, 1), bi, fy, fx, ki;
    order_by(&t, c, &bi);
    t = group_filter(fyg, &in, 1);
    order_by(&t, c, &fy);
    order_by(fxg, c, &fx);
    t = group_filter(gk, &in, 1);
    order_by(&t, X, &ki);
    int64_t s;
    if (!fuse(c, &fy, label_size, &s) || !fuse(c, &fx, label_size, &s))
        return;
    /* The outer dims: Y's free and batch labels (outermost first), then
     * its contracted ones; the latter's chunks add into one block of C. */
    group ko = group_filter(&out, gk, 1), fo = group_filter(&out, gk, 0);
    /* X in place, or prepared: its outer labels, the chunk's batch
     * labels, then its free and the chunk's contracted labels. */
    axes xl = *X;
    int xprep = !fuse(X, &fx, label_size, &s) || !fuse(X, &ki, label_size, &s);
    if (xprep) {
        group xout = {0};
        for (int q = 0; q < X->n; q++)
            if (find(out.id, out.n, X->id[q]) >= 0)
                xout.id[xout.n++] = X->id[q];
        const group *gs[4] = {&xout, &bi, y ? &fx : &ki, y ? &ki : &fx};
        compact_axes(gs, 4, label_size, &xl);
        group none = {0};
        make_xform(p->dt, X, &xl, &none, &p->xf[x]);
    }
    axes yl;
    const group *gy[3] = {&bi, y ? &ki : &fy, y ? &fy : &ki};
    compact_axes(gy, 3, label_size, &yl);
    /* The chunk's dims in Y's order (increasing stride), for its table. */
    p->cp_dims = 0;
    for (int q = 0; q < Y->n; q++) {
        int l = Y->id[ord[q]];
        if (find(in.id, in.n, l) < 0)
            continue;
        p->cp_dshape[p->cp_dims] = Y->size[ord[q]];
        p->cp_dstride[0][p->cp_dims] = Y->stride[ord[q]];
        p->cp_dstride[1][p->cp_dims] = stride_of(&yl, l);
        p->cp_dims++;
    }
    p->cp_run = run;
    p->prep[x] = xprep;
    p->prep_elems[x] = xprep ? xl.elems : 0;
    p->prep[y] = 0;
    p->prep_elems[y] = 0;
    p->post = 0;
    p->cp = 1;
    p->cp_side = y;
    p->kind = EB_KIND_SMALL_GEMM;
    const axes *la = y ? &xl : &yl, *lb = y ? &yl : &xl;
    const group *mg = y ? &fx : &fy, *ng = y ? &fy : &fx;
    p->cp_M = group_size(mg, label_size);
    p->cp_N = group_size(ng, label_size);
    p->cp_K = group_size(&ki, label_size);
    p->K1 = 1;
    p->sak1 = p->sbk1 = 0;
    fuse(la, mg, label_size, &p->sam);
    fuse(la, &ki, label_size, &p->sak);
    fuse(lb, &ki, label_size, &p->sbk);
    fuse(lb, ng, label_size, &p->sbn);
    fuse(c, mg, label_size, &p->scm);
    fuse(c, ng, label_size, &p->scn);
    /* C's offsets of the chunk's m and n labels, for the block's store
     * (vstride[g][1]: the vector-batch plan's C strides, unused here). */
    vec_group(mg, la, c, label_size, p, 0);
    vec_group(ng, lb, c, label_size, p, 1);
    p->cp_acc = ko.n > 0;
    p->nb = bi.n;
    for (int q = 0; q < bi.n; q++) {
        p->bshape[q] = label_size[bi.id[q]];
        p->bstride[0][q] = stride_of(la, bi.id[q]);
        p->bstride[1][q] = stride_of(lb, bi.id[q]);
        p->bstride[2][q] = stride_of(c, bi.id[q]);
    }
    fuse_batch(p);
    p->cp_nout = 0;
    for (int g = 0; g < 2; g++) {
        const group *o = g ? &ko : &fo;
        for (int q = o->n - 1; q >= 0; q--) {
            int l = o->id[q], d = p->cp_nout++;
            p->cp_shape[d] = label_size[l];
            p->cp_stride[0][d] = stride_of(Y, l);
            p->cp_stride[1][d] = stride_of(&xl, l);
            p->cp_stride[2][d] = stride_of(c, l);
        }
    }
    p->cp_nk = ko.n;
    p->cp_blk = chunk;
    p->cp_cblk = p->cp_acc ? (group_size(&bi, label_size) + 1) * p->cp_M *
                                 p->cp_N
                           : 0;
    p->bp_moved = Y->elems;
    /* ... then the chunk's tables (int32 places, int64 run offsets:
     * contract_exec.c cp_table) and the block's offsets in C (int64). */
    p->tmp_elems = EB_BP_PARTS * (p->cp_blk + p->cp_cblk) + (chunk + 1) / 2 +
                   chunk / run + p->cp_M + p->cp_N;
}

static void engine_perm(eb_dtype dt, const axes *c, const axes *la,
                        const axes *lb, eb_perm *ew)
{
    int64_t shape[EB_MAX_RANK], so[EB_MAX_RANK], sa[EB_MAX_RANK],
        sb[EB_MAX_RANK];
    for (int d = 0; d < c->n; d++) {
        shape[d] = c->size[d];
        so[d] = c->stride[d];
        sa[d] = stride_of(la, c->id[d]);
        sb[d] = stride_of(lb, c->id[d]);
    }
    eb_perm_plan_dt(ew, dt, c->n, shape, so, sa, sb);
}

/* Operands at most this fraction of the output are worth permuting into
 * the output's order when that turns a tiled step into rows: an outer
 * product re-reads each operand element many times, and a tile transposes
 * it again on every read. */
enum { ENGINE_PREP_RATIO = 4 };
/* One operand alone is worth permuting into the output's order when it is
 * at most half the output and that makes rows (plan_engine). */
enum { ENGINE_ONE_RATIO = 2 };

/* A small operand that varies along the output's innermost dims (a
 * factor whose labels sit among the short inner dims of a large product)
 * is expanded over those dims until they make a row of at least
 * EXPAND_ROW_BYTES, if the copy stays within EXPAND_MAX_BYTES: the step
 * then multiplies whole rows by one row of the copy. gm_queen's products
 * of a 43 M-element tensor by a 3 x 3 factor whose labels are its 2nd and
 * 4th innermost dims ran as tiles of 3 elements. */
enum { EXPAND_ROW_BYTES = 1024, EXPAND_MAX_BYTES = 64 * 1024 };

/* lay: operand s's labels among c's, in c's order, compact; with
 * `inner` > 0, c's last dims up to `inner` elements all included (the
 * operand broadcast over those it lacks). */
static void engine_layout(const axes *c, const axes *op, int64_t inner,
                          const int64_t *label_size, axes *lay)
{
    int j = c->n;
    for (int64_t e = 1; inner > 0 && j > 0 && e < inner; j--)
        e *= c->size[j - 1];
    group g = {0};
    for (int d = 0; d < c->n; d++)
        if (d >= j || stride_of(op, c->id[d]))
            g.id[g.n++] = c->id[d];
    const group *one[1] = {&g};
    compact_axes(one, 1, label_size, lay);
}

/* Elements of a ROW plan's rows (its innermost dim), of an XROW plan's
 * (its two innermost), 0 for other modes. */
static int64_t engine_row(const eb_perm *e)
{
    if (e->mode == EB_PERM_XROW)
        return e->shape[e->rank - 1] * e->shape[e->rank - 2];
    return e->mode == EB_PERM_ROW && e->rank ? e->shape[e->rank - 1] : 0;
}

/* Is the engine plan e (of elements of es bytes) tiles, or rows shorter
 * than EXPAND_ROW_BYTES in an output of EXPAND_MAX_BYTES or more (rows
 * that short cost a pass of the loop nest each; a smaller output is a few
 * rows at most, whatever its layout)? */
static int engine_slow(const eb_perm *e, int64_t es)
{
    return (e->mode != EB_PERM_ROW && e->mode != EB_PERM_XROW) ||
           (engine_row(e) * es < EXPAND_ROW_BYTES &&
            e->elems * es >= EXPAND_MAX_BYTES);
}

/* Take lay[s] for the operands `mask` says, if the engine then runs rows
 * longer than the current plan's (with `fast`, rows engine_slow does not
 * call slow) and the copies are at most 1 / ratio of the output. */
static int engine_try(const layout *L, const axes *ax, const group *sum,
                      const axes *lay, int mask, int64_t ratio, int fast,
                      eb_plan *p)
{
    const axes *use[2];
    int64_t moved = 0;
    for (int s = 0; s < 2; s++) {
        use[s] = mask >> s & 1 ? &lay[s] : &L->lay[s];
        moved += mask >> s & 1 ? ax[s].elems : 0;
    }
    eb_perm alt;
    engine_perm(p->dt, &L->c, use[0], use[1], &alt);
    if (!engine_row(&alt) || engine_row(&alt) <= engine_row(&p->ew) ||
        moved * ratio > L->c.elems ||
        (fast && engine_slow(&alt, (int64_t)eb_dtype_size(p->dt))))
        return 0;
    p->ew = alt;
    for (int s = 0; s < 2; s++) {
        if (!(mask >> s & 1))
            continue;
        int same = 1;
        for (int d = 0; d < lay[s].n && same; d++)
            same = stride_of(&L->lay[s], lay[s].id[d]) == lay[s].stride[d];
        if (same && !p->prep[s])
            continue; /* already in the output's order */
        make_xform(p->dt, &ax[s], &lay[s], &sum[s], &p->xf[s]);
        p->prep[s] = 1;
        p->prep_elems[s] = lay[s].elems;
    }
    return 1;
}

/*
 * EB_KIND_MUL, EB_KIND_OUTER: one engine plan over the output's labels,
 * each operand read in its (prepared) layout. When that plan is not rows
 * and the operands are small next to the output (a broadcast), they are
 * first permuted into the output's label order, once; failing that, the
 * small ones are expanded over the output's innermost dims (EXPAND_*).
 */
static void plan_engine(const layout *L, const axes *ax, const group *sum,
                        const int64_t *label_size, eb_plan *p)
{
    engine_perm(p->dt, &L->c, &L->lay[0], &L->lay[1], &p->ew);
    int64_t es = (int64_t)eb_dtype_size(p->dt), inner = EXPAND_ROW_BYTES / es;
    if (!engine_slow(&p->ew, es))
        return;
    axes lay[2];
    for (int s = 0; s < 2; s++)
        engine_layout(&L->c, &L->lay[s], 0, label_size, &lay[s]);
    if (engine_try(L, ax, sum, lay, 3, ENGINE_PREP_RATIO, 0, p))
        return;
    /* One operand permuted into the output's order, the other read as it
     * lies, where that makes long rows (an outer product whose operand in
     * the output's order is broadcast over the other's short free dims:
     * XROW), the copy is at most half the output and the output at least
     * EXPAND_MAX_BYTES. gm_queen's eager outer products (16 dims of 3),
     * one-step instances, `plan --time --mode eager`: two 14 M-element
     * operands into 43 M 57-64 -> 41-44 ms, 4.8 M and 1.6 M into 14 M
     * 14.0 -> 7.5, 59049 elements out 0.042 -> 0.018, 19683 out 0.019 ->
     * 0.010, 6561 out (under 64 KiB) 0.004 both ways; tensornetwork's
     * 262144 out (dims of 2) into rows of 16 (too short: refused) 0.087
     * -> 0.207. */
    if (L->c.elems * es >= EXPAND_MAX_BYTES)
        for (int s = 0; s < 2; s++)
            if (engine_try(L, ax, sum, lay, 1 << s, ENGINE_ONE_RATIO, 1, p))
                return;
    int mask = 0;
    for (int s = 0; s < 2; s++) {
        engine_layout(&L->c, &L->lay[s], inner, label_size, &lay[s]);
        if (lay[s].elems * es <= EXPAND_MAX_BYTES &&
            lay[s].elems * ENGINE_PREP_RATIO <= L->c.elems)
            mask |= 1 << s;
    }
    if (mask == 1 || mask == 2)
        engine_try(L, ax, sum, lay, mask, ENGINE_PREP_RATIO, 0, p);
}

/*
 * A skinny GEMM (SKINNY_MN) stays with BLAS where the own kernel would copy
 * B's panels element by element for few rows of C: B not contiguous along
 * n in the kernel's row-major view of C (C^T = B^T A^T when C is
 * column-major), the k-vector form not taken, fewer than 32 rows to share
 * the copy, one-level K, and strides BLAS accepts (3 x 19683 x 27 with B
 * stored [n][k]: own 1.0 GFLOP/s against BLAS 8.1).
 */
static int skinny_to_blas(const eb_plan *p)
{
    if (p->kind != EB_KIND_SMALL_GEMM || tiny_gemm(p) || p->K1 > 1)
        return 0;
    int t = p->scn != 1 && p->scm == 1;
    int64_t rows = t ? p->N : p->M, sbn = t ? p->sam : p->sbn;
    int kcontig = p->sak == 1 && p->sbk == 1;
    if (sbn == 1 || rows >= 32 || (kcontig && p->K >= 64))
        return 0;
    return blas_layout(p);
}

static eb_status plan(const eb_view *a, const eb_view *b, const int *keep,
                      int nkeep, int fixed_order, const int64_t *label_size,
                      eb_dtype dt, int wide, int own, int few_k, eb_plan *p,
                      eb_error *err);

/* See eb_contract_plan: the shortest K of a mid_skinny GEMM in a fixed
 * order whose C goes through a post permutation to the own kernel. */
#ifndef POST_MIN_K
#define POST_MIN_K 128
#endif

/* Are the own kernel's rows C's shorter side (its long side contiguous)? */
static int short_rows(const eb_plan *p)
{
    int t = p->scn != 1 && p->scm == 1;
    int64_t rows = t ? p->N : p->M, shorter = p->M < p->N ? p->M : p->N;
    if (p->scm != 1 && p->scn != 1)
        rows = -1; /* C strided both ways: a stack tile, rows of M */
    return rows == shorter;
}

/*
 * A GEMM whose short side is from SKINNY_MN to EB_SKINNY_SIDE - 1
 * (mid_skinny) runs on the own kernel only where that kernel's rows are
 * the short side (C's long side has unit stride: 4 x 12 register blocks,
 * the long side on the vector lanes); otherwise it is planned again for
 * BLAS. With the long side as rows the own kernel runs blocks of 2 rows
 * by 6 vectors and was slower than BLAS (404 x 21 x 480, A stored [k][m]:
 * 10 against 18 GFLOP/s with A from memory, 24 against 26 from cache;
 * with the short side as rows 20 and 35).
 *
 * In a fixed output order (eager's), such a C whose short side is the
 * contiguous one is first planned the other way round: the kernel writes
 * C long side contiguous into scratch (the post permutation then stores
 * its few thousand elements in the fixed order), where K is at least
 * POST_MIN_K and the long side's operand is contiguous along it (the
 * kernel reads it in place). str_matrix_chain's 96 steps of 21 x (94 to
 * 507) x (43 to 507), C [long][21]: eager 20.4 -> 15.8-16.1 ms (trace
 * 14.6-17.6), one step of 404 x 21 x 480 alone 0.365 -> 0.28 ms. With a
 * short K and operands in cache BLAS stays faster (301 x 29 x 100: 46
 * against 28 GFLOP/s, at K = 150 even), so shorter Ks keep BLAS.
 */
eb_status eb_contract_plan(const eb_view *a, const eb_view *b, const int *keep,
                           int nkeep, int fixed_order,
                           const int64_t *label_size, eb_dtype dt,
                           eb_plan *p, eb_error *err)
{
    int own = eb_contract_own_wider();
    eb_status st = plan(a, b, keep, nkeep, fixed_order, label_size, dt,
                        WIDE_OWN, own, 1, p, err);
    if (st || p->kind != EB_KIND_SMALL_GEMM || !mid_skinny(p) ||
        short_rows(p) || own)
        return st;
    if (fixed_order && p->K >= POST_MIN_K &&
        (p->M > p->N ? p->sam : p->sbn) == 1) {
        st = plan(a, b, keep, nkeep, fixed_order, label_size, dt, WIDE_POST,
                  own, 1, p, err);
        if (st || (p->kind == EB_KIND_SMALL_GEMM && short_rows(p)))
            return st;
    }
    return plan(a, b, keep, nkeep, fixed_order, label_size, dt, WIDE_BLAS,
                own, 1, p, err);
}

static eb_status plan(const eb_view *a, const eb_view *b, const int *keep,
                      int nkeep, int fixed_order, const int64_t *label_size,
                      eb_dtype dt, int wide, int own, int few_k, eb_plan *p,
                      eb_error *err)
{
    if (a->rank > EB_MAX_RANK || (b && b->rank > EB_MAX_RANK) ||
        nkeep > EB_MAX_RANK)
        return eb_error_set(err, EB_ERR_UNSUPPORTED,
                            "a step has more than %d labels", EB_MAX_RANK);
    memset(p, 0, offsetof(eb_plan, bshape));
    p->dt = dt;
    axes ax[2];
    merge_view(a, &ax[0]);
    if (b)
        merge_view(b, &ax[1]);
    else
        ax[1].n = 0;
    group gb, gm, gk, gn, sum[2];
    classify(ax, b != NULL, keep, nkeep, &gb, &gm, &gk, &gn, sum);
    p->nbatch = group_size(&gb, label_size);
    p->M = group_size(&gm, label_size);
    p->N = group_size(&gn, label_size);
    p->K = group_size(&gk, label_size);
    p->kind = b ? pick_kind(p, wide, own, own_batch(ax, &gb), few_k)
                : EB_KIND_COPY;
    p->vw = 0;
    p->tmp_elems = 0;
    int nsum[2] = {sum[0].n, sum[1].n};
    if (b && plan_vec(ax, &gb, &gm, &gk, &gn, nsum, keep, nkeep, fixed_order,
                      label_size, 1, p)) {
        p->flops = (double)p->nbatch * (double)p->M * (double)p->N *
                   (double)p->K * 2;
        return EB_OK;
    }
    /* Candidate orders: led by the operands' memory order, or by the
     * required output order; contracted labels in A's or B's order. */
    orders cand[4];
    int nc = 0;
    for (int lead = 0; lead < (fixed_order ? 2 : 1); lead++)
        for (int kb = 0; kb < (b ? 2 : 1); kb++) {
            orders *o = &cand[nc++];
            if (lead == 0) {
                order_by(&gb, &ax[0], &o->b);
                order_by(&gm, &ax[0], &o->m);
                order_by(&gn, &ax[1], &o->n);
            } else {
                order_by_ids(&gb, keep, nkeep, &o->b);
                order_by_ids(&gm, keep, nkeep, &o->m);
                order_by_ids(&gn, keep, nkeep, &o->n);
            }
            order_by(&gk, &ax[kb], &o->k);
        }
    layout best, L;
    int bi = 0;
    for (int c = 0; c < nc; c++) {
        evaluate(p, ax, nsum, &cand[c], keep, nkeep, fixed_order,
                 wide == WIDE_POST, label_size, &L);
        if (c == 0 || L.cost < best.cost) {
            best = L;
            bi = c;
        }
    }
    const orders *o = &cand[bi];
    for (int s = 0; s < (b ? 2 : 1); s++) {
        p->prep[s] = best.prep[s];
        if (p->prep[s]) {
            make_xform(p->dt, &ax[s], &best.lay[s], &sum[s], &p->xf[s]);
            p->prep_elems[s] = best.lay[s].elems;
        }
    }
    /* Output labels: the layout's (size > 1) then the size-1 kept labels. */
    if (fixed_order) {
        p->out_rank = nkeep;
        memcpy(p->out_ids, keep, (size_t)nkeep * sizeof(int));
    } else {
        p->out_rank = best.c.n;
        memcpy(p->out_ids, best.c.id, (size_t)best.c.n * sizeof(int));
        for (int k = 0; k < nkeep; k++)
            if (label_size[keep[k]] == 1)
                p->out_ids[p->out_rank++] = keep[k];
    }
    p->out_elems = best.c.elems;
    p->post = best.post;
    const axes *kc = p->post ? &best.tmp : &best.c;
    if (p->post) {
        group none = {0};
        make_xform(p->dt, &best.tmp, &best.c, &none, &p->xf_post);
        p->tmp_elems = best.tmp.elems;
    }
    if (p->kind == EB_KIND_COPY) {
        /* The prep xform writes the output directly. */
        make_xform(p->dt, &ax[0], &best.c, &sum[0], &p->xf[0]);
        p->prep[0] = 0;
        p->prep_elems[0] = 0;
        p->post = 0;
        p->flops = (double)ax[0].elems;
        return EB_OK;
    }
    double all = (double)p->nbatch * (double)p->M * (double)p->N * (double)p->K;
    for (int s = 0; s < 2; s++)
        for (int q = 0; q < sum[s].n; q++)
            all *= (double)label_size[sum[s].id[q]];
    p->flops = all * ((gk.n || sum[0].n || sum[1].n) ? 2 : 1);
    if (eb_kind_engine(p->kind)) {
        plan_engine(&best, ax, sum, label_size, p);
        return EB_OK;
    }
    p->nb = gb.n;
    for (int q = 0; q < gb.n; q++) {
        int l = o->b.id[q];
        p->bshape[q] = label_size[l];
        p->bstride[0][q] = stride_of(&best.lay[0], l);
        p->bstride[1][q] = stride_of(&best.lay[1], l);
        p->bstride[2][q] = stride_of(kc, l);
    }
    fuse_batch(p);
    fuse(&best.lay[0], &o->m, label_size, &p->sam);
    fuse(&best.lay[1], &o->n, label_size, &p->sbn);
    p->K1 = 1;
    p->sak1 = p->sbk1 = 0;
    if (best.ksplit) {
        group outer = sub_group(&o->k, 0, best.ksplit),
              inner = sub_group(&o->k, best.ksplit, o->k.n);
        p->K1 = group_size(&outer, label_size);
        fuse(&best.lay[0], &outer, label_size, &p->sak1);
        fuse(&best.lay[0], &inner, label_size, &p->sak);
        fuse(&best.lay[1], &outer, label_size, &p->sbk1);
        fuse(&best.lay[1], &inner, label_size, &p->sbk);
    } else {
        fuse(&best.lay[0], &o->k, label_size, &p->sak);
        fuse(&best.lay[1], &o->k, label_size, &p->sbk);
    }
    fuse(kc, &o->m, label_size, &p->scm);
    fuse(kc, &o->n, label_size, &p->scn);
    if (few_k_to_blas(p, own)) {
        /* Planned again at most once; a layout BLAS cannot run stays the
         * own kernel's (which runs any). */
        if (blas_layout(p))
            p->kind = EB_KIND_GEMM;
        else if (few_k)
            return plan(a, b, keep, nkeep, fixed_order, label_size, dt, wide,
                        own, 0, p, err);
    } else if (skinny_to_blas(p))
        p->kind = EB_KIND_GEMM;
    plan_blocked(ax, &best, o, nsum, fixed_order, label_size, p);
    if (p->bp)
        return EB_OK;
    if (!plan_vec_prep(ax, &gb, &gm, &gk, &gn, nsum, keep, nkeep,
                       fixed_order, label_size, p) &&
        !plan_vec_gather(ax, &gb, &gm, &gk, &gn, nsum, keep, nkeep,
                         fixed_order, label_size, p))
        plan_vec_out(ax, &gb, &gm, &gk, &gn, nsum, keep, nkeep, fixed_order,
                     label_size, p);
    return EB_OK;
}

/* Peeling (eb_contract_plan_peel) is tried for plans that move at least
 * this many elements, and taken when it saves at least half of the
 * elements the step's operands and output hold: the per-batch kernels it
 * leads to are smaller, so only a large preparation pays for them (lm's
 * 12 x 13200 x 144 GEMM with B = LRwB permuted whole, 1.9 M elements).
 * Per-batch products below PEEL_MIN_MNK multiply-adds are not taken: lm's
 * 1900 x (16 x 4 x 4) as 7600 x (4 x 4 x 4) ran 32% more instructions in
 * the same time. A peel that leads to few large products (PEEL_BIG_MNK
 * each) with a short one-level K (LOW_K: bound by writing C, which the
 * peel does not change) is also taken when it moves at most an eighth
 * (PEEL_BIG_SAVES) of the elements, counting a preparation of the widened
 * operand: lm's hmn,fn0F->hmf0F (16 x 30400 x 4, B permuted whole) as 4
 * products of 16 x 7600 x 4 reading B in place, brackets' ñÅî,ÈÅ0ð->ñîÈ0ð
 * the same with A's 64 elements prepared 4 times. A long K read in place
 * through strides is not (mera's 500 x 432 x 108 as 25 x (20 x 432 x
 * 108): 2-4 times slower than BLAS on the prepared operands). */
enum {
    PEEL_MIN_MOVED = 1 << 15,
    PEEL_MIN_MNK = 512,
    PEEL_BIG_MNK = 1 << 16,
    PEEL_BIG_SAVES = 8,
    PEEL_DEEP_MIN_MOVED = 1 << 17,
    PEEL_DEEP_FLOPS = 600
};

static int gemm_kind(eb_kind k)
{
    return k == EB_KIND_GEMM || k == EB_KIND_SMALL_GEMM || k == EB_KIND_GEMV;
}

int eb_plan_vec_gemv(const eb_plan *p)
{
    if (p->kind != EB_KIND_VEC_GEMM || p->vw < EB_VEC_GEMV_MIN_W)
        return 0;
    if (p->M == 1 && p->vsw[1] == 1)
        return 1;
    return p->N == 1 && p->vsw[0] == 1 ? 2 : 0;
}

int eb_plan_wrows(const eb_plan *p)
{
    if (p->kind != EB_KIND_SMALL_GEMM || p->dt != EB_F64 || p->K1 != 1 ||
        p->bp || p->cp || p->nb < 1)
        return 0;
    int d = p->nb - 1;
    return p->bstride[0][d] == 1 && p->bshape[d] >= EB_WROWS_MIN_W &&
           p->sak != 1 && p->sbn == 1 && p->scn == 1 &&
           p->N <= EB_WROWS_MAX_N && p->K <= EB_WROWS_MAX_K;
}

int eb_plan_engine_slow(const eb_plan *p)
{
    return eb_kind_engine(p->kind) &&
           engine_slow(&p->ew, (int64_t)eb_dtype_size(p->dt));
}

int64_t eb_plan_moved(const eb_plan *p)
{
    return (p->prep[0] ? p->prep_elems[0] : 0) +
           (p->prep[1] ? p->prep_elems[1] : 0) + p->bp_moved +
           (p->post ? p->out_elems : 0);
}

double eb_plan_work(const eb_plan *q)
{
    double w = (double)q->out_elems + (double)q->prep_elems[0] +
               (double)q->prep_elems[1];
    if (q->kind != EB_KIND_MUL && q->kind != EB_KIND_OUTER)
        w += (double)q->nbatch * (double)q->M * (double)q->N * (double)q->K;
    return w;
}

/* The outermost (largest stride) of x's free labels against o, or -1. */
static int outer_free(const eb_view *x, const eb_view *o, const int *keep,
                      int nkeep)
{
    axes ax, ao;
    merge_view(x, &ax);
    merge_view(o, &ao);
    int l = -1;
    int64_t top = 0;
    for (int q = 0; q < ax.n; q++)
        if (find(ao.id, ao.n, ax.id[q]) < 0 &&
            find(keep, nkeep, ax.id[q]) >= 0 && ax.stride[q] > top) {
            top = ax.stride[q];
            l = ax.id[q];
        }
    return l;
}

/* v with label l added at stride 0: l becomes a batch label of the step,
 * and the kernel runs once per index of it. */
static eb_view widened(const eb_view *v, int l, const int64_t *label_size)
{
    eb_view w = *v;
    w.ids[w.rank] = l;
    w.shape[w.rank] = label_size[l];
    w.stride[w.rank] = 0;
    w.rank++;
    return w;
}

/*
 * The streamed vector-batch GEMM (eb_plan.vs, vecstream.h) for eager's
 * GEMM step p: where an operand Y of at least VS_MIN_OPERAND elements has
 * batch labels as its innermost ones, a run of at least VS_MIN_L elements
 * at unit stride (with at most a quarter of the vectors' lanes idle),
 * the kernel reads Y in place along that run, and the other operand
 * packed with the run innermost (at most VS_MAX_PACK bytes: it is read
 * from L2 for every column of Y) into C', which one permutation puts
 * into C. Taken where that moves at most two thirds of what p moves,
 * counting C' as moved: gm_queen's eager hwscrilmuq,frphigdyneoqsbluw->
 * wsclmuqfpgdyneob (243 x (9 x 19683 x 27), B of 129 M elements
 * permuted whole, then C) moved 172 M elements, here 51 M of C' and
 * 43 M of C (a scratch program: the kernel 116 ms, the put 49, against
 * 267 for the step). Only where the AVX-512 kernel runs (not under
 * Valgrind): the portable loops are for the tests.
 */
enum { VS_MIN_OPERAND = 1 << 20, VS_MIN_L = 8, VS_MAX_PACK = 640 << 10 };
#ifndef VS_STREAM_MIN_BYTES
#define VS_STREAM_MIN_BYTES (24 << 20)
#endif

static void vs_dims(const group *g, const axes *x, const axes *y,
                    const int64_t *label_size, int64_t *shape,
                    int64_t (*stride)[EB_MAX_RANK])
{
    for (int q = 0; q < g->n; q++) {
        shape[q] = label_size[g->id[q]];
        stride[0][q] = stride_of(x, g->id[q]);
        stride[1][q] = stride_of(y, g->id[q]);
    }
}

/* The lanes of Y: its labels by increasing stride from 1 while each is
 * a batch label (of gb) whose stride continues the run, outermost first.
 * Returns the run's length L, or 0 when another label of Y lies inside
 * the run. */
static int64_t vs_lanes(const axes *Y, const group *gb, group *lanes)
{
    lanes->n = 0;
    int64_t L = 1;
    int q = 0;
    while (q < Y->n) {
        for (q = 0; q < Y->n; q++)
            if (Y->stride[q] == L && find(gb->id, gb->n, Y->id[q]) >= 0)
                break;
        if (q == Y->n)
            break;
        for (int i = lanes->n; i > 0; i--)
            lanes->id[i] = lanes->id[i - 1];
        lanes->id[0] = Y->id[q];
        lanes->n++;
        L *= Y->size[q];
    }
    for (q = 0; q < Y->n; q++)
        if (find(lanes->id, lanes->n, Y->id[q]) < 0 && Y->stride[q] < L)
            return 0;
    return L;
}

/* The put of a streamed plan: C'[r][m][n][x] (each group row-major in
 * its order, the lanes at their strides in Y) into C, as ew. */
static void vs_put(const group *const *g, const axes *Y, const axes *c,
                   const int64_t *label_size, eb_plan *p)
{
    int64_t shape[EB_MAX_RANK], so[EB_MAX_RANK], sx[EB_MAX_RANK];
    int64_t span[4] = {p->vs_M * p->vs_N * p->vs_Lp, p->vs_N * p->vs_Lp,
                       p->vs_Lp, 1};
    int rank = 0;
    for (int i = 0; i < 4; i++) {
        int64_t st = span[i];
        for (int q = g[i]->n - 1; q >= 0; q--) {
            int l = g[i]->id[q];
            shape[rank] = label_size[l];
            so[rank] = stride_of(c, l);
            sx[rank] = i == 3 ? stride_of(Y, l) : st;
            st *= label_size[l];
            rank++;
        }
    }
    eb_perm_plan(&p->ew, rank, shape, so, sx, NULL);
}

static void plan_vs(const eb_view *a, const eb_view *b, const int *keep,
                    int nkeep, const int64_t *label_size, eb_plan *p)
{
    if (p->dt != EB_F64 || !eb_vs_avx512())
        return;
    axes ax[2];
    merge_view(a, &ax[0]);
    merge_view(b, &ax[1]);
    group gb, gm, gk, gn, sum[2];
    classify(ax, 1, keep, nkeep, &gb, &gm, &gk, &gn, sum);
    if (sum[0].n || sum[1].n || gk.n == 0)
        return;
    for (int s = 0; s < 2; s++)
        for (int q = 0; q < ax[s].n; q++)
            if (ax[s].stride[q] <= 0)
                return; /* broadcast (a widened view) */
    int64_t moved = eb_plan_moved(p);
    for (int y = 0; y < 2; y++) {
        const axes *Y = &ax[y], *X = &ax[1 - y];
        group lanes;
        int64_t L = Y->elems >= VS_MIN_OPERAND ? vs_lanes(Y, &gb, &lanes)
                                               : 0,
                Lp = (L + 7) / 8 * 8;
        if (L < VS_MIN_L || 4 * L < 3 * Lp)
            continue;
        group t = group_filter(&gb, &lanes, 0), gr, fx, fy, ko;
        order_by(&t, Y, &gr);
        axes c;
        keep_axes(keep, nkeep, label_size, &c);
        order_by(y ? &gm : &gn, &c, &fx);
        order_by(y ? &gn : &gm, Y, &fy);
        order_by(&gk, Y, &ko);
        int64_t R = group_size(&gr, label_size),
                M = group_size(&fx, label_size),
                N = group_size(&fy, label_size),
                K = group_size(&ko, label_size);
        int64_t pack = R * K * M * Lp, cp = R * M * N * Lp;
        if (pack * (int64_t)sizeof(double) > VS_MAX_PACK ||
            3 * (pack + c.elems + cp) > 2 * moved)
            continue;
        plan_reset(p);
        p->kind = EB_KIND_VEC_GEMM;
        p->vw = 0;
        p->vs = 1;
        p->vs_y = y;
        p->vs_L = L;
        p->vs_Lp = Lp;
        p->vs_R = R;
        p->vs_M = M;
        p->vs_N = N;
        p->vs_stream = cp * (int64_t)sizeof(double) > VS_STREAM_MIN_BYTES;
        p->K1 = 1;
        p->post = 0;
        p->out_rank = nkeep;
        memcpy(p->out_ids, keep, (size_t)nkeep * sizeof(int));
        p->out_elems = c.elems;
        p->tmp_elems = 8 + pack + cp + 2 * R + 2 * K + N + M + L;
        p->bp_moved = pack + c.elems;
        p->nb = gr.n;
        vs_dims(&gr, X, Y, label_size, p->bshape, p->bstride);
        const group *gs[4] = {&gr, &fx, &fy, &ko};
        for (int g = 0; g < 3; g++) {
            p->vdims[g] = gs[g + 1]->n;
            vs_dims(gs[g + 1], X, Y, label_size, p->vshape[g],
                    p->vstride[g]);
        }
        p->cp_dims = lanes.n;
        vs_dims(&lanes, X, Y, label_size, p->cp_dshape, p->cp_dstride);
        const group *put[4] = {&gr, &fx, &fy, &lanes};
        vs_put(put, Y, &c, label_size, p);
        return;
    }
}

/* eb_contract_plan_peel without the streamed form. */
static eb_status plan_peel(const eb_view *a, const eb_view *b,
                           const int *keep, int nkeep,
                           const int64_t *label_size, eb_dtype dt,
                           eb_plan *p, eb_error *err)
{
    eb_status st = eb_contract_plan(a, b, keep, nkeep, 1, label_size, dt, p,
                                    err);
    if (!st && b)
        plan_chunked(a, b, keep, nkeep, label_size, p);
    if (st || !b || eb_plan_moved(p) < PEEL_MIN_MOVED ||
        !gemm_kind(p->kind) || a->rank >= EB_MAX_RANK ||
        b->rank >= EB_MAX_RANK)
        return st;
    const eb_view *v[2] = {a, b};
    int64_t touched = eb_view_elems(a) + eb_view_elems(b) + p->out_elems;
    for (int s = 0; s < 2; s++) {
        int l = outer_free(v[s], v[1 - s], keep, nkeep);
        if (l < 0)
            continue;
        eb_view w = widened(v[1 - s], l, label_size);
        eb_plan q;
        if (eb_contract_plan(s ? &w : a, s ? b : &w, keep, nkeep, 1,
                             label_size, dt, &q, err) != EB_OK ||
            !gemm_kind(q.kind))
            continue;
        int64_t mnk = q.M * q.N * q.K;
        /* Few large products with a short K: the widened operand may be
         * prepared (counted in what q moves). */
        int big = mnk >= PEEL_BIG_MNK && q.K <= LOW_K && q.K1 == 1 &&
                  PEEL_BIG_SAVES * eb_plan_moved(&q) <= eb_plan_moved(p);
        if (big || (!q.prep[1 - s] && mnk >= PEEL_MIN_MNK &&
                    2 * (eb_plan_moved(p) - eb_plan_moved(&q)) >= touched))
            *p = q;
    }
    /* Deeper, for a step that moves an operand x whole because its free
     * labels are split by contracted ones, or its C because x's free
     * labels come in another order there (eager's canonical orders:
     * gm_queen's frphivgdynexoqsb,lxuvw->frphigdyneoqsbluw permuted 43 M
     * elements of A for a C three times as large): x's free labels,
     * outermost first, become batch labels of the other operand until x
     * is read in place. Taken for products that move at most half as
     * much, with a short K or where the step moves at least one element
     * per PEEL_DEEP_FLOPS flops (a moved element, some 0.4 ns, costs more
     * than 3% of that many flops: the margin for products slower than
     * the one GEMM; eager mera closed's 40 x 198288 x 171 with 33.9 M
     * elements of A permuted, as 7344 x (40 x 27 x 171): plan --time 97
     * -> 71 ms; its 1026 x 33048 x 40, 1.4 M moved for 2.7 G flops, as
     * 3672 x (1026 x 9 x 40): 59 -> 70 ms), and where the step moves at
     * least
     * PEEL_DEEP_MIN_MOVED elements (below, a blocked preparation in cache
     * was faster: wkxl,lkj->wxj with w = 1001, k = 5, x = 4, l = 3, j =
     * 200 took 0.29 ms blocked, 0.32 ms as 1001 products; with w = 10001,
     * 4.24 and 3.91 ms). */
    for (int s = 0; s < 2 && eb_plan_moved(p) >= PEEL_DEEP_MIN_MOVED; s++) {
        eb_view w = *v[1 - s];
        eb_plan q;
        int found = 0;
        while (!found && w.rank < EB_MAX_RANK) {
            int l = outer_free(v[s], &w, keep, nkeep);
            if (l < 0)
                break;
            w = widened(&w, l, label_size);
            if (eb_contract_plan(s ? &w : a, s ? b : &w, keep, nkeep, 1,
                                 label_size, dt, &q, err) != EB_OK)
                break;
            found = !q.prep[s] && !q.bp;
        }
        if (found && gemm_kind(q.kind) && q.M > 1 && q.N > 1 &&
            (q.K <= LOW_K ||
             (double)eb_plan_moved(p) * PEEL_DEEP_FLOPS >= p->flops) &&
            q.M * q.N * q.K >= PEEL_MIN_MNK &&
            2 * eb_plan_moved(&q) <= eb_plan_moved(p))
            *p = q;
    }
    /* Both at once, where C interleaves the two free sides around each
     * other (mera's last step, PQ...: P from A, Q from B, then A's other
     * free labels, then B's: as one GEMM its C was permuted whole, 43 M
     * elements): C's outermost free label of each operand a batch label
     * of the other, for few large products that save at least half of
     * what the step touches. A widened operand is prepared once, its
     * widened label read at stride 0 (layout_operand): eager's canonical
     * A of that step, 8.9 M elements moved instead of 51.9 M, plan --time
     * 188 -> 151-174 ms on mera open (prepared 3 times over Q, 26.6 M
     * elements, it had run slower, 270 -> 300 ms, and was declined);
     * trace lays A out for the GEMM and moves nothing (400 -> 240-280
     * ms). Products of the own kernel
     * with a long K read in place are not taken (mera closed's 136 x 9720
     * x 441 as 51 x (8 x 3240 x 441): 40 -> 224 ms); tensornetwork's K = 2
     * step is (2 x 8 x 65536 as 8 x 4 x 32768: 2.4-3.0 -> 1.2-1.5 ms). */
    int top[2] = {-1, -1};
    for (int q = 0; q < nkeep; q++) {
        int ina = find(a->ids, a->rank, keep[q]) >= 0,
            inb = find(b->ids, b->rank, keep[q]) >= 0;
        if (ina != inb && top[inb] < 0 && label_size[keep[q]] > 1)
            top[inb] = keep[q];
    }
    if (top[0] >= 0 && top[1] >= 0) {
        eb_view wa = widened(a, top[1], label_size),
                wb = widened(b, top[0], label_size);
        eb_plan q;
        if (eb_contract_plan(&wa, &wb, keep, nkeep, 1, label_size, dt, &q,
                             err) == EB_OK &&
            gemm_kind(q.kind) && q.M * q.N * q.K >= PEEL_BIG_MNK &&
            (q.kind == EB_KIND_GEMM || q.K <= LOW_K) &&
            2 * (eb_plan_moved(p) - eb_plan_moved(&q)) >= touched)
            *p = q;
    }
    return EB_OK;
}

eb_status eb_contract_plan_peel(const eb_view *a, const eb_view *b,
                                const int *keep, int nkeep,
                                const int64_t *label_size, eb_dtype dt,
                                eb_plan *p, eb_error *err)
{
    eb_status st = plan_peel(a, b, keep, nkeep, label_size, dt, p, err);
    if (!st && b)
        plan_vs(a, b, keep, nkeep, label_size, p);
    return st;
}
