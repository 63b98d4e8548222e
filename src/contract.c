/* contract: planning and execution of one binary contraction step. */
#include "contract.h"

#include <stddef.h>
#include <string.h>

#include "blas.h"
#include "team.h"

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

/* Everything a candidate ordering decides. */
typedef struct {
    int prep[2], post;
    axes lay[2], c;     /* operand layouts after prep; output layout */
    axes tmp;           /* kernel output layout when post */
    int64_t cost;       /* elements moved */
} layout;

static int kind_ok_a(eb_kind kind, const eb_plan *p, int64_t sam, int64_t sak)
{
    if (kind == EB_KIND_GEMM || (kind == EB_KIND_GEMV && p->N == 1))
        return blas_matrix(p->M, p->K, sam, sak);
    if (kind == EB_KIND_GEMV)
        return blas_vector(p->K, sak);
    return 1;
}

static int kind_ok_b(eb_kind kind, const eb_plan *p, int64_t sbk, int64_t sbn)
{
    if (kind == EB_KIND_GEMM || (kind == EB_KIND_GEMV && p->M == 1))
        return blas_matrix(p->K, p->N, sbk, sbn);
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

/* Operand side s (0: A with groups m,k; 1: B with groups k,n). */
static void layout_operand(const eb_plan *p, const axes *in, int nsum,
                           const orders *o, int s, const int64_t *label_size,
                           layout *L)
{
    const group *g1 = s == 0 ? &o->m : &o->k;
    const group *g2 = s == 0 ? &o->k : &o->n;
    int64_t s1, s2;
    int ok = nsum == 0 && fuse(in, g1, label_size, &s1) &&
             fuse(in, g2, label_size, &s2);
    if (ok)
        ok = s == 0 ? kind_ok_a(p->kind, p, s1, s2)
                    : kind_ok_b(p->kind, p, s1, s2);
    L->prep[s] = !ok;
    if (ok) {
        L->lay[s] = *in;
    } else {
        const group *gs[3] = {&o->b, g1, g2};
        compact_axes(gs, 3, label_size, &L->lay[s]);
        L->cost += in->elems;
    }
}

static void layout_output(const eb_plan *p, const orders *o, const int *keep,
                          int nkeep, int fixed, const int64_t *label_size,
                          layout *L)
{
    const group *gs[3] = {&o->b, &o->m, &o->n};
    compact_axes(gs, 3, label_size, &L->tmp);
    L->post = 0;
    if (!fixed) {
        L->c = L->tmp;
        return;
    }
    group all = {0};
    for (int k = 0; k < nkeep; k++)
        if (label_size[keep[k]] > 1)
            all.id[all.n++] = keep[k];
    const group *one[1] = {&all};
    compact_axes(one, 1, label_size, &L->c);
    int64_t scm, scn;
    int ok = fuse(&L->c, &o->m, label_size, &scm) &&
             fuse(&L->c, &o->n, label_size, &scn) &&
             kind_ok_c(p->kind, p, scm, scn);
    if (!ok) {
        L->post = 1;
        L->cost += L->c.elems;
    }
}

static void evaluate(const eb_plan *p, const axes *ax, const int *nsum,
                     const orders *o, const int *keep, int nkeep, int fixed,
                     const int64_t *label_size, layout *L)
{
    L->cost = 0;
    layout_operand(p, &ax[0], nsum[0], o, 0, label_size, L);
    if (p->kind != EB_KIND_COPY)
        layout_operand(p, &ax[1], nsum[1], o, 1, label_size, L);
    layout_output(p, o, keep, nkeep, fixed, label_size, L);
}

static eb_kind pick_kind(const eb_plan *p)
{
    if (p->M == 1 && p->N == 1 && p->K == 1)
        return EB_KIND_MUL;
    if (p->K == 1)
        return EB_KIND_OUTER;
    if (p->M == 1 && p->N == 1)
        return EB_KIND_DOT;
    if ((p->nbatch > 1 && p->M * p->N * p->K <= SMALL_MNK) || p->K <= LOW_K)
        return EB_KIND_SMALL_GEMM;
    if (p->M == 1 || p->N == 1)
        return EB_KIND_GEMV;
    return EB_KIND_GEMM;
}

/* An xform from `in` into the compact layout `out`, summing `sum`. */
static void make_xform(const axes *in, const axes *out, const group *sum,
                       eb_xform *x)
{
    x->rank = out->n;
    for (int d = 0; d < out->n; d++) {
        x->shape[d] = out->size[d];
        x->in_stride[d] = stride_of(in, out->id[d]);
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

/*
 * The vector-batch form (EB_KIND_VEC_GEMM), when a batch label has unit
 * stride in both operands: vectors run along it and nothing is permuted.
 * Without it such a step either permutes both operands (2 (M + N) K
 * elements per batch element moved, against M N K multiply-adds) or runs
 * one small GEMM per batch element with every load on another cache line.
 * Returns 1 when the plan took this form.
 */
static int plan_vec(const axes *ax, const group *gb, const group *gm,
                    const group *gk, const group *gn, const int *nsum,
                    const int *keep, int nkeep, int fixed_order,
                    const int64_t *label_size, eb_plan *p)
{
    if (p->kind != EB_KIND_SMALL_GEMM && p->kind != EB_KIND_GEMM &&
        p->kind != EB_KIND_GEMV)
        return 0;
    if (nsum[0] || nsum[1] || p->M > EB_VEC_MAX_DIM || p->N > EB_VEC_MAX_DIM ||
        p->K > EB_VEC_MAX_DIM || p->M * p->N * p->K > VEC_MAX_MNK)
        return 0;
    int w = -1;
    for (int q = 0; q < gb->n && w < 0; q++)
        if (stride_of(&ax[0], gb->id[q]) == 1 &&
            stride_of(&ax[1], gb->id[q]) == 1 &&
            label_size[gb->id[q]] >= VEC_MIN_W)
            w = gb->id[q];
    if (w < 0)
        return 0;
    /* Output: the required order, else (other batch, m, n, w) so that
     * vectors are stored whole. */
    group rest = {0}, wg = {.n = 1, .id = {w}}, all = {0};
    for (int q = 0; q < gb->n; q++)
        if (gb->id[q] != w)
            rest.id[rest.n++] = gb->id[q];
    axes c;
    if (fixed_order) {
        for (int k = 0; k < nkeep; k++)
            if (label_size[keep[k]] > 1)
                all.id[all.n++] = keep[k];
        const group *one[1] = {&all};
        compact_axes(one, 1, label_size, &c);
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
    p->out_elems = c.elems;
    p->tmp_elems = EB_VEC_WBLOCK * (p->M * p->K + p->K * p->N); /* packs */
    p->vw = label_size[w];
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
    return 1;
}

eb_status eb_contract_plan(const eb_view *a, const eb_view *b, const int *keep,
                           int nkeep, int fixed_order,
                           const int64_t *label_size, eb_plan *p,
                           eb_error *err)
{
    if (a->rank > EB_MAX_RANK || (b && b->rank > EB_MAX_RANK) ||
        nkeep > EB_MAX_RANK)
        return eb_error_set(err, EB_ERR_UNSUPPORTED,
                            "a step has more than %d labels", EB_MAX_RANK);
    memset(p, 0, offsetof(eb_plan, bshape));
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
    p->kind = b ? pick_kind(p) : EB_KIND_COPY;
    p->vw = 0;
    p->tmp_elems = 0;
    int nsum[2] = {sum[0].n, sum[1].n};
    if (b && plan_vec(ax, &gb, &gm, &gk, &gn, nsum, keep, nkeep, fixed_order,
                      label_size, p)) {
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
        evaluate(p, ax, nsum, &cand[c], keep, nkeep, fixed_order, label_size,
                 &L);
        if (c == 0 || L.cost < best.cost) {
            best = L;
            bi = c;
        }
    }
    const orders *o = &cand[bi];
    for (int s = 0; s < (b ? 2 : 1); s++) {
        p->prep[s] = best.prep[s];
        if (p->prep[s]) {
            make_xform(&ax[s], &best.lay[s], &sum[s], &p->xf[s]);
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
        make_xform(&best.tmp, &best.c, &none, &p->xf_post);
        p->tmp_elems = best.tmp.elems;
    }
    if (p->kind == EB_KIND_COPY) {
        /* The prep xform writes the output directly. */
        make_xform(&ax[0], &best.c, &sum[0], &p->xf[0]);
        p->prep[0] = 0;
        p->prep_elems[0] = 0;
        p->post = 0;
        p->flops = (double)ax[0].elems;
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
    fuse(&best.lay[0], &o->k, label_size, &p->sak);
    fuse(&best.lay[1], &o->k, label_size, &p->sbk);
    fuse(&best.lay[1], &o->n, label_size, &p->sbn);
    fuse(kc, &o->m, label_size, &p->scm);
    fuse(kc, &o->n, label_size, &p->scn);
    double all = (double)p->nbatch * (double)p->M * (double)p->N * (double)p->K;
    for (int s = 0; s < 2; s++)
        for (int q = 0; q < sum[s].n; q++)
            all *= (double)label_size[sum[s].id[q]];
    p->flops = all * ((gk.n || sum[0].n || sum[1].n) ? 2 : 1);
    return EB_OK;
}

/* GEMM with general strides mapped onto row-major CBLAS. */
static void gemm_strided(const eb_plan *p, const double *a, const double *b,
                         double *c)
{
    if (p->scn == 1) {
        eb_blas_gemm(p->sak != 1, p->sbn != 1, p->M, p->N, p->K, a,
                     p->sak == 1 ? p->sam : p->sak, b,
                     p->sbn == 1 ? p->sbk : p->sbn, c, p->scm);
    } else {
        /* C is column-major: compute C^T[N,M] = B^T A^T. */
        eb_blas_gemm(p->sbk != 1, p->sam != 1, p->N, p->M, p->K, b,
                     p->sbk == 1 ? p->sbn : p->sbk, a,
                     p->sam == 1 ? p->sak : p->sam, c, p->scn);
    }
}

static void gemv_strided(const eb_plan *p, const double *a, const double *b,
                         double *c)
{
    if (p->N == 1) {
        /* y[M] = A[M,K] x[K] */
        int trans = p->sak != 1;
        eb_blas_gemv(trans, p->M, p->K, a, trans ? p->sak : p->sam, b, p->sbk,
                     c, p->scm);
    } else {
        /* y[N] = B[K,N]^T x[K] */
        int trans = p->sbn == 1;
        eb_blas_gemv(trans, p->N, p->K, b, trans ? p->sbk : p->sbn, a, p->sak,
                     c, p->scn);
    }
}

/* One batch element of the main kernel. */
static void kernel_one(const eb_plan *p, const double *a, const double *b,
                       double *c, eb_exec_counters *cnt)
{
    switch (p->kind) {
    case EB_KIND_MUL:
        *c = *a * *b;
        break;
    case EB_KIND_OUTER:
        eb_kern_outer(p->M, p->N, a, p->sam, b, p->sbn, c, p->scm, p->scn);
        break;
    case EB_KIND_DOT:
        *c = eb_kern_dot(p->K, a, p->sak, b, p->sbk);
        break;
    case EB_KIND_SMALL_GEMM:
        eb_kern_small_gemm(p->M, p->N, p->K, a, p->sam, p->sak, b, p->sbk,
                           p->sbn, c, p->scm, p->scn);
        break;
    case EB_KIND_GEMV:
        gemv_strided(p, a, b, c);
        cnt->blas_calls++;
        break;
    case EB_KIND_GEMM:
        gemm_strided(p, a, b, c);
        cnt->blas_calls++;
        cnt->gemm_calls++;
        break;
    default:
        break;
    }
}

/* Offsets of flat index i over the first nd batch dims (row-major). */
static void batch_offsets(const eb_plan *p, int nd, int64_t i, int64_t *idx,
                          int64_t *off)
{
    off[0] = off[1] = off[2] = 0;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = i % p->bshape[d];
        i /= p->bshape[d];
        for (int s = 0; s < 3; s++)
            off[s] += idx[d] * p->bstride[s][d];
    }
}

static void batch_next(const eb_plan *p, int nd, int64_t *idx, int64_t *off)
{
    for (int d = nd - 1; d >= 0; d--) {
        for (int s = 0; s < 3; s++)
            off[s] += p->bstride[s][d];
        if (++idx[d] < p->bshape[d])
            return;
        for (int s = 0; s < 3; s++)
            off[s] -= p->bstride[s][d] * p->bshape[d];
        idx[d] = 0;
    }
}

/* Elementwise multiply runs its innermost batch dim as one strided row. */
/*
 * Does the innermost batch dim run as a vector inside one kernel call?
 * Elementwise multiplies always; outer products when that dim has unit
 * stride in C (one outer product per batch element would write each of
 * its M*N elements on another cache line).
 */
static int vec_rows(const eb_plan *p)
{
    if (p->nb == 0)
        return 0;
    int last = p->nb - 1;
    return p->kind == EB_KIND_MUL ||
           (p->kind == EB_KIND_OUTER && p->bstride[2][last] == 1 &&
            p->M <= EB_OUTER_WVEC_MAX && p->N <= EB_OUTER_WVEC_MAX &&
            p->bshape[last] >= 8);
}

/* Elements [x0, x1) of the innermost batch dim of one row, as a vector. */
static void vec_row(const eb_plan *p, const double *a, const double *b,
                    double *c, int64_t x0, int64_t x1)
{
    int last = p->nb - 1;
    int64_t sa = p->bstride[0][last], sb = p->bstride[1][last],
            sc = p->bstride[2][last];
    if (p->kind == EB_KIND_MUL)
        eb_kern_mul_strided(x1 - x0, a + x0 * sa, sa, b + x0 * sb, sb,
                            c + x0 * sc, sc);
    else
        eb_kern_outer_wvec(x1 - x0, p->M, p->N, a + x0 * sa, sa, p->sam,
                           b + x0 * sb, sb, p->sbn, c + x0 * sc, p->scm,
                           p->scn);
}

/* Rows [lo, hi) of the batch space. A row is one batch element, or for a
 * vector kernel (vec_rows) one run of the innermost batch dim. */
static void run_rows(const eb_plan *p, const double *a, const double *b,
                     double *c, int64_t lo, int64_t hi, eb_exec_counters *cnt)
{
    int vec = vec_rows(p);
    int nd = vec ? p->nb - 1 : p->nb;
    int64_t idx[EB_MAX_RANK], off[3];
    batch_offsets(p, nd, lo, idx, off);
    for (int64_t i = lo; i < hi; i++) {
        if (vec)
            vec_row(p, a + off[0], b + off[1], c + off[2], 0,
                    p->bshape[p->nb - 1]);
        else
            kernel_one(p, a + off[0], b + off[1], c + off[2], cnt);
        batch_next(p, nd, idx, off);
    }
}

static int64_t row_count(const eb_plan *p)
{
    int64_t n = 1;
    for (int d = 0; d < (vec_rows(p) ? p->nb - 1 : p->nb); d++)
        n *= p->bshape[d];
    return n;
}

/* Work below this many multiply-adds or elements stays on one thread: a
 * wake-up of the team costs microseconds. */
#define PARALLEL_MIN_WORK (1 << 16)

typedef struct {
    const eb_plan *p;
    const double *a, *b;
    double *c;
    const eb_xform *x;
    const double *in;
    double *out;
} job;

static void rows_part(void *arg, int part, int nparts)
{
    const job *j = arg;
    const eb_plan *p = j->p;
    int64_t rows = row_count(p);
    long long lo, hi;
    if (rows >= nparts || !vec_rows(p)) {
        eb_team_split(rows, part, nparts, &lo, &hi);
        run_rows(p, j->a, j->b, j->c, lo, hi, NULL);
        return;
    }
    /* One long vector row: split the row itself. */
    eb_team_split(p->bshape[p->nb - 1], part, nparts, &lo, &hi);
    if (lo < hi)
        vec_row(p, j->a, j->b, j->c, lo, hi);
}

/* One own GEMM split along its longer side of C, in multiples of 12 (the
 * kernel's column chunk and a multiple of its 4-row block). */
static void gemm_part(void *arg, int part, int nparts)
{
    const job *j = arg;
    const eb_plan *p = j->p;
    int split_m = p->M >= p->N;
    int64_t len = split_m ? p->M : p->N;
    long long lo, hi;
    eb_team_split((len + 11) / 12, part, nparts, &lo, &hi);
    lo *= 12;
    hi = hi * 12 < len ? hi * 12 : len;
    if (lo >= hi)
        return;
    if (split_m)
        eb_kern_small_gemm(hi - lo, p->N, p->K, j->a + lo * p->sam, p->sam,
                           p->sak, j->b, p->sbk, p->sbn, j->c + lo * p->scm,
                           p->scm, p->scn);
    else
        eb_kern_small_gemm(p->M, hi - lo, p->K, j->a, p->sam, p->sak,
                           j->b + lo * p->sbn, p->sbk, p->sbn,
                           j->c + lo * p->scn, p->scm, p->scn);
}

static void run_batched(const eb_plan *p, const double *a, const double *b,
                        double *c, eb_team *team, eb_exec_counters *cnt)
{
    int64_t rows = row_count(p);
    double work = (double)p->nbatch * (double)p->M * (double)p->N *
                  (double)p->K;
    int own = p->kind != EB_KIND_GEMM && p->kind != EB_KIND_GEMV;
    if (own && eb_team_size(team) > 1 && work >= PARALLEL_MIN_WORK &&
        (rows > 1 || vec_rows(p))) {
        job j = {.p = p, .a = a, .b = b, .c = c};
        eb_team_run(team, rows_part, &j);
        return;
    }
    if (p->kind == EB_KIND_SMALL_GEMM && eb_team_size(team) > 1 &&
        work >= PARALLEL_MIN_WORK) {
        job j = {.p = p, .a = a, .b = b, .c = c};
        eb_team_run(team, gemm_part, &j);
        return;
    }
    run_rows(p, a, b, c, 0, rows, cnt);
}

static void xform_part(void *arg, int part, int nparts)
{
    const job *j = arg;
    eb_xform sub = *j->x;
    long long lo, hi;
    eb_team_split(sub.shape[0], part, nparts, &lo, &hi);
    int64_t ostride = eb_xform_out_elems(j->x) / sub.shape[0];
    sub.shape[0] = hi - lo;
    if (sub.shape[0] > 0)
        eb_kern_xform(&sub, j->in + lo * sub.in_stride[0],
                      j->out + lo * ostride);
}

/* A permutation or reduction, split along its outermost output dim. */
static void xform(const eb_xform *x, const double *in, double *out,
                  eb_team *team)
{
    int n = eb_team_size(team);
    if (n > 1 && x->rank >= 1 && x->shape[0] >= n &&
        eb_xform_out_elems(x) >= PARALLEL_MIN_WORK) {
        job j = {.x = x, .in = in, .out = out};
        eb_team_run(team, xform_part, &j);
        return;
    }
    eb_kern_xform(x, in, out);
}

/* Offsets of the dims of group g (row-major over vshape[g]) in stride
 * set s: out gets the product of the group's shape entries. */
static void vec_offsets(const eb_plan *p, int g, int s, int64_t *out)
{
    int64_t len = 1;
    out[0] = 0;
    for (int d = 0; d < p->vdims[g]; d++) {
        int64_t n = p->vshape[g][d], st = p->vstride[g][s][d];
        for (int64_t e = len - 1; e >= 0; e--)
            for (int64_t i = n - 1; i >= 0; i--)
                out[e * n + i] = out[e] + i * st;
        len *= n;
    }
}

typedef struct {
    const eb_plan *p;
    const double *a, *b;
    double *c, *pack;
    const int64_t *am, *ak, *bk, *bn, *cm, *cn;
} vec_job;

/*
 * Part of the vector-batch GEMM: a contiguous share of w (in multiples of
 * 8), cut into blocks that this part packs into its own slice of the pack
 * buffer and computes. The buffer holds one block of EB_VEC_WBLOCK; with
 * n parts each gets a block of EB_VEC_WBLOCK / n (at least 8, so at most 8
 * parts work), and the team is woken once per step, not once per block.
 */
static void vec_part(void *arg, int part, int nparts)
{
    const vec_job *j = arg;
    const eb_plan *p = j->p;
    int active = nparts < EB_VEC_WBLOCK / 8 ? nparts : EB_VEC_WBLOCK / 8;
    if (part >= active)
        return;
    int64_t sub = EB_VEC_WBLOCK / active / 8 * 8;
    int64_t mk = p->M * p->K, kn = p->K * p->N;
    double *pa = j->pack + part * sub * (mk + kn), *pb = pa + sub * mk;
    long long lo, hi;
    eb_team_split((p->vw + 7) / 8, part, active, &lo, &hi);
    lo *= 8;
    hi = hi * 8 < p->vw ? hi * 8 : p->vw;
    int64_t rows = 1, idx[EB_MAX_RANK], off[3];
    for (int d = 0; d < p->nb; d++)
        rows *= p->bshape[d];
    batch_offsets(p, p->nb, 0, idx, off);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t w0 = lo; w0 < hi; w0 += sub) {
            int64_t wb = hi - w0 < sub ? hi - w0 : sub;
            eb_kern_vec_pack(0, p->M, p->K, j->a + off[0] + w0, j->am, j->ak,
                             wb, mk, pa);
            eb_kern_vec_pack(0, p->K, p->N, j->b + off[1] + w0, j->bk, j->bn,
                             wb, kn, pb);
            eb_kern_vec_gemm(wb, p->M, p->N, p->K, pa, pb,
                             j->c + off[2] + w0 * p->vscw, j->cm, j->cn,
                             p->vscw);
        }
        batch_next(p, p->nb, idx, off);
    }
}

static void run_vec(const eb_plan *p, const double *a, const double *b,
                    double *c, double *pack, eb_team *team)
{
    int64_t am[EB_VEC_MAX_DIM], cm[EB_VEC_MAX_DIM], bn[EB_VEC_MAX_DIM],
        cn[EB_VEC_MAX_DIM], ak[EB_VEC_MAX_DIM], bk[EB_VEC_MAX_DIM];
    vec_offsets(p, 0, 0, am);
    vec_offsets(p, 0, 1, cm);
    vec_offsets(p, 1, 0, bn);
    vec_offsets(p, 1, 1, cn);
    vec_offsets(p, 2, 0, ak);
    vec_offsets(p, 2, 1, bk);
    vec_job j = {.p = p, .a = a, .b = b, .c = c, .pack = pack, .am = am,
                 .ak = ak, .bk = bk, .bn = bn, .cm = cm, .cn = cn};
    double work = (double)p->nbatch * (double)p->M * (double)p->N *
                  (double)p->K;
    if (eb_team_size(team) > 1 && work >= PARALLEL_MIN_WORK && p->vw >= 16)
        eb_team_run(team, vec_part, &j);
    else
        vec_part(&j, 0, 1);
}

void eb_contract_exec(const eb_plan *p, const double *a, const double *b,
                      double *prep0, double *prep1, double *tmp, double *out,
                      eb_team *team, eb_exec_counters *cnt)
{
    if (p->kind == EB_KIND_COPY) {
        xform(&p->xf[0], a, out, team);
        cnt->permuted_elems += p->out_elems;
        return;
    }
    if (p->prep[0]) {
        xform(&p->xf[0], a, prep0, team);
        cnt->permuted_elems += p->prep_elems[0];
        a = prep0;
    }
    if (p->prep[1]) {
        xform(&p->xf[1], b, prep1, team);
        cnt->permuted_elems += p->prep_elems[1];
        b = prep1;
    }
    if (p->kind == EB_KIND_VEC_GEMM) {
        run_vec(p, a, b, out, tmp, team);
        return;
    }
    double *c = p->post ? tmp : out;
    run_batched(p, a, b, c, team, cnt);
    if (p->post) {
        xform(&p->xf_post, tmp, out, team);
        cnt->permuted_elems += p->out_elems;
    }
}
