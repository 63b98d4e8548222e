/* noise: other processes' CPU share and the load during a measurement. */
#include "noise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"

/* Busy CPU seconds over all CPUs (user, nice, system, irq, softirq,
 * steal), or -1. */
static double busy_seconds(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    long tick = sysconf(_SC_CLK_TCK);
    if (n < 8 || tick <= 0)
        return -1;
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)tick;
}

static double own_seconds(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0)
        return 0;
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 +
           (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

void eb_noise_begin(eb_noise_clock *c)
{
    c->busy0_s = busy_seconds();
    c->own0_s = own_seconds();
    c->wall0_ns = eb_now_ns();
}

void eb_noise_end(const eb_noise_clock *c, eb_noise *out)
{
    double busy = busy_seconds(), own = own_seconds();
    out->wall_s = (double)(eb_now_ns() - c->wall0_ns) / 1e9;
    out->others_cpus = NAN;
    if (busy >= 0 && c->busy0_s >= 0 && out->wall_s > 0) {
        double others = (busy - c->busy0_s) - (own - c->own0_s);
        out->others_cpus = (others > 0 ? others : 0) / out->wall_s;
    }
    double load[1];
    out->load1 = getloadavg(load, 1) == 1 ? load[0] : NAN;
}

int eb_noise_marks(const eb_noise *n, double median_ns, double iqr_ns,
                   int threads, int online, int valgrind,
                   const char *marks[EB_NOISE_MAX_MARKS])
{
    int k = 0;
    /* Under Valgrind no time is real: spread and load say nothing more. */
    if (!valgrind && median_ns > 0 && iqr_ns / median_ns > EB_NOISE_IQR_SHARE)
        marks[k++] = "iqr";
    if (!valgrind && n && n->wall_s >= EB_NOISE_MIN_WALL_S &&
        n->others_cpus > EB_NOISE_OTHERS_CPUS)
        marks[k++] = "busy";
    if (online > 0 && threads > online)
        marks[k++] = "threads";
    if (valgrind)
        marks[k++] = "valgrind";
    return k;
}

const char *eb_noise_explain(const char *mark)
{
    if (strcmp(mark, "iqr") == 0)
        return "IQR above 10% of the median";
    if (strcmp(mark, "busy") == 0)
        return "other processes kept more than 0.2 CPUs busy";
    if (strcmp(mark, "threads") == 0)
        return "--threads exceeds the online CPUs";
    if (strcmp(mark, "valgrind") == 0)
        return "under Valgrind: times are not real";
    return mark;
}
