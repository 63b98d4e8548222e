/* team: a fixed pool of worker threads that claim the parts of a job. */
#include "team.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "clock.h"

typedef struct {
    struct eb_team *team;
    pthread_t tid;
} worker;

/*
 * The current job is one atomic word: its generation (high 32 bits), the
 * lowest part nobody has claimed yet (16 bits) and one past the highest
 * (low 16 bits). Every thread, the caller included, claims parts with a
 * compare-and-swap on it, so a part is run exactly once, by whichever
 * thread gets to it first: a worker that is asleep, or whose core another
 * process holds, costs the caller nothing but the parts it did not take.
 * The caller claims from the bottom, workers from the top: with two
 * threads on a job of two parts the caller runs part 0 and the worker
 * part 1 whoever comes first, so a step's slice of memory stays on the
 * same core from one run (and one step cut the same way) to the next
 * instead of moving between the cores' caches at random (reading or
 * writing lines the other core last wrote runs at about half the speed
 * here). A claim that succeeds is a read-modify-write in the release
 * sequence of the caller's publication, so the claimer sees fn, arg and
 * np; the job cannot finish (and the caller cannot move on to the next
 * one) before every claimed part has counted itself in `done`.
 */
#define GEN_SHIFT 32
#define LO_SHIFT 16
#define IDX_MASK 0xffffu

struct eb_team {
    int n;
    worker *w;
    pthread_mutex_t mu;
    pthread_cond_t go, done_cv;
    _Atomic uint64_t state;
    _Atomic int done;     /* parts of the current job finished */
    _Atomic int sleepers; /* workers asleep (or about to be) on `go` */
    _Atomic int quit;
    eb_team_fn fn;
    void *arg;
    int np; /* parts of the current job */
};

/* How long a thread waits by spinning before it sleeps on a condition
 * variable. Waking a sleeping thread costs 10-120 us on this machine class
 * (a futex wake, then the hypervisor wakes the idle vCPU): more than many
 * of the engine's split steps take. Jobs of one run come in bursts (the
 * parts of a step, the steps between two BLAS calls), so a short spin
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

static uint32_t gen_of(uint64_t s) { return (uint32_t)(s >> GEN_SHIFT); }

/* Claims and runs parts of job `gen` until none is left (or the job is
 * no longer current): from the bottom if `low`, else from the top. */
static void run_parts(eb_team *t, uint32_t gen, int low)
{
    uint64_t s = atomic_load_explicit(&t->state, memory_order_acquire);
    for (;;) {
        unsigned lo = (unsigned)(s >> LO_SHIFT) & IDX_MASK;
        unsigned hi = (unsigned)s & IDX_MASK;
        if (gen_of(s) != gen || lo >= hi)
            return;
        uint64_t next = low ? s + ((uint64_t)1 << LO_SHIFT) : s - 1;
        if (!atomic_compare_exchange_weak_explicit(&t->state, &s, next,
                                                   memory_order_acq_rel,
                                                   memory_order_acquire))
            continue; /* s reloaded */
        int np = t->np;
        t->fn(t->arg, (int)(low ? lo : hi - 1), np);
        if (atomic_fetch_add_explicit(&t->done, 1, memory_order_acq_rel) +
                1 == np) {
            /* Under the mutex, so that a caller about to sleep either sees
             * done complete or gets this signal. */
            pthread_mutex_lock(&t->mu);
            pthread_cond_signal(&t->done_cv);
            pthread_mutex_unlock(&t->mu);
        }
        s = atomic_load_explicit(&t->state, memory_order_acquire);
    }
}

/* Waits (spin, then sleep) until the generation differs from `seen` or the
 * team quits; returns the new generation. */
static uint32_t wait_job(eb_team *t, uint32_t seen)
{
    int64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        uint32_t g =
            gen_of(atomic_load_explicit(&t->state, memory_order_acquire));
        if (g != seen || atomic_load_explicit(&t->quit, memory_order_relaxed))
            return g;
        if (!spin_on(i, &t0))
            break;
    }
    /* sleepers is raised before the generation is checked and the caller
     * reads it after publishing (both sequentially consistent): either the
     * caller sees a sleeper and broadcasts under the mutex, or this thread
     * sees the new generation and does not sleep. */
    pthread_mutex_lock(&t->mu);
    atomic_fetch_add(&t->sleepers, 1);
    while (!atomic_load(&t->quit) && gen_of(atomic_load(&t->state)) == seen)
        pthread_cond_wait(&t->go, &t->mu);
    atomic_fetch_sub(&t->sleepers, 1);
    pthread_mutex_unlock(&t->mu);
    return gen_of(atomic_load_explicit(&t->state, memory_order_acquire));
}

static void *worker_main(void *p)
{
    worker *me = p;
    eb_team *t = me->team;
    uint32_t seen = 0;
    for (;;) {
        seen = wait_job(t, seen);
        if (atomic_load(&t->quit))
            break;
        run_parts(t, seen, 0);
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
    pthread_cond_init(&t->done_cv, NULL);
    for (int k = 1; k < t->n; k++) {
        t->w[k] = (worker){t, 0};
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
    pthread_cond_destroy(&t->done_cv);
    free(t->w);
    free(t);
}

int eb_team_size(const eb_team *t) { return t ? t->n : 1; }

/* Publishes a job of nparts parts and runs it with whoever comes: the
 * sleeping workers are woken only if `wake`. */
static void run_job(eb_team *t, int nparts, eb_team_fn fn, void *arg,
                    int wake)
{
    if (nparts > (int)IDX_MASK)
        nparts = (int)IDX_MASK;
    if (!t || t->n == 1 || nparts <= 1) {
        for (int k = 0; k < nparts; k++)
            fn(arg, k, nparts);
        return;
    }
    t->fn = fn;
    t->arg = arg;
    t->np = nparts;
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    uint32_t gen =
        gen_of(atomic_load_explicit(&t->state, memory_order_relaxed)) + 1;
    atomic_store(&t->state, (uint64_t)gen << GEN_SHIFT | (uint64_t)nparts);
    if (wake && atomic_load(&t->sleepers) > 0) {
        pthread_mutex_lock(&t->mu);
        pthread_cond_broadcast(&t->go);
        pthread_mutex_unlock(&t->mu);
    }
    run_parts(t, gen, 1);
    /* Every part is claimed; wait for the ones other threads still run. */
    int64_t t0 = 0;
    for (unsigned i = 0;
         atomic_load_explicit(&t->done, memory_order_acquire) < nparts; i++) {
        if (!spin_on(i, &t0)) {
            pthread_mutex_lock(&t->mu);
            while (atomic_load_explicit(&t->done, memory_order_acquire) <
                   nparts)
                pthread_cond_wait(&t->done_cv, &t->mu);
            pthread_mutex_unlock(&t->mu);
            break;
        }
    }
}

void eb_team_run_parts(eb_team *t, int nparts, eb_team_fn fn, void *arg)
{
    run_job(t, nparts, fn, arg, 1);
}

void eb_team_run_awake(eb_team *t, int nparts, eb_team_fn fn, void *arg)
{
    run_job(t, nparts, fn, arg, 0);
}

void eb_team_run(eb_team *t, eb_team_fn fn, void *arg)
{
    eb_team_run_parts(t, eb_team_size(t), fn, arg);
}

void eb_team_split(long long n, int part, int nparts, long long *lo,
                   long long *hi)
{
    long long q = n / nparts, r = n % nparts;
    *lo = part * q + (part < r ? part : r);
    *hi = *lo + q + (part < r ? 1 : 0);
}
