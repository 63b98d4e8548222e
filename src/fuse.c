/* fuse: blocked execution of a consumer with its producers along w. */
#include "fuse.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "team.h"

eb_fuse_opts eb_fuse_default_opts(void)
{
    return (eb_fuse_opts){.min_bytes = (int64_t)4 << 20,
                          .block_bytes = (int64_t)256 << 10};
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

/* The outermost label of a step's output, -1 when it has none > 1. */
static int outer_label(const eb_plan *p, const int64_t *label_size)
{
    for (int k = 0; k < p->out_rank; k++)
        if (label_size[p->out_ids[k]] > 1)
            return p->out_ids[k];
    return -1;
}

/* Can step p make an operand of the group, sliced along w? */
static int slicable(const eb_fuse_step *p, int w)
{
    for (int q = 0; q < p->nops; q++)
        if (axis_of(&p->op[q], w) == -2)
            return 0;
    return 1;
}

/*
 * Plan member i of g on blocks of b: operands from outside keep their
 * layout with w cut to b; those made inside are compact blocks. keep is
 * the member's output order (lsz has w at b).
 */
static eb_status plan_member(const eb_fuse_step *st, const eb_fuse_group *g,
                             int i, int64_t b, const int *keep, int nkeep,
                             const int64_t *lsz, eb_plan *out, eb_error *err)
{
    eb_view v[2];
    for (int q = 0; q < st->nops; q++) {
        v[q] = st->op[q];
        if (g->internal[i][q] >= 0) {
            eb_view_compact(&v[q], NULL, st->op[q].ids, st->op[q].rank, lsz);
            continue;
        }
        int a = axis_of(&v[q], g->label);
        if (a >= 0)
            v[q].shape[a] = b;
    }
    return eb_contract_plan(&v[0], st->nops > 1 ? &v[1] : NULL, keep, nkeep,
                            1, lsz, g->dt, out, err);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Plans for blocks of g->bw and for the tail, and the buffer sizes. */
static eb_status plan_group(const eb_instance *inst, const eb_fuse_step *steps,
                            eb_fuse_group *g, int64_t *lsz, eb_error *err)
{
    const eb_fuse_step *c = &steps[g->mem[g->nmem - 1]];
    int64_t tail = g->w % g->bw;
    for (int v = 0; v < 2; v++) {
        int64_t b = v == 0 ? g->bw : tail ? tail : g->bw;
        lsz[g->label] = b;
        for (int i = 0; i < g->nmem; i++) {
            const eb_fuse_step *st = &steps[g->mem[i]];
            /* A producer writes its block in the order the consumer reads
             * it; the consumer keeps its own output order. */
            const eb_view *to = NULL;
            for (int q = 0; q < c->nops; q++)
                if (g->internal[g->nmem - 1][q] == i)
                    to = &c->op[q];
            const int *keep = to ? to->ids : st->plan->out_ids;
            int nkeep = to ? to->rank : st->plan->out_rank;
            eb_status s = plan_member(st, g, i, b, keep, nkeep, lsz,
                                      &g->plan[v][i], err);
            if (s) {
                lsz[g->label] = inst->label_size[g->label];
                return s;
            }
            const eb_plan *p = &g->plan[v][i];
            int64_t *be = g->buf_elems[i];
            be[0] = max64(be[0], p->prep[0] ? p->prep_elems[0] : 0);
            be[1] = max64(be[1], p->prep[1] ? p->prep_elems[1] : 0);
            be[2] = max64(be[2], p->tmp_elems);
            if (to)
                be[3] = max64(be[3], p->out_elems);
        }
    }
    lsz[g->label] = inst->label_size[g->label];
    return EB_OK;
}

/* Bytes of the operands of st that do not carry w and come from outside
 * (internal: which operands are made inside, NULL: none), counted twice:
 * every block after the first reads them again and packs them again (as a
 * GEMM packs its operands on every call). esz: bytes per element. */
static double reread_bytes(const eb_fuse_step *st, int w, const int *internal,
                           int64_t esz)
{
    double bytes = 0;
    for (int q = 0; q < st->nops; q++)
        if ((!internal || internal[q] < 0) && axis_of(&st->op[q], w) < 0)
            bytes += 2.0 * (double)eb_view_elems(&st->op[q]) * (double)esz;
    return bytes;
}

static int64_t block_len(const eb_fuse_opts *opts, int64_t per_w)
{
    int64_t bw = opts->block_bytes / (per_w > 0 ? per_w : 1);
    if (bw >= 8)
        bw -= bw % 8; /* whole vectors for the own kernels */
    return bw < 1 ? 1 : bw;
}

/*
 * Choose the producers of consumer t worth fusing along w, into g->mem
 * (path order) and g->bw; returns their count. A producer's intermediate
 * saves one write and one read of its bytes; its operands without w cost
 * reread_bytes per extra block. Producers that cost more than they save are left
 * out, and the block length is chosen again for the rest.
 */
static int choose_producers(const eb_fuse_step *steps, int t,
                            const int *taken, const eb_fuse_opts *opts,
                            eb_fuse_group *g)
{
    const eb_fuse_step *c = &steps[t];
    int w = g->label, n = 0;
    int64_t esz = (int64_t)eb_dtype_size(g->dt);
    for (int q = 0; q < c->nops; q++) {
        int p = c->producer[q];
        if (p >= 0 && !taken[p] && axis_of(&c->op[q], w) >= 0 &&
            slicable(&steps[p], w) &&
            steps[p].plan->out_elems * esz >= opts->min_bytes)
            g->mem[n++] = p;
    }
    for (int dropped = 1; dropped && n > 0;) {
        int64_t per_w = 0;
        for (int i = 0; i < n; i++)
            per_w += steps[g->mem[i]].plan->out_elems / g->w * esz;
        g->bw = block_len(opts, per_w);
        double extra = (double)((g->w + g->bw - 1) / g->bw - 1);
        dropped = 0;
        for (int i = 0; i < n; i++) {
            const eb_fuse_step *p = &steps[g->mem[i]];
            double saved = 2.0 * (double)p->plan->out_elems * (double)esz;
            if (!opts->force &&
                extra * reread_bytes(p, w, NULL, esz) >= saved) {
                g->mem[i--] = g->mem[--n];
                dropped = 1;
            }
        }
    }
    if (n == 2 && g->mem[0] > g->mem[1]) {
        int x = g->mem[0];
        g->mem[0] = g->mem[1];
        g->mem[1] = x;
    }
    return n;
}

/* Try to make the group of consumer step t; 1 when it was made. */
static int try_group(const eb_instance *inst, const eb_fuse_step *steps,
                     int t, const int *taken, const eb_fuse_opts *opts,
                     eb_fuse_group *g)
{
    const eb_fuse_step *c = &steps[t];
    int w = outer_label(c->plan, inst->label_size);
    if (c->nops < 2 || w < 0 || !slicable(c, w))
        return 0;
    memset(g, 0, sizeof *g);
    g->dt = inst->dt;
    g->label = w;
    g->w = inst->label_size[w];
    int np = choose_producers(steps, t, taken, opts, g);
    if (np == 0 || (g->bw >= g->w && !opts->force))
        return 0;
    if (g->bw > g->w)
        g->bw = g->w;
    g->nmem = np + 1;
    g->mem[np] = t;
    double saved = 0;
    for (int i = 0; i < g->nmem; i++) {
        g->internal[i][0] = g->internal[i][1] = -1;
        if (i < np)
            saved += 2.0 * (double)steps[g->mem[i]].plan->out_elems *
                     (double)eb_dtype_size(g->dt);
    }
    for (int q = 0; q < c->nops; q++)
        for (int i = 0; i < np; i++)
            if (c->producer[q] == g->mem[i])
                g->internal[np][q] = i;
    /* The consumer's own operands without w are read again per block too. */
    double extra = (double)((g->w + g->bw - 1) / g->bw - 1);
    if (!opts->force &&
        extra * reread_bytes(c, w, g->internal[np],
                             (int64_t)eb_dtype_size(g->dt)) >= saved)
        return 0;
    for (int i = 0; i < g->nmem; i++) {
        const eb_fuse_step *st = &steps[g->mem[i]];
        for (int q = 0; q < st->nops; q++) {
            int a = axis_of(&st->op[q], w);
            g->wstride[i][q] = a >= 0 ? st->op[q].stride[a] : 0;
        }
    }
    g->out_wstride = 1;
    for (int k = c->plan->out_rank - 1; c->plan->out_ids[k] != w; k--)
        g->out_wstride *= inst->label_size[c->plan->out_ids[k]];
    return 1;
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
    eb_fuse_group *gs = malloc((size_t)(n ? n : 1) * sizeof *gs);
    eb_status st = EB_OK;
    if (!taken || !lsz || !gs) {
        st = eb_error_set(err, EB_ERR_NOMEM, "out of memory");
        goto done;
    }
    memcpy(lsz, inst->label_size, (size_t)inst->num_labels * sizeof *lsz);
    int ng = 0;
    for (int t = 0; t < n && !st; t++) {
        if (taken[t] || !try_group(inst, steps, t, taken, opts, &gs[ng]))
            continue;
        st = plan_group(inst, steps, &gs[ng], lsz, err);
        for (int i = 0; !st && i < gs[ng].nmem; i++)
            taken[gs[ng].mem[i]] = 1;
        ng += !st;
    }
    if (!st && ng > 0) {
        *groups = gs;
        *ngroups = ng;
        gs = NULL;
    }
done:
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

/* Blocks [lo, hi) through the whole group on part `part`'s buffers. */
static void run_blocks(const eb_fuse_group *g, const eb_fuse_bind *b,
                       int part, int64_t lo, int64_t hi, struct eb_team *team,
                       eb_exec_counters *cnt)
{
    int last = g->nmem - 1;
    int64_t esz = (int64_t)eb_dtype_size(g->dt);
    void *const(*buf)[4] = b->buf[part];
    for (int64_t blk = lo; blk < hi; blk++) {
        int64_t w0 = blk * g->bw;
        const eb_plan *pl = g->plan[g->w - w0 < g->bw];
        for (int i = 0; i <= last; i++) {
            const void *op[2] = {NULL, NULL};
            for (int q = 0; q < 2; q++) {
                int m = g->internal[i][q];
                if (m >= 0)
                    op[q] = buf[m][3];
                else if (b->ext[i][q])
                    op[q] = (const char *)b->ext[i][q] +
                            w0 * g->wstride[i][q] * esz;
            }
            void *out = i == last
                            ? (char *)b->out + w0 * g->out_wstride * esz
                            : buf[i][3];
            eb_contract_exec(&pl[i], op[0], op[1], buf[i][0], buf[i][1],
                             buf[i][2], out, team, cnt);
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
    (void)nparts;
    fuse_job *j = arg;
    int64_t nblocks = (j->g->w + j->g->bw - 1) / j->g->bw;
    for (;;) {
        int64_t blk =
            atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (blk >= nblocks)
            return;
        run_blocks(j->g, j->b, part, blk, blk + 1, NULL, &j->cnt[part]);
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
    int64_t nblocks = (g->w + g->bw - 1) / g->bw;
    if (n == 1 || b->nparts < n || !blocks_balance(nblocks, n)) {
        run_blocks(g, b, 0, 0, nblocks, team, cnt);
        return;
    }
    fuse_job j = {.g = g, .b = b};
    int blas = eb_blas_threads();
    eb_blas_set_threads(1);
    eb_team_run(team, fuse_part, &j);
    eb_blas_set_threads(blas);
    for (int k = 0; k < n; k++) {
        cnt->gemm_calls += j.cnt[k].gemm_calls;
        cnt->blas_calls += j.cnt[k].blas_calls;
        cnt->permuted_elems += j.cnt[k].permuted_elems;
    }
}
