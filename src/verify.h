/*
 * verify: verification of the engine's results (the `check` command and
 * `run --check`), outside every timed region and window.
 *
 * Each instance gets its own seeded random inputs. A result is compared
 * against the naive reference einsum when that is affordable; otherwise
 * against the first stored path executed step by step by refeinsum.h's
 * own gather, multiply and scatter loops ("naive stepwise", up to 2e11 path
 * flops and within the memory budget: no engine code, so a fault in a
 * kernel cannot pass by agreeing with itself); beyond that against the same
 * einsum contracted in a different order by the engine: another stored
 * path that differs, or a path the tool derives (the path finder). A result
 * with no independent reference is "unverified", never "passed". The error
 * measure is max |x - ref| / max |ref| (complex: the modulus); it passes
 * at <= eb_check_tol(run dtype). References compute in float64 or
 * complex128 (refeinsum.h): a float32 or complex64 result is compared,
 * widened, with the reference of its own inputs widened.
 *
 * Ownership: the checker borrows inst and the path set; it owns its inputs
 * and cached references.
 */
#ifndef EB_VERIFY_H
#define EB_VERIFY_H

#include <stdint.h>

#include "exec.h"
#include "operands.h"

/* Tolerances by the precision of the run's real type: float64 and
 * complex128 1e-9 (4.5e6 eps, eps = 2^-52 ~ 2.2e-16), float32 and
 * complex64 1e-4 (840 eps, eps = 2^-23 ~ 1.19e-7). docs/checkref.md gives
 * the measured errors they leave room for. */
#define EB_CHECK_TOL 1e-9
#define EB_CHECK_TOL_F32 1e-4

double eb_check_tol(eb_dtype dt);

typedef struct eb_checker eb_checker;

typedef struct {
    double max_rel_err;     /* NaN when unverified */
    char reference[96];     /* "naive", "naive stepwise (path opt_flops)",
                               "path opt_size", "path derived-size" */
    const char *status;     /* "passed", "failed", "unverified" */
} eb_check_outcome;

/* fuse: trace mode fuses steps as a run does (fuse.h defaults), or not.
 * inputs: the operands to check with (--inputs DIR), or NULL for the
 * seeded random ones. */
eb_status eb_checker_create(const eb_instance *inst, const eb_pathset *ps,
                            uint64_t seed, const eb_fill *inputs,
                            int threads, int fuse, eb_checker **out,
                            eb_error *err);
void eb_checker_destroy(eb_checker *c);

/* The stepwise reference is skipped (another order is used) when its
 * peak bytes (budget.h's bound for the first stored path, plus the result
 * it is compared with) exceed `bytes`; default unlimited. */
void eb_checker_set_max_memory(eb_checker *c, double bytes);

/* Run (path, mode) once on the checker's inputs and compare. A failed
 * comparison is not an error status: see out->status. */
eb_status eb_checker_verify(eb_checker *c, const eb_path *path, eb_mode mode,
                            eb_check_outcome *out, eb_error *err);

/* Largest naive-reference cost (multiply-adds) the checker will pay. */
double eb_check_naive_limit(void);
/* The stepwise reference's cap in path flops: 2e11, or
 * $EB_CHECK_STEPWISE_MAX_FLOPS (an error if that is not a number >= 0). */
eb_status eb_check_stepwise_limit(double *limit, eb_error *err);

#endif
