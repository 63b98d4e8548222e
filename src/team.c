/* team: a fixed pool of worker threads driven by a generation counter. */
#include "team.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    struct eb_team *team;
    int part;
    pthread_t tid;
} worker;

struct eb_team {
    int n;
    worker *w;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned long generation;  /* bumped once per job */
    int pending;               /* worker parts not finished */
    int quit;
    eb_team_fn fn;
    void *arg;
};

static void *worker_main(void *p)
{
    worker *me = p;
    eb_team *t = me->team;
    unsigned long seen = 0;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->quit && t->generation == seen)
            pthread_cond_wait(&t->go, &t->mu);
        if (t->quit)
            break;
        seen = t->generation;
        eb_team_fn fn = t->fn;
        void *arg = t->arg;
        pthread_mutex_unlock(&t->mu);
        fn(arg, me->part, t->n);
        pthread_mutex_lock(&t->mu);
        if (--t->pending == 0)
            pthread_cond_signal(&t->done);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

eb_status eb_team_create(int nthreads, eb_team **out, eb_error *err)
{
    *out = NULL;
    eb_team *t = calloc(1, sizeof *t);
    if (!t)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    t->n = nthreads < 1 ? 1 : nthreads;
    t->w = calloc((size_t)t->n, sizeof *t->w);
    if (!t->w) {
        free(t);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->go, NULL);
    pthread_cond_init(&t->done, NULL);
    for (int k = 1; k < t->n; k++) {
        t->w[k] = (worker){t, k, 0};
        if (pthread_create(&t->w[k].tid, NULL, worker_main, &t->w[k]) != 0) {
            t->n = k; /* destroy joins the ones started */
            eb_team_destroy(t);
            return eb_error_set(err, EB_ERR_NOMEM,
                                "cannot start engine thread %d", k);
        }
    }
    *out = t;
    return EB_OK;
}

void eb_team_destroy(eb_team *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->quit = 1;
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    for (int k = 1; k < t->n; k++)
        pthread_join(t->w[k].tid, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->go);
    pthread_cond_destroy(&t->done);
    free(t->w);
    free(t);
}

int eb_team_size(const eb_team *t) { return t ? t->n : 1; }

void eb_team_run(eb_team *t, eb_team_fn fn, void *arg)
{
    if (!t || t->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->fn = fn;
    t->arg = arg;
    t->pending = t->n - 1;
    t->generation++;
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    fn(arg, 0, t->n);
    pthread_mutex_lock(&t->mu);
    while (t->pending > 0)
        pthread_cond_wait(&t->done, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

void eb_team_split(long long n, int part, int nparts, long long *lo,
                   long long *hi)
{
    long long q = n / nparts, r = n % nparts;
    *lo = part * q + (part < r ? part : r);
    *hi = *lo + q + (part < r ? 1 : 0);
}
