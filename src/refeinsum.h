/*
 * refeinsum: the naive reference einsum, used to verify the engine.
 *
 * It loops over every combination of label values and accumulates the
 * product of all operands into the output: obviously correct, and slow.
 * eb_ref_cost says how many multiply-adds that takes, so callers can decide
 * whether it is affordable.
 *
 * The references compute in float64 or complex128 (inst->dt must be one of
 * them; the views' data and out hold that type): a float32 or complex64
 * run is checked against a reference of its inputs widened exactly
 * (eb_ref_dtype), so the reference adds no rounding of its own type.
 */
#ifndef EB_REFEINSUM_H
#define EB_REFEINSUM_H

#include "schedule.h"
#include "tensor.h"

/* Multiply-adds the naive loop needs (iterations x operands), as a double. */
double eb_ref_cost(const eb_instance *inst);

/* The dtype the reference of a run in `run` computes in: complex128 for
 * complex types, float64 for real ones. */
eb_dtype eb_ref_dtype(eb_dtype run);

/* out (compact in output order) = einsum of the input views. */
eb_status eb_ref_einsum(const eb_instance *inst, const eb_view *inputs,
                        void *out, eb_error *err);

/*
 * The path's schedule executed step by step with this file's own loops:
 * each step gathers its two operands (inputs as the views give them,
 * intermediates compact in the schedule's canonical order) into compact
 * [batch][free][contracted] buffers with plain index loops, summing out
 * labels only one operand has; multiplies batch by batch with a blocked
 * i-k-j loop (or dot products when both free sides are narrow); and
 * scatters into the kept-label layout. No code is shared with the engine's
 * kernels, permutations or BLAS, so it is an independent reference for
 * instances too large for eb_ref_einsum (2..4 GFLOP/s here). Its buffers
 * stay within budget.h's bound for the same schedule.
 */
double eb_ref_pairwise_cost(const eb_instance *inst, const eb_schedule *sched);
eb_status eb_ref_pairwise(const eb_instance *inst, const eb_schedule *sched,
                          const eb_view *inputs, void *out, eb_error *err);

/* max |x - ref| / max |ref| (max |x - ref| when ref is all zeros); NaN in
 * either gives +inf. n elements of float64, or with _dt of dt (float64 or
 * complex128; |.| the complex modulus). */
double eb_ref_rel_err(const double *x, const double *ref, int64_t n);
double eb_ref_rel_err_dt(eb_dtype dt, const void *x, const void *ref,
                         int64_t n);

#endif
