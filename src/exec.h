/*
 * exec: the one interface every execution mode implements, so that the
 * measurement loop (bench) does not know which mode it drives.
 *
 * Life cycle, all inside one execution scope:
 *   create (eager: workspace; trace: compile)  -- before warmups
 *   run + release, once per warmup or sample   -- the timed region
 *   destroy                                     -- after the last sample
 * run() leaves the final output readable through *out until the next run,
 * even after release().
 */
#ifndef EB_EXEC_H
#define EB_EXEC_H

#include "contract.h"
#include "fuse.h"
#include "pool.h"
#include "tensor.h"

typedef enum { EB_MODE_EAGER, EB_MODE_TRACE, EB_MODE_COUNT } eb_mode;

const char *eb_mode_name(eb_mode m);

typedef struct eb_executor {
    void *ctx;
    const char *mode;   /* "eager" or "trace" */
    /* *out: the final output, elements of the instance's dtype (inst->dt) */
    eb_status (*run)(void *ctx, const void **out, eb_exec_counters *cnt,
                     eb_error *err);
    void (*release)(void *ctx);
    void (*destroy)(void *ctx);
    /* Step clock, for `plan --time` only (never inside a measurement):
     * while ns is non-NULL, each run adds the nanoseconds of step s to
     * ns[s] (a fused group counts at its consumer's step). */
    void (*time_steps)(void *ctx, int64_t *ns);
    double compile_ms;  /* time spent in create, 0 for eager */
    int64_t static_bytes; /* memory the executor planned ahead (trace arena) */
    int fused_groups;   /* trace: groups of steps run block by block */
    int engine_threads; /* threads a run uses: the team's, or 1 for a
                           trace program too small to split (trace.c) */
    int lanes_at;       /* trace: the first step that reads a unit run
                           as a concurrent lane (lanes.h), -1 without;
                           eager: -1 */
} eb_executor;

/* Create the executor of a mode for one instance, path and set of inputs
 * (views of elements of inst->dt, the dtype the engine runs in),
 * drawing memory from pool and engine threads from team (all borrowed; they
 * must outlive it; team may be NULL). Trace mode compiles here, fusing
 * steps as fuse says (NULL: no fusion; eager ignores it). */
eb_status eb_exec_create(eb_mode mode, const eb_instance *inst,
                         const eb_path *path, const eb_view *inputs,
                         eb_pool *pool, struct eb_team *team,
                         const eb_fuse_opts *fuse, eb_executor *ex,
                         eb_error *err);

/* Destroy an executor made by eb_exec_create (safe on a zeroed one). */
void eb_exec_destroy(eb_executor *ex);

#endif
