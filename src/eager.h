/*
 * eager: execution mode that replays the stored path step by step like an
 * eager framework. Each step derives its binary subscripts "a,b->kept" (the
 * kept-label rule, kept labels in canonical order: a's, then b's new ones),
 * plans its layout and kernel, and takes its buffers from the scope's pool
 * at call time (DESIGN 4.2). The output order is the subscripts', as in a
 * pairwise einsum call; choosing orders across steps is trace mode's job.
 *
 * Ownership: the executor borrows inst, path, the input views, the pool and
 * the team (all must outlive it) and owns only its small workspace.
 */
#ifndef EB_EAGER_H
#define EB_EAGER_H

#include "exec.h"
#include "pool.h"
#include "tensor.h"

eb_status eb_eager_create(const eb_instance *inst, const eb_path *path,
                          const eb_view *inputs, eb_pool *pool,
                          struct eb_team *team, eb_executor *ex,
                          eb_error *err);

/* What eager mode decides at one step, for `plan`. */
typedef struct {
    eb_plan plan;
    int a_rank, b_rank;          /* b_rank -1: single-operand step */
    int a_ids[EB_MAX_RANK], b_ids[EB_MAX_RANK];
    /* Trace fusion: the step whose turn runs this one (-1: not fused),
     * fuse_blocks blocks: one index at a time along fuse_labels[0..
     * fuse_nlab - 2], blocks of fuse_block along label fuse_label. */
    int fused_at, fuse_label, fuse_nlab;
    int fuse_labels[EB_MAX_RANK];
    int64_t fuse_block, fuse_blocks;
    int fuse_pf; /* bit q: operand q (from outside the group) prefetched a
                  * block ahead */
    int unit;    /* trace at two or more threads: the unit (subtree run
                  * beside others, 1 ..) the step belongs to, 0: none */
} eb_step_desc;

/*
 * Walk the path as a run would, planning every step without data. descs has
 * max(num_steps, 1) entries. The plans are exactly those a run makes.
 */
eb_status eb_eager_describe(const eb_instance *inst, const eb_path *path,
                            eb_step_desc *descs, eb_error *err);

#endif
