/* team: a fixed pool of worker threads driven by a generation counter. */
#include "team.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "clock.h"

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
    /* A job is published by storing fn and arg, then bumping generation
     * (release); workers that see the new generation (acquire) see them. */
    _Atomic unsigned long generation;
    _Atomic int pending;       /* worker parts not finished */
    _Atomic int quit;
    eb_team_fn fn;
    void *arg;
};

/* How long a thread waits by spinning before it sleeps on a condition
 * variable. Waking a sleeping thread costs about 100 us on this machine
 * class (a futex wake, then the hypervisor wakes the idle vCPU): more than
 * many of the engine's split steps take. Jobs of one run come in bursts
 * (the parts of a step, the steps between two BLAS calls), so a short spin
 * catches the next job; past it the thread sleeps and leaves the core to
 * OpenBLAS. */
#define SPIN_NS 50000

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* One pause of a spin bounded by SPIN_NS: call with i = 0, 1, 2, ... and
 * *t0 = 0 at the start; returns 0 once the spin has lasted SPIN_NS (the
 * clock is read every 64 pauses). */
static int spin_on(unsigned i, int64_t *t0)
{
    cpu_relax();
    if ((i & 63) != 63)
        return 1;
    int64_t t = eb_now_ns();
    if (!*t0)
        *t0 = t;
    return t - *t0 <= SPIN_NS;
}

/* Spin until *v != old (or quit) for at most SPIN_NS; 1 if it changed. */
static int spin_while_equal(const _Atomic unsigned long *v, unsigned long old,
                            const _Atomic int *quit)
{
    int64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        if (atomic_load_explicit(v, memory_order_acquire) != old ||
            atomic_load_explicit(quit, memory_order_relaxed))
            return 1;
        if (!spin_on(i, &t0))
            return 0;
    }
}

static void *worker_main(void *p)
{
    worker *me = p;
    eb_team *t = me->team;
    unsigned long seen = 0;
    for (;;) {
        if (!spin_while_equal(&t->generation, seen, &t->quit)) {
            pthread_mutex_lock(&t->mu);
            while (!atomic_load(&t->quit) &&
                   atomic_load_explicit(&t->generation,
                                        memory_order_acquire) == seen)
                pthread_cond_wait(&t->go, &t->mu);
            pthread_mutex_unlock(&t->mu);
        }
        if (atomic_load(&t->quit))
            break;
        seen = atomic_load_explicit(&t->generation, memory_order_acquire);
        t->fn(t->arg, me->part, t->n);
        if (atomic_fetch_sub_explicit(&t->pending, 1, memory_order_acq_rel) ==
            1) {
            /* Under the mutex, so that a caller about to sleep either sees
             * pending at 0 or gets this signal. */
            pthread_mutex_lock(&t->mu);
            pthread_cond_signal(&t->done);
            pthread_mutex_unlock(&t->mu);
        }
    }
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
    atomic_store(&t->quit, 1);
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
    t->fn = fn;
    t->arg = arg;
    atomic_store_explicit(&t->pending, t->n - 1, memory_order_relaxed);
    /* Bumped under the mutex, so that a worker about to sleep either sees
     * the new generation or gets the broadcast. */
    pthread_mutex_lock(&t->mu);
    atomic_fetch_add_explicit(&t->generation, 1, memory_order_release);
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    fn(arg, 0, t->n);
    int64_t t0 = 0;
    for (unsigned i = 0;
         atomic_load_explicit(&t->pending, memory_order_acquire) > 0; i++) {
        if (!spin_on(i, &t0)) {
            pthread_mutex_lock(&t->mu);
            while (atomic_load_explicit(&t->pending, memory_order_acquire) >
                   0)
                pthread_cond_wait(&t->done, &t->mu);
            pthread_mutex_unlock(&t->mu);
            break;
        }
    }
}

void eb_team_split(long long n, int part, int nparts, long long *lo,
                   long long *hi)
{
    long long q = n / nparts, r = n % nparts;
    *lo = part * q + (part < r ? part : r);
    *hi = *lo + q + (part < r ? 1 : 0);
}
