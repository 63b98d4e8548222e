/* fuse: blocked execution of a consumer with its producers, along some of
 * its output labels. */
#include "fuse.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "permute.h"
#include "team.h"

eb_fuse_opts eb_fuse_default_opts(void)
{
    return (eb_fuse_opts){.min_bytes = (int64_t)4 << 20,
                          .block_bytes = (int64_t)1 << 20,
                          .cache_bytes = (int64_t)1 << 20,
                          .max_intensity = 4.0,
                          .prefetch_bytes = (int64_t)8 << 20,
                          .solo_work = EB_SOLO_WORK,
                          .unit_min_bytes = (int64_t)1 << 20};
}

/* Whether step s's output is large enough to be worth fusing into the step
 * that reads it. */
static int big_output(const eb_fuse_step *s, const eb_fuse_opts *opts,
                      eb_dtype dt)
{
    int64_t min = opts->min_bytes;
    if (s->shared && opts->unit_min_bytes > 0 && opts->unit_min_bytes < min)
        min = opts->unit_min_bytes;
    return s->plan->out_elems * (int64_t)eb_dtype_size(dt) >= min;
}

/* Axis of label l in v: -1 when absent, -2 when repeated (a diagonal,
 * which a slice along l would not describe). */
static int axis_of(const eb_view *v, int l)
{
    int at = -1;
    for (int a = 0; a < v->rank; a++)
        if (v->ids[a] == l) {
            if (at >= 0)
                return -2;
            at = a;
        }
    return at;
}

/* Can step p make an operand of the group, sliced along w? */
static int slicable(const eb_fuse_step *p, int w)
{
    for (int q = 0; q < p->nops; q++)
        if (axis_of(&p->op[q], w) == -2)
            return 0;
    return 1;
}

/* Length of label k of g in the current block: bw (or the tail) for the
 * last, 1 for the others. */
static int64_t block_extent(const eb_fuse_group *g, int k, int64_t b)
{
    return k == g->nlab - 1 ? b : 1;
}

/*
 * Plan member i of g on blocks whose last label is b long: operands from
 * outside keep their layout with the blocked labels cut to the block,
 * those made inside are compact blocks. keep is the member's output order
 * (lsz has the blocked labels at their block lengths); fixed as for
 * eb_contract_plan.
 */
static eb_status plan_member(const eb_fuse_step *st, const eb_fuse_group *g,
                             int i, int64_t b, const int *keep, int nkeep,
                             int fixed, const int64_t *lsz, eb_plan *out,
                             eb_error *err)
{
    eb_view v[2];
    for (int q = 0; q < st->nops; q++) {
        v[q] = st->op[q];
        if (g->internal[i][q] >= 0) {
            eb_view_compact(&v[q], NULL, st->op[q].ids, st->op[q].rank, lsz);
            continue;
        }
        for (int k = 0; k < g->nlab; k++) {
            int a = axis_of(&v[q], g->labels[k]);
            if (a >= 0)
                v[q].shape[a] = block_extent(g, k, b);
        }
    }
    return eb_contract_plan(&v[0], st->nops > 1 ? &v[1] : NULL, keep, nkeep,
                            fixed, lsz, g->dt, out, err);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Strides of the labels of `ids` in a compact tensor over `order`. */
static void strides_in(const int *order, int n, const int64_t *size,
                       const int *ids, int nids, int64_t *stride)
{
    for (int q = 0; q < nids; q++) {
        int64_t s = 1;
        stride[q] = 0;
        for (int k = n - 1; k >= 0; k--) {
            if (order[k] == ids[q]) {
                stride[q] = s;
                break;
            }
            s *= size[order[k]];
        }
    }
}

/* The permutation of plan p that reads its operand q for a prefetch of
 * kind `pf` (EB_FUSE_PF_*), NULL if p has none. */
static const eb_perm *pf_perm(const eb_plan *p, int pf, int q)
{
    if (pf == EB_FUSE_PF_PREP && p->prep[q] && p->xf[q].planned)
        return &p->xf[q].perm;
    if (pf == EB_FUSE_PF_EW &&
        (p->kind == EB_KIND_MUL || p->kind == EB_KIND_OUTER))
        return &p->ew;
    return NULL;
}

/* The source of pf_perm's permutation that is operand q. */
static int pf_src(int pf, int q) { return pf == EB_FUSE_PF_EW ? q : 0; }

/*
 * Marks in g->pf the outside operands that a permutation reads block by
 * block (the member's preparation of the operand, or its elementwise
 * multiply or outer product) and that are at least opts->prefetch_bytes
 * in all: not in the caches, so each block's permutation would read them
 * from memory one demand miss after another (gm_queen's fused step 147
 * read its 43 M elements in runs of 11.6 KiB far apart at about 11 GB/s:
 * its preparation took 34 ms per run, prefetched a block ahead 20 ms).
 */
static void mark_prefetch(const eb_fuse_opts *opts, eb_fuse_group *g)
{
    int64_t esz = (int64_t)eb_dtype_size(g->dt);
    for (int i = 0; i < g->nmem; i++)
        for (int q = 0; q < 2; q++) {
            const eb_plan *p = &g->plan[0][i];
            int pf = p->prep[q] ? EB_FUSE_PF_PREP : EB_FUSE_PF_EW;
            const eb_perm *perm = pf_perm(p, pf, q);
            g->pf[i][q] = 0;
            if (g->internal[i][q] >= 0 || !perm)
                continue;
            /* The elements all blocks read: a full block's, times the
             * size of each blocked label the operand has over the
             * block's extent along it. */
            double elems = eb_perm_src_elems(perm, pf_src(pf, q));
            for (int k = 0; k < g->nlab; k++)
                if (g->wstride[i][q][k])
                    elems *= k == g->nlab - 1
                                 ? (double)g->w / (double)g->bw
                                 : (double)g->lsize[k];
            if (elems * (double)esz >= (double)opts->prefetch_bytes)
                g->pf[i][q] = (signed char)pf;
        }
}

/* Plans for full blocks and for the tail, the scatter of the consumer's
 * block into the output, and the buffer sizes. */
static eb_status plan_group(const eb_instance *inst, const eb_fuse_step *steps,
                            eb_fuse_group *g, int64_t *lsz, eb_error *err)
{
    const eb_fuse_step *c = &steps[g->mem[g->nmem - 1]];
    int last = g->nmem - 1;
    int64_t tail = g->w % g->bw, block_out = 0;
    eb_status s = EB_OK;
    for (int v = 0; v < 2 && !s; v++) {
        int64_t b = v == 0 ? g->bw : tail ? tail : g->bw;
        for (int k = 0; k < g->nlab; k++)
            lsz[g->labels[k]] = block_extent(g, k, b);
        for (int i = 0; i < g->nmem && !s; i++) {
            const eb_fuse_step *st = &steps[g->mem[i]];
            /* A producer writes its block in the order the member that
             * uses it reads it; the consumer keeps its own output order
             * when it writes in place, its natural one when its block is
             * scattered. */
            const eb_view *to = NULL;
            for (int j = i + 1; j < g->nmem && !to; j++)
                for (int q = 0; q < steps[g->mem[j]].nops; q++)
                    if (g->internal[j][q] == i)
                        to = &steps[g->mem[j]].op[q];
            const int *keep = to ? to->ids : st->plan->out_ids;
            int nkeep = to ? to->rank : st->plan->out_rank;
            s = plan_member(st, g, i, b, keep, nkeep,
                            i < last || !g->scatter, lsz, &g->plan[v][i],
                            err);
            if (s)
                break;
            const eb_plan *p = &g->plan[v][i];
            int64_t *be = g->buf_elems[i];
            be[0] = max64(be[0], p->prep[0] ? p->prep_elems[0] : 0);
            be[1] = max64(be[1], p->prep[1] ? p->prep_elems[1] : 0);
            be[2] = max64(be[2], p->tmp_elems);
            if (to)
                be[3] = max64(be[3], p->out_elems);
        }
        if (s || !g->scatter)
            continue;
        /* The consumer's block, compact in its plan's order, to its place
         * in the whole output (compact in the unblocked plan's order). */
        const eb_plan *p = &g->plan[v][last];
        int64_t shape[EB_MAX_RANK], so[EB_MAX_RANK], sx[EB_MAX_RANK];
        strides_in(c->plan->out_ids, c->plan->out_rank, inst->label_size,
                   p->out_ids, p->out_rank, so);
        strides_in(p->out_ids, p->out_rank, lsz, p->out_ids, p->out_rank,
                   sx);
        for (int q = 0; q < p->out_rank; q++)
            shape[q] = lsz[p->out_ids[q]];
        eb_perm_plan_dt(&g->put[v], g->dt, p->out_rank, shape, so, sx, NULL);
        block_out = max64(block_out, p->out_elems);
    }
    for (int k = 0; k < g->nlab; k++)
        lsz[g->labels[k]] = inst->label_size[g->labels[k]];
    if (!s && g->scatter) {
        /* The block goes after the consumer's scratch, on a 64-byte line. */
        int64_t line = 64 / (int64_t)eb_dtype_size(g->dt);
        g->put_at = (g->buf_elems[last][2] + line - 1) / line * line;
        g->buf_elems[last][2] = g->put_at + block_out;
    }
    return s;
}

static int64_t block_len(const eb_fuse_opts *opts, int64_t per_w)
{
    int64_t bw = opts->block_bytes / (per_w > 0 ? per_w : 1);
    if (bw >= 8)
        bw -= bw % 8; /* whole vectors for the own kernels */
    return bw < 1 ? 1 : bw;
}

/*
 * Bytes the group reads again because of its blocks: an operand from
 * outside that lacks blocked labels is read once per block of each (and
 * packed again, as a GEMM packs its operands on every call: counted
 * twice). One no larger than opts->cache_bytes stays in cache from block
 * to block and costs nothing. nblk[k]: blocks along lab[k].
 */
static double reread_bytes(const eb_fuse_step *steps, const eb_fuse_group *g,
                           const int *lab, const int64_t *nblk, int nlab,
                           const eb_fuse_opts *opts)
{
    double esz = (double)eb_dtype_size(g->dt), bytes = 0;
    for (int i = 0; i < g->nmem; i++) {
        const eb_fuse_step *st = &steps[g->mem[i]];
        for (int q = 0; q < st->nops; q++) {
            double x = (double)eb_view_elems(&st->op[q]) * esz;
            if (g->internal[i][q] >= 0 || x <= (double)opts->cache_bytes)
                continue;
            double reads = 1;
            for (int k = 0; k < nlab; k++)
                if (axis_of(&st->op[q], lab[k]) < 0)
                    reads *= (double)nblk[k];
            bytes += 2.0 * x * (reads - 1);
        }
    }
    return bytes;
}

/* Is label l in both operands of step st (a batch label of its product)? */
static int batch_of(const eb_fuse_step *st, int l)
{
    return st->nops == 2 && axis_of(&st->op[0], l) >= 0 &&
           axis_of(&st->op[1], l) >= 0;
}

int eb_fuse_last_use(const eb_fuse_group *g, int i)
{
    int last = i;
    for (int j = i + 1; j < g->nmem; j++)
        for (int q = 0; q < 2; q++)
            if (g->internal[j][q] == i)
                last = j;
    return last;
}

/* Bytes of the whole intermediates that are live at once while a member
 * runs (the most over the members): what a block of them keeps in cache,
 * their buffers laid out by lifetime (trace.c, plan_slab). */
static double live_bytes(const eb_fuse_step *steps, const eb_fuse_group *g)
{
    double most = 0, esz = (double)eb_dtype_size(g->dt);
    int until[EB_FUSE_MAX];
    for (int i = 0; i < g->nmem - 1; i++)
        until[i] = eb_fuse_last_use(g, i);
    for (int j = 0; j < g->nmem; j++) {
        double live = 0;
        for (int i = 0; i <= j && i < g->nmem - 1; i++)
            if (j <= until[i])
                live += (double)steps[g->mem[i]].plan->out_elems * esz;
        most = live > most ? live : most;
    }
    return most;
}

/*
 * Choose the blocked labels of g (members, internal set) so that a block
 * of the intermediates live at once (live_bytes) takes at most
 * opts->block_bytes: candidates are the consumer's output labels that
 * every intermediate has and no member repeats. Each round takes the
 * candidate that makes the group read the least again, then a batch label
 * of the consumer before the others (its kernel keeps its matrix sides),
 * then the outermost; it takes it one index at a time while the block
 * stays too large, else in blocks of bw and stops. Returns 0 when no choice makes a block fit
 * opts->cache_bytes (force: any size), else 1 with *net the bytes saved
 * less those read again. Saved: each intermediate's write and read, but
 * only its read where its producer's whole step runs the permutation
 * engine in tiles or short rows (eb_plan_engine_slow): such a kernel is
 * bound by its instructions, and writing its output to memory rather than
 * to a block in cache costs it little (gm_queen5_5_3's outer products of
 * 14 M elements in rows of 3: 13.0 and 13.7 ms whole, 11 and 12 on
 * blocks, while the scatter of their consumer's blocks took 9-10 ms).
 * Forced fusion (tests) counts both for every intermediate.
 */
static int choose_labels(const eb_instance *inst, const eb_fuse_step *steps,
                         const eb_fuse_opts *opts, eb_fuse_group *g,
                         double *net)
{
    int last = g->nmem - 1;
    const eb_fuse_step *c = &steps[g->mem[last]];
    double esz = (double)eb_dtype_size(g->dt), saved = 0;
    for (int i = 0; i < last; i++) {
        const eb_plan *p = steps[g->mem[i]].plan;
        int slow = !opts->force && eb_plan_engine_slow(p);
        saved += (slow ? 1.0 : 2.0) * (double)p->out_elems * esz;
    }
    int cand[EB_MAX_RANK], nc = 0;
    for (int k = 0; k < c->plan->out_rank; k++) {
        int l = c->plan->out_ids[k], ok = inst->label_size[l] > 1;
        for (int i = 0; ok && i < g->nmem; i++) {
            const eb_fuse_step *st = &steps[g->mem[i]];
            for (int q = 0; ok && q < st->nops; q++)
                ok = g->internal[i][q] < 0 || axis_of(&st->op[q], l) >= 0;
            ok = ok && slicable(st, l);
        }
        if (ok)
            cand[nc++] = l;
    }
    int lab[EB_MAX_RANK], taken[EB_MAX_RANK] = {0}, n = 0;
    int64_t nblk[EB_MAX_RANK], bw = 1;
    double block = live_bytes(steps, g);
    while (block > (double)opts->block_bytes) {
        int best = -1, bclass = 0;
        double bcost = 0;
        for (int j = 0; j < nc; j++) {
            if (taken[j])
                continue;
            lab[n] = cand[j];
            nblk[n] = inst->label_size[cand[j]];
            double cost = reread_bytes(steps, g, lab, nblk, n + 1, opts);
            int cls = !batch_of(c, cand[j]);
            if (best < 0 || cost < bcost || (cost == bcost && cls < bclass)) {
                best = j;
                bcost = cost;
                bclass = cls;
            }
        }
        if (best < 0)
            break;
        taken[best] = 1;
        int64_t size = inst->label_size[cand[best]];
        lab[n] = cand[best];
        double per = block / (double)size;
        if (per <= (double)opts->block_bytes) {
            bw = block_len(opts, (int64_t)per);
            if (bw > size)
                bw = size;
            nblk[n++] = (size + bw - 1) / bw;
            block = per * (double)bw;
            break;
        }
        nblk[n++] = size;
        bw = 1;
        block = per;
    }
    if (n == 0 || (block > (double)opts->cache_bytes && !opts->force))
        return 0;
    /* Loop order: the labels taken whole in the output's order, the one
     * in blocks of bw innermost. */
    g->nlab = 0;
    for (int k = 0; k < c->plan->out_rank; k++)
        for (int j = 0; j < n - 1; j++)
            if (lab[j] == c->plan->out_ids[k])
                g->labels[g->nlab++] = lab[j];
    g->labels[g->nlab++] = lab[n - 1];
    g->label = lab[n - 1];
    g->w = inst->label_size[g->label];
    g->bw = bw;
    g->nblocks = 1;
    for (int k = 0; k < g->nlab; k++) {
        g->lsize[k] = inst->label_size[g->labels[k]];
        g->nblocks *= k < g->nlab - 1 ? g->lsize[k] : nblk[n - 1];
    }
    *net = saved - reread_bytes(steps, g, lab, nblk, n, opts);
    return 1;
}

/* Candidate producers of consumer t: the steps not yet in a group that make
 * its operands, where those are large enough (big_output). */
static int candidate_producers(const eb_fuse_step *steps, int t,
                               const int *taken, const eb_fuse_opts *opts,
                               eb_dtype dt, int *prod)
{
    const eb_fuse_step *c = &steps[t];
    int n = 0;
    for (int q = 0; q < c->nops; q++) {
        int p = c->producer[q];
        if (p >= 0 && !taken[p] && (n == 0 || prod[0] != p) &&
            big_output(&steps[p], opts, dt))
            prod[n++] = p;
    }
    if (n == 2 && prod[0] > prod[1]) {
        int x = prod[0];
        prod[0] = prod[1];
        prod[1] = x;
    }
    return n;
}

/* Members mem[0..np-1] then t; which of t's operands each makes. */
static void set_members(const eb_fuse_step *steps, int t, const int *prod,
                        int np, eb_fuse_group *g)
{
    const eb_fuse_step *c = &steps[t];
    g->nmem = np + 1;
    for (int i = 0; i < np; i++)
        g->mem[i] = prod[i];
    g->mem[np] = t;
    for (int i = 0; i < g->nmem; i++)
        g->internal[i][0] = g->internal[i][1] = -1;
    for (int q = 0; q < c->nops; q++)
        for (int i = 0; i < np; i++)
            if (c->producer[q] == prod[i])
                g->internal[np][q] = i;
}

static void finish_group(const eb_instance *inst, const eb_fuse_step *steps,
                         eb_fuse_group *g);

/*
 * Try to make the group of consumer step t; 1 when it was made. Both
 * producers together first, then each alone (the larger output first):
 * the first set whose blocked labels save more than they read again.
 */
static int try_group(const eb_instance *inst, const eb_fuse_step *steps,
                     int t, const int *taken, const eb_fuse_opts *opts,
                     eb_fuse_group *g)
{
    const eb_fuse_step *c = &steps[t];
    int prod[2];
    if (c->nops < 2)
        return 0;
    int np = candidate_producers(steps, t, taken, opts, inst->dt, prod);
    int sets[3][2], nset[3], ns = 0;
    if (np > 0) {
        sets[ns][0] = prod[0];
        sets[ns][1] = np > 1 ? prod[1] : -1;
        nset[ns++] = np;
    }
    if (np == 2) {
        int big = steps[prod[1]].plan->out_elems >
                  steps[prod[0]].plan->out_elems;
        for (int k = 0; k < 2; k++) {
            sets[ns][0] = prod[k ? 1 - big : big];
            nset[ns++] = 1;
        }
    }
    int made = 0;
    for (int k = 0; k < ns && !made; k++) {
        memset(g, 0, sizeof *g);
        g->dt = inst->dt;
        set_members(steps, t, sets[k], nset[k], g);
        double net = 0;
        made = choose_labels(inst, steps, opts, g, &net) &&
               (opts->force || (net > 0 && g->nblocks > 1));
        g->gain = net;
    }
    if (!made)
        return 0;
    finish_group(inst, steps, g);
    return 1;
}

/* The blocked labels' strides in every operand from outside and in the
 * output, and whether the consumer's blocks are scattered. */
static void finish_group(const eb_instance *inst, const eb_fuse_step *steps,
                         eb_fuse_group *g)
{
    const eb_fuse_step *c = &steps[g->mem[g->nmem - 1]];
    for (int i = 0; i < g->nmem; i++) {
        const eb_fuse_step *st = &steps[g->mem[i]];
        for (int q = 0; q < st->nops; q++)
            for (int k = 0; k < g->nlab; k++) {
                int a = axis_of(&st->op[q], g->labels[k]);
                g->wstride[i][q][k] = a >= 0 ? st->op[q].stride[a] : 0;
            }
    }
    strides_in(c->plan->out_ids, c->plan->out_rank, inst->label_size,
               g->labels, g->nlab, g->out_wstride);
    /* The consumer writes in place when the blocked labels are its
     * output's outermost (of size > 1), in the loop's order: a block is
     * then one contiguous piece of the output. */
    int k = 0;
    for (int a = 0; a < c->plan->out_rank && k < g->nlab; a++) {
        int l = c->plan->out_ids[a];
        if (inst->label_size[l] == 1)
            continue;
        if (l != g->labels[k])
            break;
        k++;
    }
    g->scatter = k < g->nlab;
}

/*
 * The members' plans on blocks can move more than on whole operands: an
 * operand read in place whole is prepared block by block when its slice
 * is not a matrix, and a scattered block of the output is copied into
 * place once more. Those copies run in cache, but at about the rate of
 * memory (gm_queen's chains of outer products ran no faster blocked when
 * the scatter was all they saved): each extra element moved counts as
 * read and written once, and the group is worth it only while that stays
 * below what the blocks save.
 */
static int worth_plans(const eb_fuse_step *steps, const eb_fuse_group *g)
{
    double whole = 0, blocks = g->scatter ? (double)steps[g->mem[g->nmem - 1]]
                                                .plan->out_elems
                                          : 0;
    for (int i = 0; i < g->nmem; i++) {
        whole += (double)eb_plan_moved(steps[g->mem[i]].plan);
        blocks += (double)g->nblocks * (double)eb_plan_moved(&g->plan[0][i]);
    }
    double esz = (double)eb_dtype_size(g->dt);
    return 2.0 * (blocks - whole) * esz < g->gain;
}

/*
 * Flops per byte of the group's steps unblocked (every operand read and
 * every output written once). Blocking trades kernel size for memory
 * traffic: past opts->max_intensity flops a byte the steps are bound by
 * their kernels, whose blocks would be smaller matrices, and the traffic
 * saved would not show.
 */
static double intensity(const eb_fuse_step *steps, const eb_fuse_group *g)
{
    double flops = 0, bytes = 0, esz = (double)eb_dtype_size(g->dt);
    for (int i = 0; i < g->nmem; i++) {
        const eb_fuse_step *st = &steps[g->mem[i]];
        flops += st->plan->flops;
        bytes += (double)st->plan->out_elems * esz;
        for (int q = 0; q < st->nops; q++)
            bytes += (double)eb_view_elems(&st->op[q]) * esz;
    }
    return flops / (bytes > 0 ? bytes : 1);
}

/*
 * A group extended by the step that uses its consumer's output (x: g with
 * that step as its new consumer): a chain of steps over one large tensor
 * (gm_queen's product of two 43 M-element intermediates, then five
 * products of it by 3 x 3 factors) runs block by block through all of
 * them, each block in cache from the first step to the last, instead of
 * going to memory and back between every two. Taken when the step is a
 * multiply or outer product (no kernel whose blocks would be smaller
 * matrices: gm_queen's group of a skinny and a batched GEMM, extended by
 * the GEMMs after them, ran 660 ms against 527 for the same steps in the
 * group of two and alone), not in a group, its other operand comes from
 * outside the group, the output is large enough (big_output), and the
 * longer group's blocks save more than g's (and stay within
 * opts->max_intensity). 1 when x was made.
 */
static int extend_group(const eb_instance *inst, const eb_fuse_step *steps,
                        int n, const int *taken, const eb_fuse_opts *opts,
                        const eb_fuse_group *g, eb_fuse_group *x)
{
    int last = g->nmem - 1, t = g->mem[last], u = -1, uq = 0;
    if (g->nmem == EB_FUSE_MAX || !big_output(&steps[t], opts, g->dt))
        return 0;
    for (int v = t + 1; v < n && u < 0; v++)
        for (int q = 0; q < steps[v].nops; q++)
            if (steps[v].producer[q] == t) {
                u = v;
                uq = q;
            }
    if (u < 0 || taken[u] || steps[u].nops != 2 ||
        !eb_kind_engine(steps[u].plan->kind))
        return 0;
    for (int i = 0; i < g->nmem; i++)
        if (steps[u].producer[1 - uq] == g->mem[i])
            return 0;
    memset(x, 0, sizeof *x);
    x->dt = g->dt;
    x->nmem = g->nmem + 1;
    for (int i = 0; i < g->nmem; i++) {
        x->mem[i] = g->mem[i];
        x->internal[i][0] = g->internal[i][0];
        x->internal[i][1] = g->internal[i][1];
    }
    x->mem[last + 1] = u;
    x->internal[last + 1][uq] = last;
    x->internal[last + 1][1 - uq] = -1;
    double net = 0;
    if (!choose_labels(inst, steps, opts, x, &net) || net <= g->gain ||
        x->nblocks < 2 ||
        (opts->max_intensity > 0 && intensity(steps, x) > opts->max_intensity))
        return 0;
    x->gain = net;
    finish_group(inst, steps, x);
    return 1;
}

typedef struct {
    int t;
    int64_t bytes; /* elements of its candidate producers' outputs */
} consumer_rank;

static int by_bytes_desc(const void *x, const void *y)
{
    const consumer_rank *a = x, *b = y;
    if (a->bytes != b->bytes)
        return (a->bytes < b->bytes) - (a->bytes > b->bytes);
    return (a->t > b->t) - (a->t < b->t);
}

eb_status eb_fuse_plan(const eb_instance *inst, const eb_fuse_step *steps,
                       int n, const eb_fuse_opts *opts,
                       eb_fuse_group **groups, int *ngroups, eb_error *err)
{
    *groups = NULL;
    *ngroups = 0;
    int *taken = calloc((size_t)(n ? n : 1), sizeof *taken);
    int64_t *lsz = malloc((size_t)(inst->num_labels ? inst->num_labels : 1) *
                          sizeof *lsz);
    /* Groups are large (plans of every member for two block lengths):
     * room for a few more at a time, and one for an extension. */
    int cap = 4;
    eb_fuse_group *gs = malloc((size_t)cap * sizeof *gs),
                  *ext = malloc(sizeof *ext);
    consumer_rank *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    eb_status st = EB_OK;
    if (!taken || !lsz || !gs || !ext || !order) {
        st = eb_error_set(err, EB_ERR_NOMEM, "out of memory");
        goto done;
    }
    memcpy(lsz, inst->label_size, (size_t)inst->num_labels * sizeof *lsz);
    /* Consumers with the largest intermediates first: a step that could
     * be the producer of one group and the consumer of another goes where
     * it saves more. */
    for (int t = 0; t < n; t++) {
        int prod[2];
        int np = candidate_producers(steps, t, taken, opts, inst->dt, prod);
        order[t].t = t;
        order[t].bytes = 0;
        for (int i = 0; i < np && steps[t].nops == 2; i++)
            order[t].bytes += steps[prod[i]].plan->out_elems;
    }
    qsort(order, (size_t)n, sizeof *order, by_bytes_desc);
    int ng = 0;
    for (int k = 0; k < n && !st; k++) {
        int t = order[k].t;
        if (ng == cap) {
            eb_fuse_group *more = realloc(gs, (size_t)(2 * cap) * sizeof *gs);
            if (!more) {
                st = eb_error_set(err, EB_ERR_NOMEM, "out of memory");
                break;
            }
            gs = more;
            cap *= 2;
        }
        if (taken[t] || !try_group(inst, steps, t, taken, opts, &gs[ng]) ||
            (!opts->force && opts->max_intensity > 0 &&
             intensity(steps, &gs[ng]) > opts->max_intensity))
            continue;
        st = plan_group(inst, steps, &gs[ng], lsz, err);
        if (!st && !opts->force && !worth_plans(steps, &gs[ng]))
            continue;
        /* Then along the chain of steps that use its output, while that
         * saves more. (Not from a group that was not worth it alone:
         * gm_queen's GEMM pair was, with an outer product after it, and
         * ran 546 ms blocked against 60-85 unblocked.) */
        while (!st && extend_group(inst, steps, n, taken, opts, &gs[ng], ext)) {
            st = plan_group(inst, steps, ext, lsz, err);
            if (st || (!opts->force && !worth_plans(steps, ext)))
                break;
            gs[ng] = *ext;
        }
        for (int i = 0; !st && i < gs[ng].nmem; i++)
            taken[gs[ng].mem[i]] = 1;
        ng += !st;
    }
    if (!st && ng > 0) {
        for (int k = 0; k < ng; k++)
            mark_prefetch(opts, &gs[k]);
        *groups = gs;
        *ngroups = ng;
        gs = NULL;
    }
done:
    free(order);
    free(ext);
    free(gs);
    free(lsz);
    free(taken);
    return st;
}

typedef struct {
    const eb_fuse_group *g;
    const eb_fuse_bind *b;
    _Atomic int64_t next; /* the next block no part has claimed */
    eb_exec_counters cnt[EB_FUSE_MAX_PARTS];
} fuse_job;

/* Block blk's first index along each blocked label. */
static void block_origin(const eb_fuse_group *g, int64_t blk, int64_t *at)
{
    int64_t nlast = (g->w + g->bw - 1) / g->bw;
    at[g->nlab - 1] = blk % nlast * g->bw;
    blk /= nlast;
    for (int k = g->nlab - 2; k >= 0; k--) {
        at[k] = blk % g->lsize[k];
        blk /= g->lsize[k];
    }
}

/* Brings into L2 the lines of block blk + ahead (the next one this
 * thread is likely to run) of member i's outside operands marked in g->pf
 * (mark_prefetch), while the rest of block blk runs. */
static void prefetch_next(const eb_fuse_group *g, const eb_fuse_bind *b,
                          int i, int64_t blk, int ahead)
{
    if (!(g->pf[i][0] | g->pf[i][1]) || blk + ahead >= g->nblocks)
        return;
    int64_t at[EB_MAX_RANK];
    block_origin(g, blk + ahead, at);
    int tail = g->w - at[g->nlab - 1] < g->bw;
    const eb_plan *p = &g->plan[tail][i];
    int64_t esz = (int64_t)eb_dtype_size(g->dt);
    for (int q = 0; q < 2; q++) {
        const eb_perm *perm = pf_perm(p, g->pf[i][q], q);
        if (!perm || !b->ext[i][q])
            continue;
        int64_t off = 0;
        for (int k = 0; k < g->nlab; k++)
            off += at[k] * g->wstride[i][q][k];
        eb_perm_prefetch(perm, pf_src(g->pf[i][q], q),
                         (const char *)b->ext[i][q] + off * esz);
    }
}

/* Blocks [lo, hi) through the whole group on part `part`'s buffers; the
 * thread's next block after blk is likely blk + ahead. */
static void run_blocks(const eb_fuse_group *g, const eb_fuse_bind *b,
                       int part, int64_t lo, int64_t hi, int ahead,
                       struct eb_team *team, eb_exec_counters *cnt)
{
    int last = g->nmem - 1;
    int64_t esz = (int64_t)eb_dtype_size(g->dt), at[EB_MAX_RANK];
    void *const(*buf)[4] = b->buf[part];
    for (int64_t blk = lo; blk < hi; blk++) {
        block_origin(g, blk, at);
        int tail = g->w - at[g->nlab - 1] < g->bw;
        const eb_plan *pl = g->plan[tail];
        int64_t out_off = 0;
        for (int k = 0; k < g->nlab; k++)
            out_off += at[k] * g->out_wstride[k];
        for (int i = 0; i <= last; i++) {
            const void *op[2] = {NULL, NULL};
            for (int q = 0; q < 2; q++) {
                int m = g->internal[i][q];
                if (m >= 0) {
                    op[q] = buf[m][3];
                } else if (b->ext[i][q]) {
                    int64_t off = 0;
                    for (int k = 0; k < g->nlab; k++)
                        off += at[k] * g->wstride[i][q][k];
                    op[q] = (const char *)b->ext[i][q] + off * esz;
                }
            }
            char *whole = (char *)b->out + out_off * esz;
            void *out = i < last     ? buf[i][3]
                        : g->scatter ? (char *)buf[i][2] + g->put_at * esz
                                     : whole;
            eb_contract_exec(&pl[i], op[0], op[1], buf[i][0], buf[i][1],
                             buf[i][2], out, team, cnt);
            prefetch_next(g, b, i, blk, ahead);
            if (i == last && g->scatter) {
                eb_perm_exec(&g->put[tail], out, NULL, whole, team);
                cnt->permuted_elems += pl[i].out_elems;
            }
        }
    }
}

/*
 * One part of a group's job (one set of buffers, one thread at a time):
 * it claims blocks one at a time until none is left. Whole halves of the
 * blocks, one per thread as before, left the caller waiting for all of a
 * worker's half when the worker came late or lost its core to another
 * process (lm_batch_likelihood_sentence_3_12d's fused 1728 x 1100 x 144
 * GEMM: 27.8 ms on one thread, 31.6 ms on two under load); claimed, a late
 * worker costs at most the block it is running. Each block writes its own
 * slice of the output, so the numbers do not depend on who ran it.
 */
static void fuse_part(void *arg, int part, int nparts)
{
    fuse_job *j = arg;
    int64_t nblocks = j->g->nblocks;
    for (;;) {
        int64_t blk =
            atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (blk >= nblocks)
            return;
        /* (Blocks are claimed in turn: this thread's next is about
         * nparts on.) */
        run_blocks(j->g, j->b, part, blk, blk + 1, nparts, NULL,
                   &j->cnt[part]);
    }
}

/* Whether the blocks of a group split evenly enough over n threads to run
 * whole blocks per thread: the busiest thread may have at most 10% more
 * than an even share (3 blocks on 2 threads would be 2 against 1.5).
 * Otherwise the blocks run one after another and each member step splits
 * its own kernels over the team. */
static int blocks_balance(int64_t nblocks, int n)
{
    int64_t most = (nblocks + n - 1) / n;
    return (double)most * n <= 1.1 * (double)nblocks;
}

void eb_fuse_exec(const eb_fuse_group *g, const eb_fuse_bind *b,
                  struct eb_team *team, eb_exec_counters *cnt)
{
    int n = eb_team_size(team);
    int64_t nblocks = g->nblocks;
    if (n == 1 || b->nparts < n || !blocks_balance(nblocks, n)) {
        run_blocks(g, b, 0, 0, nblocks, 1, team, cnt);
        return;
    }
    fuse_job j = {.g = g, .b = b};
    int blas = eb_blas_threads();
    eb_blas_set_threads(1);
    eb_team_run(team, fuse_part, &j);
    eb_blas_set_threads(blas);
    for (int k = 0; k < n; k++)
        eb_exec_counters_add(cnt, &j.cnt[k]);
}
