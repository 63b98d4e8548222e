/*
 * einsum_util.h: helpers shared by the engine tests: build an instance from
 * a format string and per-label sizes, run a path eagerly, compare with the
 * naive reference.
 */
#ifndef EB_TEST_EINSUM_UTIL_H
#define EB_TEST_EINSUM_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "eager.h"
#include "instance.h"
#include "operands.h"
#include "pool.h"
#include "refeinsum.h"
#include "team.h"
#include "utf8.h"

/* The engine threads the helpers run with (NULL: one thread). */
static eb_team *tu_team;

/* Build an instance of dtype `dtype` ("float64", ...) from fs and a size
 * for each code point (via size_of). */
static inline eb_instance *tu_instance_dt(const char *fs,
                                          int64_t (*size_of)(uint32_t cp,
                                                             void *),
                                          void *arg, const char *dtype)
{
    int n = 1;
    const char *arrow = strstr(fs, "->");
    for (const char *p = fs; p < arrow; p++)
        n += *p == ',';
    int64_t **shapes = calloc((size_t)n, sizeof *shapes);
    int *ranks = calloc((size_t)n, sizeof *ranks);
    const char *p = fs;
    for (int k = 0; k < n; k++) {
        shapes[k] = calloc(64, sizeof(int64_t));
        while (p < arrow && *p != ',') {
            uint32_t cp;
            size_t u = eb_utf8_decode(p, (size_t)(arrow - p), &cp);
            shapes[k][ranks[k]++] = size_of(cp, arg);
            p += u;
        }
        p++;
    }
    eb_instance *inst = NULL;
    eb_error err;
    if (eb_instance_build("test", "test", fs, dtype, n, shapes, ranks, &inst,
                          &err))
        fprintf(stderr, "tu_instance(%s): %s\n", fs, err.msg);
    for (int k = 0; k < n; k++)
        free(shapes[k]);
    free(shapes);
    free(ranks);
    return inst;
}

/* The same in float64. */
static inline eb_instance *tu_instance(const char *fs,
                                       int64_t (*size_of)(uint32_t cp, void *),
                                       void *arg)
{
    return tu_instance_dt(fs, size_of, arg, "float64");
}

/* Sizes from a spec "i=3,j=4" (labels not named: 2), for tu_instance. */
typedef struct {
    const char *sizes;
} tu_sizes;

static inline int64_t tu_spec_size(uint32_t cp, void *arg)
{
    const char *s = ((tu_sizes *)arg)->sizes;
    for (const char *p = s; *p;) {
        uint32_t c;
        size_t u = eb_utf8_decode(p, strlen(p), &c);
        if (c == cp && p[u] == '=')
            return strtoll(p + u + 1, NULL, 10);
        p = strchr(p, ',');
        if (!p)
            break;
        p++;
    }
    return 2;
}

/* The path [0,1],[0,1],... for n operands (steps has n - 1 entries). */
static inline void tu_seq_path(eb_path *p, eb_pair *steps, int n)
{
    p->strategy = "seq";
    p->num_steps = n - 1;
    p->steps = steps;
    for (int s = 0; s < n - 1; s++)
        steps[s] = (eb_pair){0, 1};
}

/* splitmix64 for the random tests. */
static inline uint64_t tu_rng_next(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ULL;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline int tu_rnd(uint64_t *s, int n)
{
    return (int)(tu_rng_next(s) % (uint64_t)n);
}

/* A random path over n operands into steps (n - 1 entries). */
static inline void tu_random_path(uint64_t *s, int n, eb_pair *steps,
                                  eb_path *path)
{
    *path = (eb_path){.strategy = "random", .num_steps = n - 1,
                      .steps = steps};
    for (int t = 0; t < n - 1; t++) {
        int live = n - t;
        int i = tu_rnd(s, live), j = tu_rnd(s, live - 1);
        if (j >= i)
            j++;
        steps[t] = (eb_pair){i, j};
    }
}

/* Elements of the instance's output. */
static inline int64_t tu_output_elems(const eb_instance *inst)
{
    int64_t n = 1;
    for (int a = 0; a < inst->output.rank; a++)
        n *= inst->label_size[inst->output.ids[a]];
    return n;
}

/* Run an executor twice (the second run reuses pooled or arena buffers):
 * relative error of the second output against ref (n elements), -3 when a
 * run failed. cnt_out (may be NULL) gets the last run's counters. */
static inline double tu_run_twice(const eb_executor *ex, const double *ref,
                                  int64_t n, eb_exec_counters *cnt_out)
{
    double e = -3;
    eb_exec_counters cnt = {0};
    eb_error err;
    for (int r = 0; r < 2; r++) {
        const void *out;
        memset(&cnt, 0, sizeof cnt);
        if (ex->run(ex->ctx, &out, &cnt, &err)) {
            fprintf(stderr, "run: %s\n", err.msg);
            return -3;
        }
        e = eb_ref_rel_err(out, ref, n);
        ex->release(ex->ctx);
    }
    if (cnt_out)
        *cnt_out = cnt;
    return e;
}

/* What an executor said of itself (tu_mode_vs_naive_opts). */
typedef struct {
    int engine_threads, lanes_at, fused_groups;
} tu_exec_info;

/* Run path in `mode` on seeded random inputs, with fuse as trace's
 * options, on tu_team: relative error vs naive (the path's steps by the
 * stepwise naive reference, eb_ref_pairwise, where the one loop over all
 * labels would take more than 1e8 multiply-adds). *info (may be NULL)
 * gets the executor's engine_threads, lanes_at and fused_groups. */
static inline double tu_mode_vs_naive_opts(const eb_instance *inst,
                                           const eb_path *path, uint64_t seed,
                                           eb_mode mode,
                                           const eb_fuse_opts *fuse,
                                           eb_exec_counters *cnt_out,
                                           tu_exec_info *info)
{
    eb_fill fill = {.kind = EB_FILL_RANDOM, .seed = seed};
    eb_operands *ops;
    eb_error err;
    if (eb_operands_create(inst, &fill, &ops, &err))
        return -1;
    int64_t n = tu_output_elems(inst);
    double *ref = malloc((size_t)n * sizeof *ref);
    eb_schedule *sched;
    if (eb_ref_cost(inst) <= 1e8) {
        eb_ref_einsum(inst, ops->views, ref, &err);
    } else if (!eb_schedule_build(inst, path, &sched, &err)) {
        eb_ref_pairwise(inst, sched, ops->views, ref, &err);
        eb_schedule_destroy(sched);
    }
    eb_pool *pool = eb_pool_create();
    eb_executor ex;
    double e = -2;
    if (!eb_exec_create(mode, inst, path, ops->views, pool, tu_team, fuse,
                        &ex, &err)) {
        e = tu_run_twice(&ex, ref, n, cnt_out);
        if (info)
            *info = (tu_exec_info){ex.engine_threads, ex.lanes_at,
                                   ex.fused_groups};
        eb_exec_destroy(&ex);
    } else {
        fprintf(stderr, "create: %s\n", err.msg);
    }
    eb_pool_destroy(pool);
    free(ref);
    eb_operands_destroy(ops);
    return e;
}

/* The same with the default options, but small programs too on the team
 * (so that its splits are what the cases check). */
static inline double tu_mode_vs_naive(const eb_instance *inst,
                                      const eb_path *path, uint64_t seed,
                                      eb_mode mode, eb_exec_counters *cnt_out)
{
    eb_fuse_opts fuse = eb_fuse_default_opts();
    fuse.solo_work = 0;
    return tu_mode_vs_naive_opts(inst, path, seed, mode, &fuse, cnt_out,
                                 NULL);
}

#endif
