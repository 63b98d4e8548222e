/*
 * trace: execution mode that compiles the whole path once, before the
 * warmups, into a program (DESIGN 4.2), in the manner of HPTT's plans:
 *
 *  - layout planning: walking the path backwards, every intermediate gets
 *    the label order its consumer wants, so that the consumer uses it in
 *    place: [batch, free, contracted] for the left operand and
 *    [batch, contracted, free] for the right one, with batch and free labels
 *    in the order of the consumer's own output and contracted labels in the
 *    order of the consumer's other operand when that is an input (whose
 *    layout is fixed). The final output is in the instance's output order.
 *    Each step is then planned once with that output order fixed; the
 *    planner adds a permutation only where no order satisfies both sides.
 *  - a static memory plan: every buffer (step outputs, scratch) has a
 *    lifetime in steps; offsets in one arena are assigned largest first, at
 *    the lowest offset that overlaps no buffer alive at the same time (a
 *    greedy best-fit over lifetimes). The arena is allocated and touched at
 *    compile time; samples never call the allocator.
 *  - fusion: a step whose operands are large intermediates may run with
 *    their producers block by block along a batch label (fuse.h); such a
 *    group runs at its consumer's turn and its blocks live in the arena.
 *
 * Sampled runs only execute the program: kernel calls with precomputed
 * pointers. Compile time is reported as compile_ms.
 *
 * Ownership: the program borrows inst, path, the input views and the team;
 * it owns its steps and arena.
 */
#ifndef EB_TRACE_H
#define EB_TRACE_H

#include "eager.h"
#include "exec.h"
#include "fuse.h"

/* Compile. fuse: when to run steps as fused groups (see fuse.h); NULL
 * runs every step on its own. */
eb_status eb_trace_create(const eb_instance *inst, const eb_path *path,
                          const eb_view *inputs, struct eb_team *team,
                          const eb_fuse_opts *fuse, eb_executor *ex,
                          eb_error *err);

/* Compile without data and describe the program's steps (for `plan`);
 * descs has max(num_steps, 1) entries. *arena_bytes gets the arena size.
 * The program is the one a run at one thread makes. */
eb_status eb_trace_describe(const eb_instance *inst, const eb_path *path,
                            const eb_fuse_opts *fuse, eb_step_desc *descs,
                            int64_t *arena_bytes, eb_error *err);

/* How a program uses a team of `threads` (eb_trace_describe_team). */
typedef struct {
    int solo;           /* 1: it runs on the calling thread alone */
    double work;        /* its work (multiply-adds and elements written) */
    double solo_work;   /* below this much work a program runs solo */
    int fork;           /* the first step after its units (-1: none) */
    int nunits;         /* subtrees run side by side (eb_step_desc.unit) */
} eb_trace_team;

/* eb_trace_describe for the program a run at `threads` threads makes (its
 * units in each step's descs[t].unit, its arena, its fused groups). */
eb_status eb_trace_describe_team(const eb_instance *inst,
                                 const eb_path *path,
                                 const eb_fuse_opts *fuse, int threads,
                                 eb_step_desc *descs, int64_t *arena_bytes,
                                 eb_trace_team *team, eb_error *err);

#endif
