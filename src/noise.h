/*
 * noise: how quiet the machine was while a measurement ran, so that a
 * record says when its times are not to be trusted (in the manner of
 * pyperf's system checks).
 *
 * Between eb_noise_begin and eb_noise_end: the CPUs other processes kept
 * busy on average (all CPUs' busy time from /proc/stat, hypervisor steal
 * included, minus this process's own CPU time, over the wall time), and the
 * 1-minute load average at the end. eb_noise_marks then names what makes
 * a measurement suspect.
 */
#ifndef EB_NOISE_H
#define EB_NOISE_H

#include <stdint.h>

typedef struct {
    int64_t wall0_ns;
    double busy0_s, own0_s;     /* < 0: /proc/stat unreadable */
} eb_noise_clock;

typedef struct {
    double others_cpus;         /* NaN when unknown */
    double wall_s;              /* the window the figure is over */
    double load1;               /* 1-minute load average, NaN if unknown */
} eb_noise;

void eb_noise_begin(eb_noise_clock *c);
void eb_noise_end(const eb_noise_clock *c, eb_noise *out);

/* Thresholds of the marks. */
#define EB_NOISE_IQR_SHARE 0.10     /* IQR / median above this */
#define EB_NOISE_OTHERS_CPUS 0.2    /* other processes' CPUs above this */
#define EB_NOISE_MIN_WALL_S 0.5     /* shorter windows: /proc/stat ticks
                                       are too coarse to judge others */

enum { EB_NOISE_MAX_MARKS = 4 };

/* The marks of a measurement ("iqr", "busy", "threads", "valgrind") into
 * marks[EB_NOISE_MAX_MARKS]; returns how many. iqr_ns/median_ns from its
 * statistics, threads the budget, online the CPUs online, valgrind 1 when
 * running under Valgrind (then only "threads" and "valgrind": the spread
 * and the load of simulated times mean nothing). */
int eb_noise_marks(const eb_noise *n, double median_ns, double iqr_ns,
                   int threads, int online, int valgrind,
                   const char *marks[EB_NOISE_MAX_MARKS]);

/* What a mark means, for a warning line. */
const char *eb_noise_explain(const char *mark);

#endif
