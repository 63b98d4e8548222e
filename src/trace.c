/* trace: layout planning, static arena, and program execution. */
#include "trace.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "clock.h"
#include "fuse.h"
#include "lanes.h"
#include "mem.h"
#include "schedule.h"
#include "team.h"

typedef struct {
    eb_plan plan;
    int a_slot, b_slot;            /* operand slots (b_slot -1: none) */
    int group;                     /* fused group it belongs to, or -1 */
    int last;                      /* the path's last step (fixed order) */
    int64_t off[4];                /* arena offsets: prep0, prep1, tmp, out
                                      (elements) */
    int64_t goff[4];               /* in a fused group: the buffers'
                                      offsets in a part's slab (-1: none) */
    const void *a, *b;
    void *p0, *p1, *tmp, *out;
} tstep;

/* A fused group's members' buffers for one part (elements), and where
 * its nparts copies start in the arena. */
typedef struct {
    int64_t elems, off;
} eb_slab;

typedef struct {
    int nsteps;
    tstep *steps;
    int ngroups;
    eb_fuse_group *groups;  /* run at their consumer's turn */
    eb_fuse_bind *binds;
    int nparts;             /* copies of a group's buffers (team size) */
    eb_slab *slabs;         /* per group: its members' buffers */
    int64_t *step_ns;       /* step clock (time_steps), or NULL */
    eb_dtype dt;            /* element type of every buffer */
    char *arena;
    int64_t arena_elems;
    struct eb_team *team;   /* NULL when the program runs on the caller */
    int blas_threads;       /* OpenBLAS's threads, set back after a run on
                               the caller alone and after the lanes */
    int solo;               /* too little work for the team (EB_SOLO_WORK) */
    int fork;               /* the first step that reads a unit's result
                               (lanes.h), or -1: no units */
    signed char *lane;      /* per step: 0, or its unit (1 .. nunits) */
    int nunits;             /* subtrees run as concurrent lanes */
    int lane_len[EB_LANES_MAX_UNITS + 1]; /* steps in each unit */
} program;

typedef struct {
    int n;
    int ids[EB_MAX_RANK];
} order;

static int has(const order *o, int l)
{
    for (int k = 0; k < o->n; k++)
        if (o->ids[k] == l)
            return 1;
    return 0;
}

static void add_if(order *dst, const order *src, const order *in1, int want1,
                   const order *in2, int want2)
{
    for (int k = 0; k < src->n; k++) {
        int l = src->ids[k];
        if (has(in1, l) == want1 && has(in2, l) == want2 && !has(dst, l))
            dst->ids[dst->n++] = l;
    }
}

/* Does every label of size > 1 of `sub` lie in `in`? */
static int within(const order *sub, const order *in, const int64_t *size)
{
    for (int q = 0; q < sub->n; q++)
        if (size[sub->ids[q]] > 1 && !has(in, sub->ids[q]))
            return 0;
    return 1;
}

/*
 * An intermediate (slot) is read by its consumer as groups lead (batch),
 * free and k; the consumer reads it in place as (lead, free, k) or
 * (lead, k, free). Where its producer is a skinny GEMM (one free side
 * from EB_SKINNY_MN to EB_SKINNY_SIDE - 1, the other at least that,
 * contracted labels) whose short side is one of the two groups and long
 * side the other, the order that puts the short side first lets the
 * producer write C with its long side contiguous: the orientation the own
 * kernel runs well (contract.c, eb_contract_plan). Returns 1 for (lead,
 * free, k), 0 for (lead, k, free), -1 where the producer has no such
 * preference.
 */
static int skinny_lead(const eb_instance *inst, const eb_schedule *sch,
                       const order *desired, int slot, const order *lead,
                       const order *free, const order *k)
{
    int n = inst->num_tensors;
    const int64_t *size = inst->label_size;
    const eb_sched_step *st = &sch->steps[slot - n];
    const order *pa = &desired[st->a], *pb = &desired[st->b];
    const order *o = &desired[slot];
    order side[2] = {{0}, {0}}, bat = {0};
    int64_t len[2] = {1, 1}, K = 1;
    for (int q = 0; q < o->n; q++) {
        int l = o->ids[q], ia = has(pa, l), ib = has(pb, l);
        if (ia && ib)
            bat.ids[bat.n++] = l;
        else {
            side[ib].ids[side[ib].n++] = l;
            len[ib] *= size[l];
        }
    }
    for (int q = 0; q < pa->n; q++)
        if (has(pb, pa->ids[q]) && !has(o, pa->ids[q]))
            K *= size[pa->ids[q]];
    int s = len[1] < len[0];
    if (K < 2 || len[s] < EB_SKINNY_MN || len[s] >= EB_SKINNY_SIDE ||
        len[1 - s] < EB_SKINNY_SIDE || !within(&bat, lead, size))
        return -1;
    if (within(&side[s], free, size) && within(&side[1 - s], k, size))
        return 1;
    if (within(&side[s], k, size) && within(&side[1 - s], free, size))
        return 0;
    return -1;
}

/*
 * Backward pass: desired[slot] is the layout the consumer of slot wants.
 * Inputs keep their own order; the final output has the output order.
 */
static void plan_layouts(const eb_instance *inst, const eb_schedule *sch,
                         order *desired)
{
    int n = inst->num_tensors;
    for (int k = 0; k < n; k++) {
        desired[k].n = inst->inputs[k].rank;
        memcpy(desired[k].ids, inst->inputs[k].ids,
               (size_t)inst->inputs[k].rank * sizeof(int));
    }
    if (sch->num_steps == 0)
        return;
    order *fin = &desired[n + sch->num_steps - 1];
    fin->n = inst->output.rank;
    memcpy(fin->ids, inst->output.ids, (size_t)fin->n * sizeof(int));
    for (int t = sch->num_steps - 1; t >= 0; t--) {
        const eb_sched_step *st = &sch->steps[t];
        const order *O = &desired[n + t];
        order A = {0}, B = {0};
        /* Operand label sets (their order is still to be decided for
         * intermediates; for inputs it is fixed). */
        const order *da = &desired[st->a], *db = &desired[st->b];
        A = *da;
        B = *db;
        order bb = {0}, m = {0}, nn = {0}, k = {0};
        add_if(&bb, O, &A, 1, &B, 1);
        add_if(&m, O, &A, 1, &B, 0);
        add_if(&nn, O, &A, 0, &B, 1);
        const order *korder = st->a < n ? &A : st->b < n ? &B : &A;
        const order *other = korder == &A ? &B : &A;
        for (int q = 0; q < korder->n; q++) {
            int l = korder->ids[q];
            if (has(other, l) && !has(O, l) && !has(&k, l))
                k.ids[k.n++] = l;
        }
        /* Nothing contracted: the step runs on the permutation engine
         * (a multiply, maybe broadcast, or an outer product), which takes
         * any layout and moves whole rows when each intermediate operand
         * has its labels in the output's order. Batch labels first would
         * make each such step a permutation: gm_queen's chain of five
         * 43 M-element products by 3 x 3 factors, each output with the
         * next factor's labels moved to the front, ran at 1.3-5.4 times
         * its bound. */
        if (k.n == 0) {
            const int ops[2] = {st->a, st->b};
            for (int s = 0; s < 2; s++)
                if (ops[s] >= n) {
                    order *d = &desired[ops[s]], was = *d;
                    d->n = 0;
                    add_if(d, O, &was, 1, &was, 1);
                }
            continue;
        }
        if (st->a >= n) {
            order *d = &desired[st->a];
            int kfirst =
                skinny_lead(inst, sch, desired, st->a, &bb, &m, &k) == 0;
            d->n = 0;
            const order *parts[3] = {&bb, kfirst ? &k : &m, kfirst ? &m : &k};
            for (int p = 0; p < 3; p++)
                for (int q = 0; q < parts[p]->n; q++)
                    d->ids[d->n++] = parts[p]->ids[q];
        }
        if (st->b >= n) {
            order *d = &desired[st->b];
            int nfirst =
                skinny_lead(inst, sch, desired, st->b, &bb, &nn, &k) == 1;
            d->n = 0;
            const order *parts[3] = {&bb, nfirst ? &nn : &k,
                                     nfirst ? &k : &nn};
            for (int p = 0; p < 3; p++)
                for (int q = 0; q < parts[p]->n; q++)
                    d->ids[d->n++] = parts[p]->ids[q];
        }
    }
}

/* Before the backward pass, intermediates hold their schedule label sets. */
static void seed_sets(const eb_instance *inst, const eb_schedule *sch,
                      order *desired)
{
    int n = inst->num_tensors;
    for (int t = 0; t < sch->num_steps; t++) {
        order *d = &desired[n + t];
        d->n = sch->steps[t].out_rank;
        memcpy(d->ids, sch->steps[t].out_ids, (size_t)d->n * sizeof(int));
    }
}

typedef struct {
    int64_t size;    /* elements, a whole number of 64-byte lines */
    int first, last; /* lifetime in steps, inclusive */
    int64_t *off;    /* where to store the assigned offset */
} buf_req;

static int by_size_desc(const void *x, const void *y)
{
    const buf_req *a = x, *b = y;
    return (a->size < b->size) - (a->size > b->size);
}

/* Greedy best-fit over lifetimes: largest first, lowest free offset among
 * buffers whose lifetimes overlap. Returns the arena size in elements. */
static int64_t assign_offsets(buf_req *r, int n)
{
    qsort(r, (size_t)n, sizeof *r, by_size_desc);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        int64_t off = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            for (int j = 0; j < i; j++) {
                if (r[j].last < r[i].first || r[i].last < r[j].first)
                    continue;
                int64_t o = *r[j].off;
                if (off < o + r[j].size && o < off + r[i].size) {
                    off = o + r[j].size;
                    moved = 1;
                }
            }
        }
        *r[i].off = off;
        if (off + r[i].size > total)
            total = off + r[i].size;
    }
    return total;
}

/* Elements of dt rounded up to whole 64-byte lines (8 float64s). */
static int64_t round64(eb_dtype dt, int64_t elems)
{
    int64_t line = 64 / (int64_t)eb_dtype_size(dt);
    return (elems + line - 1) / line * line;
}

/* The step at whose turn step t runs: its group's consumer, or itself. */
static int turn(const program *p, int t)
{
    const tstep *s = &p->steps[t];
    if (s->group < 0)
        return t;
    const eb_fuse_group *g = &p->groups[s->group];
    return g->mem[g->nmem - 1];
}

/*
 * A fused group's slab: the buffers of its members (scratch, blocks of
 * intermediates) for one part, laid out by their lifetimes within a block
 * (member i's scratch while it runs, its block from member i to the last
 * member that reads it: fuse.h, eb_fuse_last_use), so that a chain of
 * products reuses a few blocks in cache instead of touching one per
 * member. Returns the slab's elements; sets the members' goff.
 */
static int64_t plan_slab(program *p, const eb_fuse_group *g)
{
    buf_req r[4 * EB_FUSE_MAX];
    int n = 0, last = g->nmem - 1;
    for (int i = 0; i < g->nmem; i++) {
        tstep *s = &p->steps[g->mem[i]];
        for (int q = 0; q < 4; q++) {
            s->goff[q] = -1;
            if (g->buf_elems[i][q] == 0 || (q == 3 && i == last))
                continue;
            r[n++] = (buf_req){round64(p->dt, g->buf_elems[i][q]), i,
                               q < 3 ? i : eb_fuse_last_use(g, i),
                               &s->goff[q]};
        }
    }
    return assign_offsets(r, n);
}

/*
 * The time of each step's turn in the order trace_run runs the steps, and
 * the phase's time. Without lanes, the path's order. With them, the
 * steps outside the units before the fork step first, then the units at
 * once at time a (within a unit, its steps count 0, 1, ... in its own
 * clock), then the fork step at a + 1 and the rest.
 */
static int step_times(program *p, int *tm)
{
    int a = 0, post = 0;
    for (int u = 0; u <= p->nunits; u++)
        p->lane_len[u] = 0;
    for (int t = 0; t < p->nsteps; t++) {
        int l = p->lane[t];
        if (l)
            tm[t] = p->lane_len[l]++;
        else if (p->fork >= 0 && t >= p->fork)
            tm[t] = a + 1 + post++; /* the fork step first */
        else
            tm[t] = a++;
    }
    return a;
}

/* Copies of group k's buffers: one per part, a single one in a unit
 * (whose steps run on one thread). */
static int group_parts(const program *p, int k)
{
    const eb_fuse_group *g = &p->groups[k];
    return p->lane[g->mem[g->nmem - 1]] ? 1 : p->nparts;
}

/* Buffer requests of one unit (0: outside the units). */
typedef struct {
    buf_req *r;
    int n;
} req_list;

/*
 * Lifetimes of all buffers of the program; offsets into the arena. A
 * buffer lives from the turn its step runs to the turn its consumer runs
 * (times from step_times); a fused group's slabs (one per part) live
 * during the group's turn only, and its consumer's output like any
 * step's. Each unit's buffers (lanes.h) are planned on the unit's own
 * clock, the units side by side in one block that lives while they run
 * and until the last step that reads their results.
 */
static eb_status plan_memory(program *p, const int *consumer, eb_error *err)
{
    int cap = 4 * p->nsteps + p->ngroups + 1, nl = p->nunits + 1, ok = 1;
    req_list rl[EB_LANES_MAX_UNITS + 1];
    for (int l = 0; l < nl; l++) {
        rl[l] = (req_list){malloc((size_t)cap * sizeof(buf_req)), 0};
        ok = ok && rl[l].r;
    }
    int *tm = malloc((size_t)p->nsteps * sizeof *tm);
    p->slabs = calloc((size_t)(p->ngroups + 1), sizeof *p->slabs);
    if (!ok || !tm || !p->slabs) {
        for (int l = 0; l < nl; l++)
            free(rl[l].r);
        free(tm);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    int phase = step_times(p, tm), block_until = phase + 1;
    for (int k = 0; k < p->ngroups; k++) {
        const eb_fuse_group *g = &p->groups[k];
        int at = g->mem[g->nmem - 1];
        eb_slab *sl = &p->slabs[k];
        sl->elems = plan_slab(p, g);
        req_list *q = &rl[p->lane[at]];
        q->r[q->n++] = (buf_req){group_parts(p, k) * sl->elems, tm[at],
                                 tm[at], &sl->off};
    }
    for (int t = 0; t < p->nsteps; t++) {
        tstep *s = &p->steps[t];
        const eb_plan *pl = &s->plan;
        int64_t sizes[4] = {pl->prep[0] ? pl->prep_elems[0] : 0,
                            pl->prep[1] ? pl->prep_elems[1] : 0,
                            pl->tmp_elems, pl->out_elems};
        int l = p->lane[t], c = turn(p, consumer[t]);
        /* A unit's result lives to the unit's end (a step after the
         * units reads it), in the block of the units, which lives until
         * the last of those reads. */
        int at = tm[turn(p, t)],
            until = l && p->lane[c] != l ? p->lane_len[l] : tm[c];
        if (l && !p->lane[c] && tm[c] > block_until)
            block_until = tm[c];
        if (s->group >= 0) {
            /* In the slab, but the consumer's whole output. */
            const eb_fuse_group *g = &p->groups[s->group];
            for (int q = 0; q < 3; q++)
                sizes[q] = 0;
            if (t != g->mem[g->nmem - 1]) {
                for (int q = 0; q < 4; q++)
                    s->off[q] = -1;
                continue;
            }
        }
        req_list *rq = &rl[l];
        for (int q = 0; q < 4; q++) {
            s->off[q] = -1;
            if (q < 3 && sizes[q] == 0)
                continue;
            rq->r[rq->n++] = (buf_req){round64(p->dt, sizes[q]), at,
                                       q < 3 ? at : until, &s->off[q]};
        }
    }
    /* Each unit's buffers on its own clock, the units side by side in
     * the block: either thread may run any unit, at any time. */
    int64_t at_unit[EB_LANES_MAX_UNITS + 1], block = 0, blocksize = 0;
    for (int l = 1; l < nl; l++) {
        at_unit[l] = blocksize;
        blocksize += assign_offsets(rl[l].r, rl[l].n);
    }
    if (p->fork >= 0)
        rl[0].r[rl[0].n++] = (buf_req){blocksize, phase, block_until, &block};
    p->arena_elems = assign_offsets(rl[0].r, rl[0].n);
    for (int l = 1; l < nl; l++)
        for (int i = 0; i < rl[l].n; i++)
            *rl[l].r[i].off += block + at_unit[l];
    for (int l = 0; l < nl; l++)
        free(rl[l].r);
    free(tm);
    return EB_OK;
}

static eb_status plan_step(const eb_instance *inst, const eb_view *inputs,
                           const order *desired, const tstep *s,
                           const order *keep, int fixed, eb_plan *out,
                           eb_error *err);

static eb_status plan_steps(const eb_instance *inst, const eb_schedule *sch,
                            const eb_view *inputs, const order *desired,
                            program *p, eb_error *err)
{
    int n = inst->num_tensors;
    order out = {.n = inst->output.rank};
    memcpy(out.ids, inst->output.ids, (size_t)out.n * sizeof(int));
    for (int t = 0; t < p->nsteps; t++) {
        tstep *s = &p->steps[t];
        int single = sch->num_steps == 0;
        s->a_slot = single ? 0 : sch->steps[t].a;
        s->b_slot = single ? -1 : sch->steps[t].b;
        s->last = t == p->nsteps - 1;
        eb_status st = plan_step(inst, inputs, desired, s,
                                 single ? &out : &desired[n + t], 1, &s->plan,
                                 err);
        if (st)
            return st;
    }
    return EB_OK;
}


/* Rows of C past which the own kernel's column chunks (at most 24 wide)
 * no longer meet in cache: chunk after chunk re-reads and rewrites the
 * same lines of C from memory. */
enum { STRIP_ROWS = 4096 };

/*
 * Elements a plan moves, as improve_layouts compares layouts: its
 * preparations and post permutation (moved), plus its output for a
 * multiply or outer product the engine does not run as long rows
 * (eb_plan_engine_slow), plus, for the own GEMM kernel writing a C of
 * more than STRIP_ROWS rows in its orientation (C's contiguous side as
 * columns) and more than 24 columns, C once more per extra column chunk.
 * gm_queen's 9 x (59049 x 81 x 3) step with C laid out column-major
 * (59049 rows of 81) ran 2-3 times as long as with C row-major, which the
 * 1.6 M-element permutation it saved did not pay.
 */
static int64_t layout_cost(const eb_plan *p)
{
    int64_t cost = eb_plan_moved(p);
    /* The permutation engine runs a multiply or outer product in any
     * layout, but in tiles or short rows at the rate of a permutation. */
    if (eb_plan_engine_slow(p))
        return cost + p->out_elems;
    if (p->kind != EB_KIND_SMALL_GEMM)
        return cost;
    int t = p->scn != 1 && p->scm == 1;
    int64_t rows = t ? p->N : p->M, cols = t ? p->M : p->N;
    if (rows > STRIP_ROWS && cols > 24)
        cost += (cols - 1) / 16 * rows * cols * p->nbatch;
    return cost;
}

/* Elements the own GEMM kernel copies or addresses through tables for a
 * plan's operand strides (kernels.c, eb_kern_small_gemm): B's panels when
 * B (C^T's B, A^T, when C is column-major) is not contiguous along the
 * columns and the k-vector form does not apply, C through a tile when it
 * is strided both ways, offset tables for a two-level K. The layout
 * search (improve_layouts) breaks ties in moved elements by it: lm's
 * 7600 x 16 x 64 step on a B with its columns 4 apart and a two-level K
 * ran 20% slower than on the same data in the other order of an
 * intermediate. Other kinds: 0 (ties count only between plans of the
 * same kinds). */
static int64_t kernel_copies(const eb_plan *p)
{
    if (p->kind != EB_KIND_SMALL_GEMM)
        return 0;
    int t = p->scn != 1 && p->scm == 1;
    int64_t sbn = t ? p->sam : p->sbn, sak = t ? p->sbk : p->sak,
            sbk = t ? p->sak : p->sbk, rows = t ? p->N : p->M,
            cols = t ? p->M : p->N;
    int kvec = sak == 1 && sbk == 1 && sbn != 1 && p->K / p->K1 >= 8 &&
               p->K >= 64;
    int64_t pen = 0;
    if (sbn != 1 && !kvec)
        pen += p->K * cols;
    if (p->scm != 1 && p->scn != 1)
        pen += rows * cols;
    if (p->K1 > 1 && !kvec)
        pen += p->K;
    return pen * p->nbatch;
}

/* The operand views of step s: inputs as they are, intermediates compact
 * in the order `desired` gives them. Returns the number of operands. */
static int step_views(const eb_instance *inst, const eb_view *inputs,
                      const order *desired, const tstep *s, eb_view *v)
{
    int n = inst->num_tensors, nops = s->b_slot < 0 ? 1 : 2;
    for (int q = 0; q < nops; q++) {
        int slot = q ? s->b_slot : s->a_slot;
        if (slot < n)
            v[q] = inputs[slot];
        else
            eb_view_compact(&v[q], NULL, desired[slot].ids, desired[slot].n,
                            inst->label_size);
    }
    return nops;
}

/* Plan step s (an operand pair) to produce `keep`, in that order when
 * fixed, with operands laid out as `desired` says. */
static eb_status plan_step(const eb_instance *inst, const eb_view *inputs,
                           const order *desired, const tstep *s,
                           const order *keep, int fixed, eb_plan *out,
                           eb_error *err)
{
    eb_view v[2];
    step_views(inst, inputs, desired, s, v);
    /* The last step writes the output in its given order, as every step
     * of eager does: eager's planner for such steps (peeled or chunked
     * products where C's order does not suit one GEMM). */
    if (s->last && fixed && s->b_slot >= 0)
        return eb_contract_plan_peel(&v[0], &v[1], keep->ids, keep->n,
                                     inst->label_size, inst->dt, out, err);
    return eb_contract_plan(&v[0], s->b_slot < 0 ? NULL : &v[1], keep->ids,
                            keep->n, fixed, inst->label_size, inst->dt, out,
                            err);
}

/* `was` with the labels that only operand q of step s has (its free
 * labels) moved to the front, the rest in their order: the step's C is
 * then one free side by the other, which a GEMM writes in place, and its
 * consumer reads the other labels as they were. 0 when nothing moves. */
static int free_side_first(const eb_instance *inst, const eb_view *inputs,
                           const order *desired, const tstep *s, int q,
                           const order *was, order *o)
{
    eb_view v[2];
    if (step_views(inst, inputs, desired, s, v) < 2)
        return 0;
    order mine = {.n = v[q].rank}, other = {.n = v[1 - q].rank};
    memcpy(mine.ids, v[q].ids, (size_t)mine.n * sizeof(int));
    memcpy(other.ids, v[1 - q].ids, (size_t)other.n * sizeof(int));
    o->n = 0;
    add_if(o, was, &mine, 1, &other, 0);
    int front = o->n;
    for (int k = 0; k < was->n; k++)
        if (!has(o, was->ids[k]))
            o->ids[o->n++] = was->ids[k];
    return front > 0 && front < o->n && memcmp(o->ids, was->ids,
                                               (size_t)o->n * sizeof(int));
}

/* Orders of an intermediate tried per step by improve_layouts: its labels
 * in at most ATOM_MAX atoms, every order of them; at most IMPROVE_PASSES
 * passes over the steps. */
enum { ATOM_MAX = 6, IMPROVE_PASSES = 4 };

/* The class of label l in step s (0: in both operands; 1: in the left one
 * only; 2: in the right one only) or, for the consumer c of slot `slot`,
 * of l in the other operand and c's output (0: batch, 1: free, 2:
 * contracted, 3: summed out of this operand). */
static int label_class(const order *desired, const tstep *s, int l)
{
    int ia = has(&desired[s->a_slot], l),
        ib = s->b_slot >= 0 && has(&desired[s->b_slot], l);
    return ia && ib ? 0 : ia ? 1 : 2;
}

static int use_class(const order *desired, int n, const tstep *c, int ct,
                     int slot, int l)
{
    int other = c->a_slot == slot ? c->b_slot : c->a_slot;
    int in_other = other >= 0 && has(&desired[other], l);
    int kept = has(&desired[n + ct], l);
    return in_other ? (kept ? 0 : 2) : (kept ? 1 : 3);
}

/* Position of l in o, or `none`. */
static int pos_in(const order *o, int l, int none)
{
    for (int k = 0; k < o->n; k++)
        if (o->ids[k] == l)
            return k;
    return none;
}

/* The rank of label l inside its atom in variant v of atom_orders: 0 its
 * position in `was`; 1 in the producer's operands (left, then right); 2 in
 * the consumer's other operand; labels not found there after the others,
 * in `was` order. */
static int inner_rank(const order *desired, const tstep *s, const tstep *c,
                      int slot, const order *was, int v, int l)
{
    int w = pos_in(was, l, 0), late = 2 * EB_MAX_RANK + w;
    if (v == 1) {
        int q = pos_in(&desired[s->a_slot], l, -1);
        if (q < 0 && s->b_slot >= 0)
            q = pos_in(&desired[s->b_slot], l, -1);
        return q < 0 ? late : q;
    }
    if (v == 2) {
        int other = c->a_slot == slot ? c->b_slot : c->a_slot;
        int q = other >= 0 ? pos_in(&desired[other], l, -1) : -1;
        return q < 0 ? late : q;
    }
    return w;
}

/*
 * Candidate orders of intermediate t (slot n + t, consumed by step ct) for
 * improve_layouts: its labels of size > 1 grouped into atoms, the labels
 * that fall in the same class of its producer (batch, left, right) and of
 * its consumer (batch, free, contracted, summed), each atom's labels in
 * the order of `was`, of the producer's operands or of the consumer's
 * other operand (three variants); then every order of the atoms in which
 * the producer's batch atoms come before its other atoms and the
 * consumer's before its others (a batch label inside a matrix's rows
 * makes one small GEMM per batch element read or write every row on
 * another cache line: gm_queen's 9 x 81 x 59049 x 3 step, its output's
 * batch labels moved inside the consumer's, ran 2-3 times as long);
 * size-1 labels last. Such an
 * order lets both steps read or write the intermediate in place where the
 * current one splits a group of one of them (lm's batched 16^3 products
 * whose output the consumer reads as a 7984 x 64 matrix: the producer's
 * n group (Ô, ã) around its m group). Writes at most `cap` orders to out;
 * returns their count.
 */
static int atom_orders(const eb_instance *inst, const order *desired,
                       const program *p, int t, int ct, const order *was,
                       order *out, int cap)
{
    int n = inst->num_tensors, slot = n + t;
    const int64_t *size = inst->label_size;
    const tstep *s = &p->steps[t], *c = &p->steps[ct];
    int key[EB_MAX_RANK], na = 0, atom[EB_MAX_RANK];
    order ones = {0};
    for (int q = 0; q < was->n; q++) {
        int l = was->ids[q];
        if (size[l] == 1) {
            ones.ids[ones.n++] = l;
            continue;
        }
        int k = label_class(desired, s, l) * 4 +
                use_class(desired, n, c, ct, slot, l);
        int a = 0;
        while (a < na && key[a] != k)
            a++;
        if (a == na) {
            if (na == ATOM_MAX)
                return 0;
            key[na] = k;
            na++;
        }
        atom[q] = a;
    }
    if (na < 2)
        return 0;
    int cnt = 0;
    for (int v = 0; v < 3; v++) {
        /* The labels of size > 1 of `was` sorted by atom, then rank. */
        int lab[EB_MAX_RANK], at[EB_MAX_RANK], rk[EB_MAX_RANK], nl = 0;
        for (int q = 0; q < was->n; q++) {
            int l = was->ids[q];
            if (size[l] == 1)
                continue;
            int r = inner_rank(desired, s, c, slot, was, v, l), i = nl++;
            while (i > 0 && (at[i - 1] > atom[q] ||
                             (at[i - 1] == atom[q] && rk[i - 1] > r))) {
                lab[i] = lab[i - 1];
                at[i] = at[i - 1];
                rk[i] = rk[i - 1];
                i--;
            }
            lab[i] = l;
            at[i] = atom[q];
            rk[i] = r;
        }
        int perm[ATOM_MAX];
        for (int a = 0; a < na; a++)
            perm[a] = a;
        /* Orders in lexicographic order of perm (next permutation). */
        for (;;) {
            /* The producer's batch atoms before its other atoms, and the
             * consumer's before its others. */
            int ok = 1, rest_p = 0, rest_c = 0;
            for (int i = 0; i < na && ok; i++) {
                int bp = key[perm[i]] / 4 == 0, bc = key[perm[i]] % 4 == 0;
                ok = !(bp && rest_p) && !(bc && rest_c);
                rest_p |= !bp;
                rest_c |= !bc;
            }
            if (ok && cnt < cap) {
                order *o = &out[cnt];
                o->n = 0;
                for (int i = 0; i < na; i++)
                    for (int q = 0; q < nl; q++)
                        if (at[q] == perm[i])
                            o->ids[o->n++] = lab[q];
                for (int q = 0; q < ones.n; q++)
                    o->ids[o->n++] = ones.ids[q];
                int dup = 0; /* (variants often agree) */
                for (int e = 0; e < cnt && !dup; e++)
                    dup = !memcmp(out[e].ids, o->ids,
                                  (size_t)o->n * sizeof(int));
                cnt += !dup;
            }
            int i = na - 2;
            while (i >= 0 && perm[i] > perm[i + 1])
                i--;
            if (i < 0)
                break;
            int j = na - 1;
            while (perm[j] < perm[i])
                j--;
            int x = perm[i];
            perm[i] = perm[j];
            perm[j] = x;
            for (int lo = i + 1, hi = na - 1; lo < hi; lo++, hi--) {
                x = perm[lo];
                perm[lo] = perm[hi];
                perm[hi] = x;
            }
        }
    }
    return cnt;
}

/*
 * Local improvement: where a step permutes its output into the order its
 * consumer asked for, or the consumer permutes it, try other orders of the
 * intermediate: the step's own natural order (the consumer adapts), the
 * consumer's order with either operand's free labels moved to the front
 * (a skinny GEMM whose short side is among the consumer's batch labels
 * then writes C as it computes it, gm_queen5_5_3's 129 M-element
 * intermediate), then the orders of atom_orders; keep the one with which
 * the two steps move the fewest elements, if that is fewer than before.
 */
static eb_status improve_layouts(const eb_instance *inst,
                                 const eb_view *inputs, order *desired,
                                 const int *consumer, program *p,
                                 int *changed, eb_error *err)
{
    int n = inst->num_tensors;
    *changed = 0;
    enum { NCAND = 3 * 720 + 3 };
    eb_plan *alt = malloc(4 * sizeof *alt);
    order *cand = malloc(NCAND * sizeof *cand);
    if (!alt || !cand) {
        free(alt);
        free(cand);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    eb_status st = EB_OK;
    for (int t = 0; t + 1 < p->nsteps && !st; t++) {
        tstep *s = &p->steps[t], *c = &p->steps[consumer[t]];
        int64_t best = layout_cost(&s->plan) + layout_cost(&c->plan),
                bmoved = eb_plan_moved(&s->plan) + eb_plan_moved(&c->plan),
                copies = kernel_copies(&s->plan) + kernel_copies(&c->plan);
        if (!best && !copies)
            continue;
        order was = desired[n + t];
        int found = 0;
        /* Candidate 0: the step's natural order (its output order free). */
        st = plan_step(inst, inputs, desired, s, &was, 0, &alt[0], err);
        if (st)
            break;
        cand[0].n = alt[0].out_rank;
        memcpy(cand[0].ids, alt[0].out_ids,
               (size_t)alt[0].out_rank * sizeof(int));
        /* Then the consumer's order with either operand's free labels
         * moved to the front (free_side_first), then the atom orders. */
        int nc = 1;
        for (int q = 0; q < 2; q++)
            nc += free_side_first(inst, inputs, desired, s, q, &was,
                                  &cand[nc]);
        nc += atom_orders(inst, desired, p, t, consumer[t], &was, cand + nc,
                          NCAND - nc);
        for (int q = 0; q < nc && !st; q++) {
            desired[n + t] = cand[q];
            if (q > 0)
                st = plan_step(inst, inputs, desired, s, &cand[q], 1,
                               &alt[0], err);
            if (!st)
                st = plan_step(inst, inputs, desired, c,
                               &desired[n + consumer[t]], 1, &alt[1], err);
            int64_t mv = layout_cost(&alt[0]) + layout_cost(&alt[1]),
                    mo = eb_plan_moved(&alt[0]) + eb_plan_moved(&alt[1]),
                    cp = kernel_copies(&alt[0]) + kernel_copies(&alt[1]);
            /* Taken when the layout cost shrinks and the moved elements
             * do not grow (an equal layout cost with fewer moved elements
             * trades a permutation for extra passes over C: not taken);
             * ties broken by the own kernel's copies between plans of the
             * same kernels (no measure against BLAS's). */
            int same = alt[0].kind == s->plan.kind &&
                       alt[1].kind == c->plan.kind;
            if (!st && mv <= best && mo <= bmoved &&
                (mv < best || (same && cp < copies))) {
                best = mv;
                bmoved = mo;
                copies = cp;
                alt[2] = alt[0];
                alt[3] = alt[1];
                was = cand[q];
                found = 1;
            }
        }
        desired[n + t] = was;
        if (!st && found) {
            s->plan = alt[2];
            c->plan = alt[3];
            (*changed)++;
        }
    }
    free(alt);
    free(cand);
    return st;
}

/* Groups of steps that run block by block (see fuse.h). With the program's
 * lanes (p->lane, or NULL before they are planned), a step whose output
 * is read in its own unit is `shared`. */
static eb_status plan_fusion(const eb_instance *inst, const eb_view *inputs,
                             const order *desired, const eb_fuse_opts *opts,
                             const int *consumer, program *p, eb_error *err)
{
    int n = inst->num_tensors;
    free(p->groups);
    free(p->binds);
    p->groups = NULL;
    p->binds = NULL;
    p->ngroups = 0;
    for (int t = 0; t < p->nsteps; t++)
        p->steps[t].group = -1;
    if (!opts || p->nsteps < 2)
        return EB_OK;
    eb_fuse_step *fs = malloc((size_t)p->nsteps * sizeof *fs);
    if (!fs)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    for (int t = 0; t < p->nsteps; t++) {
        const tstep *s = &p->steps[t];
        fs[t].plan = &s->plan;
        fs[t].nops = step_views(inst, inputs, desired, s, fs[t].op);
        fs[t].producer[0] = s->a_slot >= n ? s->a_slot - n : -1;
        fs[t].producer[1] = s->b_slot >= n ? s->b_slot - n : -1;
        fs[t].shared = p->lane && p->lane[t] &&
                       p->lane[consumer[t]] == p->lane[t];
    }
    eb_status st = eb_fuse_plan(inst, fs, p->nsteps, opts, &p->groups,
                                &p->ngroups, err);
    free(fs);
    if (!st && p->ngroups) {
        p->binds = calloc((size_t)p->ngroups, sizeof *p->binds);
        if (!p->binds)
            st = eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; !st && k < p->ngroups; k++)
        for (int i = 0; i < p->groups[k].nmem; i++)
            p->steps[p->groups[k].mem[i]].group = k;
    return st;
}

/* Resolve every operand and buffer pointer once. */
static void bind(program *p, const eb_view *inputs, int n)
{
    int64_t esz = (int64_t)eb_dtype_size(p->dt);
    for (int t = 0; t < p->nsteps; t++) {
        tstep *s = &p->steps[t];
        void *ptr[4];
        for (int q = 0; q < 4; q++)
            ptr[q] = s->off[q] >= 0 ? p->arena + s->off[q] * esz : NULL;
        s->p0 = ptr[0];
        s->p1 = ptr[1];
        s->tmp = ptr[2];
        s->out = ptr[3];
        s->a = s->a_slot < n ? inputs[s->a_slot].data
                             : p->steps[s->a_slot - n].out;
        s->b = s->b_slot < 0    ? NULL
               : s->b_slot < n ? inputs[s->b_slot].data
                               : p->steps[s->b_slot - n].out;
    }
    for (int k = 0; k < p->ngroups; k++) {
        const eb_fuse_group *g = &p->groups[k];
        eb_fuse_bind *b = &p->binds[k];
        b->nparts = group_parts(p, k);
        for (int i = 0; i < g->nmem; i++) {
            const tstep *s = &p->steps[g->mem[i]];
            b->ext[i][0] = g->internal[i][0] < 0 ? s->a : NULL;
            b->ext[i][1] = g->internal[i][1] < 0 ? s->b : NULL;
            const eb_slab *sl = &p->slabs[k];
            char *slab = p->arena + sl->off * esz;
            for (int part = 0; part < b->nparts; part++)
                for (int q = 0; q < 4; q++)
                    b->buf[part][i][q] =
                        s->goff[q] >= 0
                            ? slab + (part * sl->elems + s->goff[q]) * esz
                            : NULL;
        }
        b->out = p->steps[g->mem[g->nmem - 1]].out;
    }
}

static void program_free(program *p)
{
    if (!p)
        return;
    free(p->steps);
    free(p->groups);
    free(p->binds);
    free(p->slabs);
    free(p->lane);
    eb_mem_free(p->arena);
    free(p);
}

/*
 * Whether the program runs on the caller alone (p->solo: less work than
 * fuse's solo_work, EB_SOLO_WORK without fuse), and else, with a team of
 * two or more, its lanes (lanes.h; each at least solo_work too).
 */
static eb_status plan_lanes(program *p, const int *consumer,
                            const eb_fuse_opts *fuse, int nthreads,
                            eb_error *err)
{
    double solo = fuse ? fuse->solo_work : EB_SOLO_WORK, total = 0;
    int *turns = malloc((size_t)p->nsteps * sizeof *turns);
    double *work = malloc((size_t)p->nsteps * sizeof *work);
    free(p->lane);
    p->lane = calloc((size_t)p->nsteps, sizeof *p->lane);
    p->fork = -1;
    if (!turns || !work || !p->lane) {
        free(turns);
        free(work);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    for (int t = 0; t < p->nsteps; t++) {
        turns[t] = turn(p, t);
        work[t] = eb_plan_work(&p->steps[t].plan);
        total += work[t];
    }
    p->solo = nthreads > 1 && total < solo;
    if (nthreads > 1 && !p->solo)
        p->fork = eb_lanes_plan(p->nsteps, consumer, turns, work,
                                EB_LANES_MIN_SHARE, solo, p->lane);
    p->nunits = 0;
    for (int t = 0; t < p->nsteps; t++)
        p->nunits = p->lane[t] > p->nunits ? p->lane[t] : p->nunits;
    free(turns);
    free(work);
    return EB_OK;
}

/*
 * Units run side by side share the last-level cache and the memory
 * bandwidth, so their steps' outputs are fused from a smaller size
 * (eb_fuse_opts.unit_min_bytes): fusion again with the lanes known, then
 * the lanes again for the new groups (which lie inside the units). Should
 * the lanes come out otherwise, the program keeps the first plan.
 */
static eb_status fuse_in_units(const eb_instance *inst, const eb_view *inputs,
                               const order *desired, const eb_fuse_opts *fuse,
                               const int *consumer, int nparts, program *p,
                               eb_error *err)
{
    int fork = p->fork, nunits = p->nunits;
    eb_status st = plan_fusion(inst, inputs, desired, fuse, consumer, p, err);
    if (!st)
        st = plan_lanes(p, consumer, fuse, nparts, err);
    if (st || (p->fork == fork && p->nunits == nunits))
        return st;
    free(p->lane);
    p->lane = NULL;
    st = plan_fusion(inst, inputs, desired, fuse, consumer, p, err);
    return st ? st : plan_lanes(p, consumer, fuse, nparts, err);
}

/* Everything but the arena: layouts, plans, offsets. */
static eb_status compile(const eb_instance *inst, const eb_path *path,
                         const eb_view *inputs, const eb_fuse_opts *fuse,
                         int nparts, program **out, eb_error *err)
{
    *out = NULL;
    eb_schedule *sch;
    eb_status st = eb_schedule_build(inst, path, &sch, err);
    if (st)
        return st;
    int n = inst->num_tensors, nslots = n + sch->num_steps;
    program *p = calloc(1, sizeof *p);
    order *desired = malloc((size_t)nslots * sizeof *desired);
    int *consumer = malloc((size_t)(sch->num_steps + 1) * sizeof *consumer);
    if (p) {
        p->dt = inst->dt;
        p->nsteps = sch->num_steps ? sch->num_steps : 1;
        p->nparts = nparts < 1                   ? 1
                    : nparts > EB_FUSE_MAX_PARTS ? EB_FUSE_MAX_PARTS
                                                 : nparts;
        p->steps = calloc((size_t)p->nsteps, sizeof *p->steps);
    }
    if (!p || !p->steps || !desired || !consumer) {
        st = eb_error_set(err, EB_ERR_NOMEM, "out of memory");
        goto done;
    }
    consumer[0] = 0;
    for (int t = 0; t < sch->num_steps; t++) {
        consumer[t] = t; /* the final output lives to the end */
        for (int u = t + 1; u < sch->num_steps; u++)
            if (sch->steps[u].a == n + t || sch->steps[u].b == n + t)
                consumer[t] = u;
    }
    seed_sets(inst, sch, desired);
    plan_layouts(inst, sch, desired);
    st = plan_steps(inst, sch, inputs, desired, p, err);
    /* A changed intermediate changes what its neighbours' best orders
     * are: a few passes, until none changes. */
    for (int pass = 0, changed = 1;
         !st && sch->num_steps > 0 && changed && pass < IMPROVE_PASSES; pass++)
        st = improve_layouts(inst, inputs, desired, consumer, p, &changed,
                             err);
    if (!st)
        st = plan_fusion(inst, inputs, desired, fuse, consumer, p, err);
    if (!st)
        st = plan_lanes(p, consumer, fuse, nparts, err);
    if (!st && fuse && p->fork >= 0)
        st = fuse_in_units(inst, inputs, desired, fuse, consumer, nparts, p,
                           err);
    if (!st)
        st = plan_memory(p, consumer, err);
done:
    free(desired);
    free(consumer);
    eb_schedule_destroy(sch);
    if (st)
        program_free(p);
    else
        *out = p;
    return st;
}

/* Runs step t at its turn (a fused group's member at its consumer's). */
static void run_turn(program *p, int t, struct eb_team *team,
                     eb_exec_counters *cnt)
{
    const tstep *s = &p->steps[t];
    if (s->group >= 0 && turn(p, t) != t)
        return; /* runs at its group's turn */
    int64_t t0 = p->step_ns ? eb_now_ns() : 0;
    if (s->group < 0)
        eb_contract_exec(&s->plan, s->a, s->b, s->p0, s->p1, s->tmp, s->out,
                         team, cnt);
    else
        eb_fuse_exec(&p->groups[s->group], &p->binds[s->group], team, cnt);
    if (p->step_ns)
        p->step_ns[t] += eb_now_ns() - t0;
}

typedef struct {
    program *p;
    atomic_int next; /* the next unit to claim, 0-based */
    eb_exec_counters cnt[EB_LANES_MAX_UNITS];
} lanes_job;

/* One thread's share of the units: unit part + 1 first (with as many
 * parts as threads, the caller runs unit 1 and a worker unit 2, on the
 * same cores from run to run, as the team hands out parts), then the
 * largest unit not yet claimed, until none is left (a unit taken last is
 * a small one). Each unit's steps in path order on this thread alone;
 * each unit's counters are its own. */
static void lane_part(void *arg, int part, int nparts)
{
    (void)nparts;
    lanes_job *j = arg;
    for (int u = part; u < j->p->nunits;
         u = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed))
        for (int t = 0; t < j->p->nsteps; t++)
            if (j->p->lane[t] == u + 1)
                run_turn(j->p, t, NULL, &j->cnt[u]);
}

static eb_status trace_run(void *vctx, const void **out,
                           eb_exec_counters *cnt, eb_error *err)
{
    (void)err;
    program *p = vctx;
    int alone = p->solo && p->blas_threads > 1; /* on the caller alone */
    if (p->fork < 0) {
        if (alone)
            eb_blas_set_threads(1);
        for (int t = 0; t < p->nsteps; t++)
            run_turn(p, t, p->team, cnt);
        if (alone)
            eb_blas_set_threads(p->blas_threads);
    } else {
        for (int t = 0; t < p->fork; t++)
            if (!p->lane[t])
                run_turn(p, t, p->team, cnt);
        /* The units, claimed by the team's threads (lane_part): OpenBLAS
         * at one thread while several may call it. */
        lanes_job j = {.p = p};
        int parts = eb_team_size(p->team);
        parts = parts < p->nunits ? parts : p->nunits;
        atomic_init(&j.next, parts);
        if (p->blas_threads > 1)
            eb_blas_set_threads(1);
        eb_team_run_parts(p->team, parts, lane_part, &j);
        if (p->blas_threads > 1)
            eb_blas_set_threads(p->blas_threads);
        for (int k = 0; k < p->nunits; k++)
            eb_exec_counters_add(cnt, &j.cnt[k]);
        for (int t = p->fork; t < p->nsteps; t++)
            if (!p->lane[t])
                run_turn(p, t, p->team, cnt);
    }
    *out = p->steps[p->nsteps - 1].out;
    return EB_OK;
}

static void trace_release(void *vctx) { (void)vctx; }

static void trace_time_steps(void *vctx, int64_t *ns)
{
    program *p = vctx;
    p->step_ns = ns;
}

static void trace_destroy(void *vctx) { program_free(vctx); }

eb_status eb_trace_create(const eb_instance *inst, const eb_path *path,
                          const eb_view *inputs, struct eb_team *team,
                          const eb_fuse_opts *fuse, eb_executor *ex,
                          eb_error *err)
{
    int64_t t0 = eb_now_ns();
    program *p;
    eb_status st =
        compile(inst, path, inputs, fuse, eb_team_size(team), &p, err);
    if (st)
        return st;
    size_t bytes = (size_t)(p->arena_elems ? p->arena_elems : 1) *
                   eb_dtype_size(p->dt);
    void *arena = eb_mem_alloc(bytes);
    if (!arena) {
        program_free(p);
        return eb_error_set(err, EB_ERR_NOMEM,
                            "out of memory for a %zu-byte trace arena", bytes);
    }
    memset(arena, 0, bytes); /* touch every page at compile time */
    p->arena = arena;
    p->team = team;
    /* Too little work to gain from the team (fuse.h, EB_SOLO_WORK): the
     * caller runs it alone, with OpenBLAS at one thread during runs. */
    if (p->solo)
        p->team = NULL;
    p->blas_threads = eb_blas_threads();
    bind(p, inputs, inst->num_tensors);
    *ex = (eb_executor){.ctx = p, .mode = "trace", .run = trace_run,
                        .release = trace_release, .destroy = trace_destroy,
                        .time_steps = trace_time_steps,
                        .compile_ms = (double)(eb_now_ns() - t0) / 1e6,
                        .static_bytes = (int64_t)bytes,
                        .fused_groups = p->ngroups,
                        .engine_threads = eb_team_size(p->team),
                        .lanes_at = p->fork};
    return EB_OK;
}

eb_status eb_trace_describe(const eb_instance *inst, const eb_path *path,
                            const eb_fuse_opts *fuse, eb_step_desc *descs,
                            int64_t *arena_bytes, eb_error *err)
{
    eb_trace_team team;
    return eb_trace_describe_team(inst, path, fuse, 1, descs, arena_bytes,
                                  &team, err);
}

eb_status eb_trace_describe_team(const eb_instance *inst,
                                 const eb_path *path,
                                 const eb_fuse_opts *fuse, int threads,
                                 eb_step_desc *descs, int64_t *arena_bytes,
                                 eb_trace_team *team, eb_error *err)
{
    eb_view *views = eb_views_without_data(inst);
    if (!views)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    program *p;
    threads = threads > 1 ? threads : 1;
    eb_status st = compile(inst, path, views, fuse, threads, &p, err);
    if (!st) {
        int n = inst->num_tensors;
        *team = (eb_trace_team){
            .solo = threads > 1 && p->solo,
            .solo_work = fuse ? fuse->solo_work : EB_SOLO_WORK,
            .fork = p->fork, .nunits = p->nunits};
        for (int t = 0; t < p->nsteps; t++) {
            eb_step_desc *d = &descs[t];
            const tstep *s = &p->steps[t];
            d->plan = s->plan;
            d->unit = p->lane[t];
            team->work += eb_plan_work(&s->plan);
            d->fused_at = -1;
            d->fuse_pf = 0;
            if (s->group >= 0) {
                const eb_fuse_group *g = &p->groups[s->group];
                d->fused_at = turn(p, t);
                d->fuse_label = g->label;
                d->fuse_block = g->bw;
                d->fuse_blocks = g->nblocks;
                d->fuse_nlab = g->nlab;
                memcpy(d->fuse_labels, g->labels,
                       (size_t)g->nlab * sizeof(int));
                for (int i = 0; i < g->nmem; i++)
                    if (g->mem[i] == t)
                        d->fuse_pf =
                            (g->pf[i][0] != 0) | (g->pf[i][1] != 0) << 1;
            }
            const eb_view *va = s->a_slot < n ? &views[s->a_slot] : NULL;
            d->a_rank = va ? va->rank : p->steps[s->a_slot - n].plan.out_rank;
            memcpy(d->a_ids, va ? va->ids : p->steps[s->a_slot - n].plan.out_ids,
                   (size_t)d->a_rank * sizeof(int));
            if (s->b_slot < 0) {
                d->b_rank = -1;
                continue;
            }
            const eb_view *vb = s->b_slot < n ? &views[s->b_slot] : NULL;
            d->b_rank = vb ? vb->rank : p->steps[s->b_slot - n].plan.out_rank;
            memcpy(d->b_ids, vb ? vb->ids : p->steps[s->b_slot - n].plan.out_ids,
                   (size_t)d->b_rank * sizeof(int));
        }
        *arena_bytes = p->arena_elems * (int64_t)eb_dtype_size(p->dt);
        program_free(p);
    }
    free(views);
    return st;
}
