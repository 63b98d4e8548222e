/* verify: references (naive or another order) and comparisons. */
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "operands.h"
#include "pathfind.h"
#include "refeinsum.h"
#include "schedule.h"
#include "scope.h"

/* About two seconds of the naive loop on this machine class. */
#define NAIVE_LIMIT 3e9
/* The stepwise reference (refeinsum.h: gather, blocked multiply, scatter,
 * no engine code): flops of the path (opt_einsum count) up to this, about
 * a minute at its 2..4 GFLOP/s on this machine class, enough for every
 * public instance. $EB_CHECK_STEPWISE_MAX_FLOPS overrides it (tests use a
 * smaller cap; 0 turns the stepwise reference off). */
#define STEPWISE_LIMIT 2e11
#define STEPWISE_ENV "EB_CHECK_STEPWISE_MAX_FLOPS"

typedef struct {
    eb_path path;       /* the alternative order (owned copy) */
    char name[64];
    void *out;          /* its result (reference dtype), NULL until computed */
} alt_ref;

/* Results and references are compared in the reference dtype (refeinsum.h:
 * float64 or complex128); a float32 or complex64 run's inputs and results
 * are widened to it exactly. */
struct eb_checker {
    const eb_instance *inst;
    eb_instance ref_inst; /* *inst with dt the reference dtype (borrows) */
    const eb_pathset *ps;
    int threads;
    int fuse;
    eb_operands *ops;   /* in the run's dtype */
    void **wide;        /* ops widened, or NULL when already the ref dtype */
    eb_view *ref_views; /* the reference's inputs: ops or wide */
    int64_t out_elems;
    void *naive;        /* naive reference, NULL until computed */
    void *stepwise;     /* naive pairwise reference, NULL until computed */
    char stepwise_name[96];
    int stepwise_tried;
    double max_bytes;   /* the stepwise reference's memory cap */
    double max_flops;   /* and its flops cap */
    alt_ref alts[4];
    int nalts;
    int alts_ready;
};

double eb_check_naive_limit(void) { return NAIVE_LIMIT; }

double eb_check_tol(eb_dtype dt)
{
    return eb_dtype_real(dt) == EB_F32 ? EB_CHECK_TOL_F32 : EB_CHECK_TOL;
}

/* n elements of dt as the reference dtype in a new buffer (float parts
 * to double: exact), or NULL when out of memory. */
static void *widen(eb_dtype dt, const void *src, int64_t n)
{
    int64_t parts = eb_dtype_is_complex(dt) ? 2 * n : n;
    double *out = malloc((size_t)(parts ? parts : 1) * sizeof *out);
    if (!out)
        return NULL;
    if (eb_dtype_real(dt) == EB_F64) {
        memcpy(out, src, (size_t)parts * sizeof *out);
    } else {
        const float *f = src;
        for (int64_t i = 0; i < parts; i++)
            out[i] = f[i];
    }
    return out;
}

/* The reference's inputs: the run's own, or copies widened to the
 * reference dtype. 0, or -1 when out of memory. */
static int reference_inputs(eb_checker *c)
{
    const eb_instance *inst = c->inst;
    if (c->ref_inst.dt == inst->dt) {
        c->ref_views = c->ops->views;
        return 0;
    }
    int n = inst->num_tensors;
    c->wide = calloc((size_t)n, sizeof *c->wide);
    c->ref_views = calloc((size_t)n, sizeof *c->ref_views);
    if (!c->wide || !c->ref_views)
        return -1;
    for (int k = 0; k < n; k++) {
        c->wide[k] = widen(inst->dt, c->ops->views[k].data,
                           eb_instance_operand_elems(inst, k));
        if (!c->wide[k])
            return -1;
        eb_view_compact(&c->ref_views[k], c->wide[k], inst->inputs[k].ids,
                        inst->inputs[k].rank, inst->label_size);
    }
    return 0;
}

eb_status eb_check_stepwise_limit(double *limit, eb_error *err)
{
    *limit = STEPWISE_LIMIT;
    const char *v = getenv(STEPWISE_ENV);
    if (!v)
        return EB_OK;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0) || isinf(x))
        return eb_error_set(err, EB_ERR_USAGE, "%s: '%s' is not a number of "
                            "flops >= 0", STEPWISE_ENV, v);
    *limit = x;
    return EB_OK;
}

eb_status eb_checker_create(const eb_instance *inst, const eb_pathset *ps,
                            uint64_t seed, const eb_fill *inputs,
                            int threads, int fuse, eb_checker **out,
                            eb_error *err)
{
    *out = NULL;
    eb_checker *c = calloc(1, sizeof *c);
    if (!c)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    c->inst = inst;
    c->ref_inst = *inst;
    c->ref_inst.dt = eb_ref_dtype(inst->dt);
    c->ps = ps;
    c->threads = threads;
    c->fuse = fuse;
    c->max_bytes = INFINITY;
    eb_status st = eb_check_stepwise_limit(&c->max_flops, err);
    if (st) {
        free(c);
        return st;
    }
    eb_fill fill = inputs ? *inputs
                          : (eb_fill){.kind = EB_FILL_RANDOM, .seed = seed};
    st = eb_operands_create(inst, &fill, &c->ops, err);
    if (st) {
        free(c);
        return st;
    }
    if (reference_inputs(c)) {
        eb_checker_destroy(c);
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory for the "
                            "check's widened inputs", inst->file);
    }
    c->out_elems = 1;
    for (int a = 0; a < inst->output.rank; a++)
        c->out_elems *= inst->label_size[inst->output.ids[a]];
    *out = c;
    return EB_OK;
}

void eb_checker_set_max_memory(eb_checker *c, double bytes)
{
    c->max_bytes = bytes;
}

void eb_checker_destroy(eb_checker *c)
{
    if (!c)
        return;
    for (int k = 0; c->wide && k < c->inst->num_tensors; k++)
        free(c->wide[k]);
    if (c->ops && c->ref_views != c->ops->views)
        free(c->ref_views);
    free(c->wide);
    eb_operands_destroy(c->ops);
    free(c->naive);
    free(c->stepwise);
    for (int k = 0; k < c->nalts; k++) {
        eb_path_free(&c->alts[k].path);
        free(c->alts[k].out);
    }
    free(c);
}

/* Execute `path` in `mode` once; the output widened to the reference
 * dtype into a new buffer. */
static eb_status execute_once(eb_checker *c, const eb_path *path, eb_mode mode,
                              void **result, eb_error *err)
{
    *result = NULL;
    eb_scope *scope;
    eb_status st = eb_scope_enter(c->threads, &scope, err);
    if (st)
        goto fail;
    eb_executor ex;
    eb_fuse_opts fuse = eb_fuse_default_opts();
    st = eb_exec_create(mode, c->inst, path, c->ops->views,
                        eb_scope_pool(scope), eb_scope_team(scope),
                        c->fuse ? &fuse : NULL, &ex, err);
    if (!st) {
        const void *out;
        eb_exec_counters cnt = {0};
        st = ex.run(ex.ctx, &out, &cnt, err);
        if (!st && !(*result = widen(c->inst->dt, out, c->out_elems)))
            st = eb_error_set(err, EB_ERR_NOMEM, "out of memory");
        ex.release(ex.ctx);
        eb_exec_destroy(&ex);
    }
    eb_scope_leave(scope);
    if (!st)
        return EB_OK;
fail:
    free(*result);
    *result = NULL;
    return st;
}

static int have_alt(const eb_checker *c, const eb_path *p)
{
    for (int k = 0; k < c->nalts; k++)
        if (eb_path_equal(&c->alts[k].path, p))
            return 1;
    return 0;
}

static int add_alt(eb_checker *c, const eb_path *p, const char *name)
{
    if (c->nalts == 4 || have_alt(c, p))
        return 0;
    alt_ref *a = &c->alts[c->nalts];
    memset(a, 0, sizeof *a);
    a->path.num_steps = p->num_steps;
    a->path.strategy = malloc(strlen(name) + 1);
    a->path.steps = malloc((size_t)(p->num_steps ? p->num_steps : 1) *
                           sizeof *p->steps);
    if (!a->path.strategy || !a->path.steps) {
        eb_path_free(&a->path);
        return -1;
    }
    strcpy(a->path.strategy, name);
    memcpy(a->path.steps, p->steps, (size_t)p->num_steps * sizeof *p->steps);
    snprintf(a->name, sizeof a->name, "%s", name);
    c->nalts++;
    return 0;
}

/* Candidate alternative orders: every stored strategy, then the path
 * finder's flops and size paths. */
static eb_status collect_alts(eb_checker *c, eb_error *err)
{
    c->alts_ready = 1;
    for (int k = 0; c->ps && k < c->ps->count; k++) {
        char name[64];
        snprintf(name, sizeof name, "path %s", c->ps->paths[k].strategy);
        if (add_alt(c, &c->ps->paths[k], name))
            return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    for (int m = 0; m < 2; m++) {
        eb_pathfind_opts o;
        eb_pathfind_opts_default(&o);
        o.minimize = m ? EB_MINIMIZE_SIZE : EB_MINIMIZE_FLOPS;
        eb_path p = {0};
        eb_status st = eb_pathfind(c->inst, &o, "derived", &p, err);
        if (st)
            return st;
        int bad = add_alt(c, &p, m ? "path derived-size" : "path derived-flops");
        eb_path_free(&p);
        if (bad)
            return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    return EB_OK;
}

/* The naive loop run pairwise along the first stored path (refeinsum.h):
 * no engine code at all, affordable far beyond the whole-einsum loop. */
static eb_status stepwise_reference(eb_checker *c, eb_error *err)
{
    c->stepwise_tried = 1;
    if (!c->ps || c->ps->count == 0)
        return EB_OK;
    const eb_path *p = &c->ps->paths[0];
    eb_schedule *sched;
    eb_status st = eb_schedule_build(c->inst, p, &sched, err);
    if (st)
        return st;
    /* Its buffers are those budget.h counts for the path (gathered
     * operands as the compact copies, the multiply's result as the
     * scratch), plus the result it is compared with. */
    size_t esize = eb_dtype_size(c->ref_inst.dt);
    double bytes = eb_budget_peak(&c->ref_inst, sched) +
                   (double)c->out_elems * (double)esize;
    if (eb_ref_pairwise_cost(c->inst, sched) <= c->max_flops &&
        bytes <= c->max_bytes) {
        c->stepwise = malloc((size_t)c->out_elems * esize);
        st = c->stepwise ? eb_ref_pairwise(&c->ref_inst, sched, c->ref_views,
                                           c->stepwise, err)
                         : eb_error_set(err, EB_ERR_NOMEM, "out of memory");
        if (st) {
            free(c->stepwise);
            c->stepwise = NULL;
        }
        snprintf(c->stepwise_name, sizeof c->stepwise_name,
                 "naive stepwise (path %s)", p->strategy);
    }
    eb_schedule_destroy(sched);
    return st;
}

static eb_status reference_for(eb_checker *c, const eb_path *path,
                               const void **ref, const char **name,
                               eb_error *err)
{
    *ref = NULL;
    if (eb_ref_cost(c->inst) <= NAIVE_LIMIT) {
        if (!c->naive) {
            c->naive = malloc((size_t)c->out_elems *
                              eb_dtype_size(c->ref_inst.dt));
            if (!c->naive)
                return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
            eb_status st = eb_ref_einsum(&c->ref_inst, c->ref_views, c->naive,
                                         err);
            if (st)
                return st;
        }
        *ref = c->naive;
        *name = "naive";
        return EB_OK;
    }
    if (!c->stepwise_tried) {
        eb_status st = stepwise_reference(c, err);
        if (st)
            return st;
    }
    if (c->stepwise) {
        *ref = c->stepwise;
        *name = c->stepwise_name;
        return EB_OK;
    }
    if (!c->alts_ready) {
        eb_status st = collect_alts(c, err);
        if (st)
            return st;
    }
    for (int k = 0; k < c->nalts; k++) {
        alt_ref *a = &c->alts[k];
        if (eb_path_equal(&a->path, path))
            continue;
        if (!a->out) {
            eb_status st = execute_once(c, &a->path, EB_MODE_EAGER, &a->out, err);
            if (st)
                return st;
        }
        *ref = a->out;
        *name = a->name;
        return EB_OK;
    }
    return EB_OK;
}

eb_status eb_checker_verify(eb_checker *c, const eb_path *path, eb_mode mode,
                            eb_check_outcome *out, eb_error *err)
{
    out->max_rel_err = NAN;
    out->status = "unverified";
    snprintf(out->reference, sizeof out->reference, "none");
    void *result;
    eb_status st = execute_once(c, path, mode, &result, err);
    if (st)
        return st;
    const void *ref;
    const char *name = "none";
    st = reference_for(c, path, &ref, &name, err);
    if (!st && ref) {
        out->max_rel_err = eb_ref_rel_err_dt(c->ref_inst.dt, result, ref,
                                             c->out_elems);
        out->status = out->max_rel_err <= eb_check_tol(c->inst->dt)
                          ? "passed" : "failed";
        snprintf(out->reference, sizeof out->reference, "%s", name);
    }
    free(result);
    return st;
}
