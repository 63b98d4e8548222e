/*
 * pathfind: a contraction path finder behind `einsum-bench path` (issue 4).
 *
 * The search has three parts, all deterministic (fixed seeds, no clocks):
 *  1. Greedy, in the spirit of opt_einsum's greedy: repeatedly contract the
 *     live pair with the best score, where candidate pairs share a label that
 *     is not in the output (so a batch hyperedge in the output does not make
 *     every operand a candidate of every other) and the score is
 *     size(result) - costmod * (size(a) + size(b)). Operands left without a
 *     candidate (disconnected, or linked only through output labels) are
 *     then joined smallest first.
 *  2. Randomized greedy trials: costmod and a Boltzmann (Gumbel-noise)
 *     temperature are drawn per trial from a seeded generator; the first
 *     trial is the plain deterministic greedy (costmod 1). Each trial's tree
 *     is polished by a cheap subtree reconfiguration (5 operands), since a
 *     raw greedy cost predicts the polished cost poorly.
 *  3. Subtree reconfiguration of the best `keep` trees: every internal node
 *     of the contraction tree is grown into a subtree of up to `subtree`
 *     operands whose contraction order is re-optimized exactly by dynamic
 *     programming over subsets, until passes that grow subtrees by flops and
 *     by size both improve nothing. Instances of up to `subtree` operands
 *     are thus solved exactly.
 * Trees are judged by total flops (then largest intermediate) for
 * EB_MINIMIZE_FLOPS, by largest intermediate (then flops) for
 * EB_MINIMIZE_SIZE, with the cost convention of DESIGN 3.2. The returned
 * costs are recomputed with eb_schedule_build.
 *
 * Ownership: eb_pathfind fills a caller-provided eb_path whose strategy and
 * steps the caller frees with eb_path_free.
 */
#ifndef EB_PATHFIND_H
#define EB_PATHFIND_H

#include <stdint.h>

#include "instance.h"
#include "status.h"

typedef enum { EB_MINIMIZE_FLOPS = 0, EB_MINIMIZE_SIZE } eb_minimize;

enum { EB_PATHFIND_MAX_SUBTREE = 10 };

typedef struct {
    eb_minimize minimize;
    int trials;       /* greedy trials; 0: by operand count (256 up to
                       * 128 operands, 64 up to 256, 16 up to 1024, else 4) */
    int keep;         /* best greedy trees to reconfigure; 0: default (4) */
    int subtree;      /* operands per reconfigured subtree, 0: default (8),
                       * 2 disables reconfiguration; at most
                       * EB_PATHFIND_MAX_SUBTREE */
    uint64_t seed;    /* 0: the built-in fixed seed */
} eb_pathfind_opts;

/* The defaults: minimize flops, automatic trials, keep 4, subtree 8. */
void eb_pathfind_opts_default(eb_pathfind_opts *opts);

/* Parse "flops" or "size"; 0 on success, -1 otherwise. */
int eb_minimize_parse(const char *s, eb_minimize *out);
const char *eb_minimize_str(eb_minimize m);

/*
 * Find a linear path (DESIGN 3.2) for inst. On success *out holds a copy of
 * `strategy`, num_tensors - 1 steps (each pair sorted i < j), and
 * log10_flops and log2_size recomputed by eb_schedule_build.
 */
eb_status eb_pathfind(const eb_instance *inst, const eb_pathfind_opts *opts,
                      const char *strategy, eb_path *out, eb_error *err);

#endif
