/* test_team: the engine's thread team. Every part of every job runs exactly
 * once and the job is complete when eb_team_run_parts returns, for teams of
 * 1-3 threads, 1 to 1000 parts, jobs back to back and after the workers
 * have gone to sleep, jobs that wake nobody (eb_team_run_awake), and with
 * a worker held up inside a part (the caller must finish the parts nobody
 * else claimed); the caller claims from the bottom and workers from the
 * top, so the parts the caller ran are always 0, 1, ..., j - 1. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "team.h"

enum { MAX_PARTS = 1000 };

typedef struct {
    int nparts;
    _Atomic int runs[MAX_PARTS]; /* times part k ran */
    int bad_nparts;              /* a part saw another nparts */
    long long sleep_part_ns;     /* part 1 sleeps this long */
    pthread_t caller;
    _Atomic int by_caller[MAX_PARTS]; /* part k ran on the caller */
} job;

static void count_part(void *arg, int part, int nparts)
{
    job *j = arg;
    if (nparts != j->nparts)
        j->bad_nparts = 1;
    if (part == 1 && j->sleep_part_ns) {
        struct timespec ts = {0, j->sleep_part_ns};
        nanosleep(&ts, NULL);
    }
    if (pthread_equal(pthread_self(), j->caller))
        atomic_store(&j->by_caller[part], 1);
    atomic_fetch_add(&j->runs[part], 1);
}

/* Runs `reps` jobs of nparts parts; the number whose parts run by the
 * caller were exactly a prefix 0..j-1 (j >= 0) of them. */
static int caller_prefix(eb_team *team, int nparts, int reps)
{
    static job j;
    int good = 0;
    for (int rep = 0; rep < reps; rep++) {
        memset(&j, 0, sizeof j);
        j.nparts = nparts;
        j.caller = pthread_self();
        eb_team_run_parts(team, nparts, count_part, &j);
        int k = 0, ok = !j.bad_nparts;
        while (k < nparts && atomic_load(&j.by_caller[k]))
            k++;
        for (; k < nparts; k++)
            ok &= !atomic_load(&j.by_caller[k]);
        good += ok;
    }
    return good;
}

/* Runs a job of `nparts` on `team`; 1 if every part ran exactly once. */
static int run_job(eb_team *team, int nparts, long long sleep_ns, int awake)
{
    static job j;
    j.nparts = nparts;
    j.bad_nparts = 0;
    j.sleep_part_ns = sleep_ns;
    for (int k = 0; k < MAX_PARTS; k++)
        atomic_store(&j.runs[k], 0);
    if (awake)
        eb_team_run_awake(team, nparts, count_part, &j);
    else
        eb_team_run_parts(team, nparts, count_part, &j);
    int ok = !j.bad_nparts;
    for (int k = 0; k < MAX_PARTS; k++)
        ok &= atomic_load(&j.runs[k]) == (k < nparts);
    return ok;
}

static int run_once(eb_team *team, int nparts, long long sleep_ns)
{
    return run_job(team, nparts, sleep_ns, 0);
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void test_team(int threads)
{
    eb_team *team = NULL;
    eb_error err;
    if (threads > 0)
        EB_CHECK(eb_team_create(threads, &team, &err) == EB_OK, "create: %s",
                 err.msg);
    EB_CHECK(eb_team_size(team) == (threads > 0 ? threads : 1), "size %d",
             eb_team_size(team));
    const int counts[] = {1, 2, 3, 7, 64, MAX_PARTS};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int good = 0;
        for (int rep = 0; rep < 200; rep++)
            good += run_once(team, counts[c], 0);
        EB_CHECK(good == 200, "%d threads, %d parts: %d of 200 jobs right",
                 threads, counts[c], good);
    }
    /* Jobs after the workers went to sleep (their spin is 50 us). */
    int good = 0;
    for (int rep = 0; rep < 20; rep++) {
        pause_us(200);
        good += run_once(team, 2 + rep % 5, 0);
    }
    EB_CHECK(good == 20, "%d threads, after sleeping: %d of 20 right",
             threads, good);
    /* Jobs that wake nobody: back to back (workers spinning) and after
     * the workers went to sleep (the caller runs every part). */
    good = 0;
    for (int rep = 0; rep < 200; rep++)
        good += run_job(team, 1 + rep % 9, 0, 1);
    for (int rep = 0; rep < 10; rep++) {
        pause_us(200);
        good += run_job(team, 5, 0, 1);
        good += run_once(team, 3, 0); /* a waking job after it */
    }
    EB_CHECK(good == 220, "%d threads, jobs that wake nobody: %d of 220 right",
             threads, good);
    /* A part that takes 20 ms: the job still completes with every part
     * run once, whoever took the slow one. */
    EB_CHECK(run_once(team, 8, 20000000), "%d threads, one slow part",
             threads);
    /* The caller's parts are a prefix of the job's, whoever else runs. */
    const int np[] = {2, 7, 64, MAX_PARTS};
    for (size_t c = 0; c < sizeof np / sizeof np[0]; c++) {
        int prefix = caller_prefix(team, np[c], 100);
        EB_CHECK(prefix == 100,
                 "%d threads, %d parts: the caller ran a prefix of the parts "
                 "in %d of 100 jobs",
                 threads, np[c], prefix);
    }
    /* eb_team_run: one part per thread. */
    static job j;
    memset(&j, 0, sizeof j);
    j.nparts = eb_team_size(team);
    eb_team_run(team, count_part, &j);
    int once = !j.bad_nparts;
    for (int k = 0; k < j.nparts; k++)
        once &= atomic_load(&j.runs[k]) == 1;
    EB_CHECK(once, "%d threads: eb_team_run runs each thread's part once",
             threads);
    eb_team_destroy(team);
}

int main(void)
{
    for (int t = 0; t <= 3; t++)
        test_team(t);
    long long lo, hi, total = 0;
    int contiguous = 1;
    for (int p = 0; p < 7; p++) {
        eb_team_split(100, p, 7, &lo, &hi);
        contiguous &= lo == total;
        total = hi;
    }
    EB_CHECK(contiguous && total == 100, "split 100 in 7 parts");
    return eb_check_done("test_team");
}
