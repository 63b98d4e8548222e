/* scope: thread budget and buffer pool of one measurement. */
#include "scope.h"

#include <stdlib.h>

#include "blas.h"
#include "team.h"

struct eb_scope {
    int threads;
    int blas_threads;
    eb_pool *pool;
    eb_team *team;
};

eb_status eb_scope_enter(int threads, eb_scope **out, eb_error *err)
{
    *out = NULL;
    eb_scope *s = calloc(1, sizeof *s);
    if (s)
        s->pool = eb_pool_create();
    if (!s || !s->pool) {
        free(s);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    s->threads = threads;
    eb_status st = eb_team_create(threads, &s->team, err);
    if (st) {
        eb_pool_destroy(s->pool);
        free(s);
        return st;
    }
    /* Already right after the re-exec; this call only corrects a pool that
     * could not be sized at load time (e.g. under Valgrind). */
    if (eb_blas_threads() != threads)
        eb_blas_set_threads(threads);
    s->blas_threads = eb_blas_threads();
    *out = s;
    return EB_OK;
}

void eb_scope_leave(eb_scope *s)
{
    if (!s)
        return;
    eb_team_destroy(s->team);
    eb_pool_destroy(s->pool);
    free(s);
}

eb_pool *eb_scope_pool(eb_scope *s) { return s->pool; }
eb_team *eb_scope_team(eb_scope *s) { return s->team; }
int eb_scope_threads(const eb_scope *s) { return s->threads; }
int eb_scope_blas_threads(const eb_scope *s) { return s->blas_threads; }
