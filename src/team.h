/*
 * team: the engine's own threads (DESIGN 4.3: the scope fixes the thread
 * budget for OpenBLAS *and* the engine). A team of n threads is the caller
 * plus n - 1 workers that, between jobs, spin for up to 50 us and then
 * sleep on a condition variable (the caller waits for parts that others
 * still run the same way).
 *
 * eb_team_run_parts runs fn(arg, k, nparts) for every part k in [0,
 * nparts): each part once, on whichever thread claims it first (the caller
 * claims parts too, from the start), so a worker that is asleep or has lost
 * its core to another process delays the job by at most the part it has
 * already claimed, never by a part it has not started. The caller claims
 * parts 0, 1, ... and the workers parts nparts - 1, nparts - 2, ...: the
 * same slices of memory stay on the same cores from run to run. It
 * returns when all parts are done. eb_team_run is eb_team_run_parts with
 * one part per thread. A part may run on any thread; per-part scratch is
 * indexed by the part, never by the thread. Jobs never allocate.
 * BLAS calls inside a job run with OpenBLAS set to one thread first
 * (fuse.c, and contract_exec.c for the GEMMs and GEMVs it splits).
 *
 * Ownership: the scope creates and destroys the team; executors borrow it.
 * A NULL team, or a team of one, runs every job inline.
 */
#ifndef EB_TEAM_H
#define EB_TEAM_H

#include "status.h"

typedef struct eb_team eb_team;

typedef void (*eb_team_fn)(void *arg, int part, int nparts);

eb_status eb_team_create(int nthreads, eb_team **out, eb_error *err);
void eb_team_destroy(eb_team *team); /* NULL is fine */

int eb_team_size(const eb_team *team); /* 1 for NULL */

void eb_team_run(eb_team *team, eb_team_fn fn, void *arg);
void eb_team_run_parts(eb_team *team, int nparts, eb_team_fn fn, void *arg);

/* The same without waking workers that sleep: for jobs shorter than a
 * wake-up (10-120 us on this machine class), which only the workers still
 * spinning from the previous job can help with; the caller runs the parts
 * nobody else takes. */
void eb_team_run_awake(eb_team *team, int nparts, eb_team_fn fn, void *arg);

/* Part `part` of `nparts` of the range [0, n): [*lo, *hi). */
void eb_team_split(long long n, int part, int nparts, long long *lo,
                   long long *hi);

#endif
