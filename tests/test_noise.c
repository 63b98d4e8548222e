/* test_noise: the noise marks' thresholds, and a real begin/end pair. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "noise.h"

static int marks_are(const eb_noise *n, double med, double iqr, int threads,
                     int online, int valgrind, const char *want)
{
    const char *m[EB_NOISE_MAX_MARKS];
    int k = eb_noise_marks(n, med, iqr, threads, online, valgrind, m);
    char got[64] = "";
    for (int i = 0; i < k; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s",
                 i ? " " : "", m[i]);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "marks '%s', want '%s'\n", got, want);
    return strcmp(got, want) == 0;
}

int main(void)
{
    eb_noise quiet = {0.05, 2.0, 0.3}, busy = {0.5, 2.0, 3.0},
             short_busy = {0.5, 0.1, 3.0}, unknown = {NAN, 2.0, NAN};
    EB_CHECK(marks_are(&quiet, 100, 10, 1, 2, 0, ""), "10%% is not above");
    EB_CHECK(marks_are(&quiet, 100, 10.5, 1, 2, 0, "iqr"), "IQR > 10%%");
    EB_CHECK(marks_are(&busy, 100, 1, 1, 2, 0, "busy"), "others > 0.2");
    EB_CHECK(marks_are(&short_busy, 100, 1, 1, 2, 0, ""),
             "0.1 s: too short to judge others");
    EB_CHECK(marks_are(&unknown, 100, 1, 1, 2, 0, ""), "unknown: no mark");
    EB_CHECK(marks_are(&quiet, 100, 1, 3, 2, 0, "threads"), "3 > 2 CPUs");
    EB_CHECK(marks_are(&quiet, 100, 1, 2, 2, 0, ""), "2 = 2 CPUs");
    EB_CHECK(marks_are(&busy, 100, 50, 4, 2, 0, "iqr busy threads"), "all");
    EB_CHECK(marks_are(&busy, 100, 50, 4, 2, 1, "threads valgrind"),
             "under Valgrind only threads and valgrind");
    EB_CHECK(strstr(eb_noise_explain("busy"), "0.2 CPUs") != NULL, "explain");

    eb_noise_clock c;
    eb_noise n;
    eb_noise_begin(&c);
    volatile double x = 0;
    for (int i = 0; i < 20000000; i++)
        x += i * 0.5;
    eb_noise_end(&c, &n);
    EB_CHECK(n.wall_s > 0 && n.wall_s < 60, "wall %g s", n.wall_s);
    EB_CHECK(n.others_cpus >= 0 && n.others_cpus < 1024, "others %g",
             n.others_cpus);
    EB_CHECK(n.load1 >= 0, "load %g", n.load1);
    return eb_check_done("test_noise");
}
