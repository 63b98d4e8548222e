/*
 * refeinsum: the naive reference einsum, used to verify the engine.
 *
 * It loops over every combination of label values and accumulates the
 * product of all operands into the output: obviously correct, and slow.
 * eb_ref_cost says how many multiply-adds that takes, so callers can decide
 * whether it is affordable.
 */
#ifndef EB_REFEINSUM_H
#define EB_REFEINSUM_H

#include "schedule.h"
#include "tensor.h"

/* Multiply-adds the naive loop needs (iterations x operands), as a double. */
double eb_ref_cost(const eb_instance *inst);

/* out (compact in output order) = einsum of the input views. */
eb_status eb_ref_einsum(const eb_instance *inst, const eb_view *inputs,
                        double *out, eb_error *err);

/*
 * The naive loop applied pairwise along a path's schedule: each step is
 * its own odometer over the labels of its two operands (inputs as the
 * views give them, intermediates compact in the schedule's canonical
 * order). No code is shared with the engine's kernels, so it is an
 * independent reference for instances too large for eb_ref_einsum.
 */
double eb_ref_pairwise_cost(const eb_instance *inst, const eb_schedule *sched);
eb_status eb_ref_pairwise(const eb_instance *inst, const eb_schedule *sched,
                          const eb_view *inputs, double *out, eb_error *err);

/* max |x - ref| / max |ref| (max |x - ref| when ref is all zeros); NaN in
 * either gives +inf. */
double eb_ref_rel_err(const double *x, const double *ref, int64_t n);

#endif
