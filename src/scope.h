/*
 * scope: one execution scope (DESIGN 4.3). A measurement enters it before
 * its first warmup and leaves it after its last sample. It fixes the thread
 * budget, owns the buffer pool, and records the thread counts it observed.
 *
 * OpenBLAS sizes its pool when the library loads; the command layer makes
 * the process's OPENBLAS_NUM_THREADS match the budget before that (by
 * re-executing itself), and the scope checks what OpenBLAS reports.
 *
 * The engine's own threads (a team of `threads`, caller included) start
 * when the scope is entered and stop when it is left.
 *
 * Ownership: the scope owns its pool and team; eb_scope_leave frees
 * everything.
 */
#ifndef EB_SCOPE_H
#define EB_SCOPE_H

#include "pool.h"
#include "status.h"

typedef struct eb_scope eb_scope;

eb_status eb_scope_enter(int threads, eb_scope **out, eb_error *err);
void eb_scope_leave(eb_scope *scope); /* NULL is fine */

eb_pool *eb_scope_pool(eb_scope *scope);
struct eb_team *eb_scope_team(eb_scope *scope); /* the engine's threads */
int eb_scope_threads(const eb_scope *scope);       /* requested budget */
int eb_scope_blas_threads(const eb_scope *scope);  /* observed in OpenBLAS */

#endif
