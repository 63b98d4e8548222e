/*
 * plan_json: `einsum-bench plan --json FILE`: what a peer needs to execute
 * an instance along its stored paths exactly as the engine plans it,
 * without loading, validating or applying the kept-label rule itself.
 *
 * One JSON object: the instance (name, file, format string, dtype, inputs
 * and output as label strings and shapes) and, per selected strategy, the
 * path (source, digest, recomputed costs) with every pairwise step: its
 * positions in the live list (the path's own [i, j]), the operands' and the
 * result's labels (canonical kept order; the final step has the output's
 * order) and shapes, and its flops. Labels are the instance's own Unicode
 * characters.
 */
#ifndef EB_PLAN_JSON_H
#define EB_PLAN_JSON_H

#include "instance.h"
#include "jsonw.h"

/* Is name one of the comma-separated names in list, or list "all"? */
int eb_strategy_selected(const char *list, const char *name);

/* Write the plan of inst's paths ps (strategies "all" or a comma list)
 * into w as one object. */
eb_status eb_plan_json(const eb_instance *inst, const eb_pathset *ps,
                       const char *strategies, eb_jw *w, eb_error *err);

#endif
