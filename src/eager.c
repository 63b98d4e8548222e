/* eager: step-by-step execution with planning at call time. */
#include "eager.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "schedule.h"
#include "team.h"

typedef struct {
    eb_view v;
    void *buf; /* pool buffer, NULL for an input */
} operand;

typedef struct {
    const eb_instance *inst;
    const eb_path *path;
    const eb_view *inputs;
    eb_pool *pool;
    struct eb_team *team;
    operand *live;      /* by slot: inputs, then step s's result at n+s */
    eb_pair *slots;     /* each step's operand slots (eb_path_slots) */
    int *refcount;      /* per label: live operands holding it (+1 output) */
    int *refcount0;     /* refcount before the first step */
    void *result;       /* output of the last run, still held */
    int64_t *step_ns;   /* step clock (time_steps), or NULL */
    eb_step_desc *descs; /* describe mode: plan only, no data */
} eager_ctx;

/* Labels of an operand counted once. */
static void count_labels(int *refcount, const eb_view *v, int delta)
{
    int u[EB_MAX_RANK];
    int n = eb_unique_labels(v->ids, v->rank, u);
    for (int k = 0; k < n; k++)
        refcount[u[k]] += delta;
}

/* Plan, fetch buffers and execute one contraction; *res gets the result. */
static eb_status do_step(eager_ctx *c, int s, const operand *a,
                         const operand *b, const int *keep, int nkeep,
                         int fixed, operand *res, eb_exec_counters *cnt,
                         eb_error *err)
{
    eb_plan plan;
    eb_status st =
        b && fixed ? eb_contract_plan_peel(&a->v, &b->v, keep, nkeep,
                                           c->inst->label_size, c->inst->dt,
                                           &plan, err)
                   : eb_contract_plan(&a->v, b ? &b->v : NULL, keep, nkeep,
                                      fixed, c->inst->label_size,
                                      c->inst->dt, &plan, err);
    if (st)
        return st;
    if (c->descs) {
        eb_step_desc *d = &c->descs[s];
        d->plan = plan;
        d->fused_at = -1;
        d->fuse_pf = 0;
        d->unit = 0;
        d->a_rank = a->v.rank;
        memcpy(d->a_ids, a->v.ids, (size_t)a->v.rank * sizeof(int));
        d->b_rank = b ? b->v.rank : -1;
        if (b)
            memcpy(d->b_ids, b->v.ids, (size_t)b->v.rank * sizeof(int));
        eb_view_compact(&res->v, NULL, plan.out_ids, plan.out_rank,
                        c->inst->label_size);
        res->buf = NULL;
        return EB_OK;
    }
    int64_t esz = (int64_t)eb_dtype_size(plan.dt);
    void *p0 = plan.prep[0] ? eb_pool_get(c->pool, plan.prep_elems[0] * esz)
                            : NULL;
    void *p1 = plan.prep[1] ? eb_pool_get(c->pool, plan.prep_elems[1] * esz)
                            : NULL;
    void *tmp = plan.tmp_elems ? eb_pool_get(c->pool, plan.tmp_elems * esz)
                               : NULL;
    void *out = eb_pool_get(c->pool, plan.out_elems * esz);
    if ((plan.prep[0] && !p0) || (plan.prep[1] && !p1) || (plan.tmp_elems && !tmp) ||
        !out) {
        eb_pool_put(c->pool, p0);
        eb_pool_put(c->pool, p1);
        eb_pool_put(c->pool, tmp);
        eb_pool_put(c->pool, out);
        return eb_error_set(err, EB_ERR_NOMEM,
                            "out of memory for a step output of %lld elements",
                            (long long)plan.out_elems);
    }
    eb_contract_exec(&plan, a->v.data, b ? b->v.data : NULL, p0, p1, tmp, out,
                     c->team, cnt);
    eb_pool_put(c->pool, p0);
    eb_pool_put(c->pool, p1);
    eb_pool_put(c->pool, tmp);
    eb_view_compact(&res->v, out, plan.out_ids, plan.out_rank,
                    c->inst->label_size);
    res->buf = out;
    return EB_OK;
}

static eb_status eager_run(void *vctx, const void **out,
                           eb_exec_counters *cnt, eb_error *err)
{
    eager_ctx *c = vctx;
    const eb_instance *inst = c->inst;
    int n = inst->num_tensors;
    memcpy(c->refcount, c->refcount0, (size_t)inst->num_labels * sizeof(int));
    for (int k = 0; k < n; k++) {
        c->live[k].v = c->inputs[k];
        c->live[k].buf = NULL;
    }
    operand res;
    if (c->path->num_steps == 0) {
        int64_t t0 = c->step_ns ? eb_now_ns() : 0;
        eb_status st = do_step(c, 0, &c->live[0], NULL, inst->output.ids,
                               inst->output.rank, 1, &res, cnt, err);
        if (c->step_ns)
            c->step_ns[0] += eb_now_ns() - t0;
        if (st)
            return st;
        c->result = res.buf;
        *out = res.buf;
        return EB_OK;
    }
    for (int s = 0; s < c->path->num_steps; s++) {
        /* Slots, not positions: no O(n) shift of the live list per step. */
        operand a = c->live[c->slots[s].i], b = c->live[c->slots[s].j];
        int last = s == c->path->num_steps - 1;
        int keep[2 * EB_MAX_RANK];
        int nkeep, summed;
        if (last) {
            nkeep = inst->output.rank;
            memcpy(keep, inst->output.ids, (size_t)nkeep * sizeof(int));
        } else {
            nkeep = eb_keep_labels(a.v.ids, a.v.rank, b.v.ids, b.v.rank,
                                   c->refcount, keep, &summed);
        }
        /* The step's subscripts are "a,b->kept" with kept in the canonical
         * order of the rule, as an eager framework's pairwise einsum call
         * would have them: the output order is not the engine's choice. */
        int64_t t0 = c->step_ns ? eb_now_ns() : 0;
        eb_status st = do_step(c, s, &a, &b, keep, nkeep, 1, &res, cnt, err);
        if (c->step_ns)
            c->step_ns[s] += eb_now_ns() - t0;
        if (st)
            return st;
        eb_pool_put(c->pool, a.buf);
        eb_pool_put(c->pool, b.buf);
        count_labels(c->refcount, &a.v, -1);
        count_labels(c->refcount, &b.v, -1);
        count_labels(c->refcount, &res.v, +1);
        c->live[n + s] = res;
    }
    c->result = c->live[n + c->path->num_steps - 1].buf;
    *out = c->result;
    return EB_OK;
}

static void eager_time_steps(void *vctx, int64_t *ns)
{
    eager_ctx *c = vctx;
    c->step_ns = ns;
}

static void eager_release(void *vctx)
{
    eager_ctx *c = vctx;
    eb_pool_put(c->pool, c->result);
    c->result = NULL;
}

static void eager_destroy(void *vctx)
{
    eager_ctx *c = vctx;
    if (!c)
        return;
    free(c->live);
    free(c->slots);
    free(c->refcount);
    free(c->refcount0);
    free(c);
}

eb_status eb_eager_create(const eb_instance *inst, const eb_path *path,
                          const eb_view *inputs, eb_pool *pool,
                          struct eb_team *team, eb_executor *ex,
                          eb_error *err)
{
    eb_status st = eb_path_validate(path, inst->num_tensors, inst->file,
                                    path->strategy, err);
    if (st)
        return st;
    eager_ctx *c = calloc(1, sizeof *c);
    size_t nl = (size_t)(inst->num_labels ? inst->num_labels : 1);
    if (c) {
        c->live = malloc((size_t)(inst->num_tensors + path->num_steps) *
                         sizeof *c->live);
        c->slots = malloc((size_t)(path->num_steps ? path->num_steps : 1) *
                          sizeof *c->slots);
        c->refcount = calloc(nl, sizeof(int));
        c->refcount0 = calloc(nl, sizeof(int));
    }
    if (!c || !c->live || !c->slots || !c->refcount || !c->refcount0 ||
        eb_path_slots(path, inst->num_tensors, c->slots) != 0) {
        eager_destroy(c);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    c->inst = inst;
    c->path = path;
    c->inputs = inputs;
    c->pool = pool;
    c->team = team;
    for (int k = 0; k < inst->num_tensors; k++)
        count_labels(c->refcount0, &inputs[k], +1);
    for (int q = 0; q < inst->output.rank; q++)
        c->refcount0[inst->output.ids[q]]++;
    *ex = (eb_executor){.ctx = c, .mode = "eager", .run = eager_run,
                        .release = eager_release, .destroy = eager_destroy,
                        .time_steps = eager_time_steps,
                        .engine_threads = eb_team_size(team),
                        .lanes_at = -1};
    return EB_OK;
}

eb_status eb_eager_describe(const eb_instance *inst, const eb_path *path,
                            eb_step_desc *descs, eb_error *err)
{
    eb_executor ex;
    eb_view *views = eb_views_without_data(inst);
    if (!views)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    eb_status st = eb_eager_create(inst, path, views, NULL, NULL, &ex, err);
    if (!st) {
        eager_ctx *c = ex.ctx;
        c->descs = descs;
        const void *out;
        eb_exec_counters cnt = {0};
        st = eager_run(c, &out, &cnt, err);
        eager_destroy(c);
    }
    free(views);
    return st;
}
