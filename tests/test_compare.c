/* test_compare: the compare module on synthetic samples and records with
 * known ratios: Mann-Whitney bounds against published tables, intervals
 * that hold the true ratio, verdicts, the geometric mean, warnings when the
 * runs differ, --fail-above, and bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "compare.h"

enum { N = 15 };

/* Base samples: 1 ms with up to 14% spread, not sorted. */
static void base_samples(double *v, int n)
{
    for (int k = 0; k < n; k++)
        v[k] = 1e6 * (1 + 0.01 * ((k * 7) % n));
}

static void test_mann_whitney(void)
{
    /* Two-sided 5% critical values of U (tables): n1 = n2 = 5: 2, 10: 23,
     * 15: 64, 20: 127; n1 = 8, n2 = 12: 22 (symmetric in the sizes). C is
     * one more. */
    static const int table[][3] = {{5, 5, 3},   {10, 10, 24}, {15, 15, 65},
                                   {20, 20, 128}, {8, 12, 23}, {12, 8, 23}};
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++) {
        long c = eb_mann_whitney_c(table[k][0], table[k][1], 0.05);
        EB_CHECK(c == table[k][2], "%dx%d: %ld", table[k][0], table[k][1], c);
    }
    /* Too few samples for a 95% interval: P(U = 0) = 1/20 > 2.5%. */
    EB_CHECK(eb_mann_whitney_c(3, 3, 0.05) == 0, "3x3");
    EB_CHECK(eb_mann_whitney_c(1, 15, 0.05) == 0, "1x15");
    /* The normal approximation (above 10,000 pairs) continues the exact
     * values: 100x100 is exact, 101x100 approximate. */
    long exact = eb_mann_whitney_c(100, 100, 0.05);
    long approx = eb_mann_whitney_c(101, 100, 0.05);
    EB_CHECK(approx > exact && approx < exact + 60, "exact %ld approx %ld",
             exact, approx);
}

static void test_known_ratio(double factor, eb_verdict want)
{
    double b[N], n[N];
    base_samples(b, N);
    for (int k = 0; k < N; k++)
        n[(k + 5) % N] = b[k] * factor; /* other order, same spread */
    eb_ratio r;
    EB_CHECK(eb_compare_samples(b, N, n, N, 0.95, &r) == 0, "x%g", factor);
    EB_CHECK(fabs(r.ratio - factor) < 1e-12, "x%g: ratio %g", factor,
             r.ratio);
    EB_CHECK(fabs(r.hl_ratio - factor) < 1e-12, "x%g: HL %g", factor,
             r.hl_ratio);
    EB_CHECK(r.lo <= factor && factor <= r.hi, "x%g: [%g, %g]", factor,
             r.lo, r.hi);
    EB_CHECK(r.hi / r.lo < 1.3, "x%g: 14%% spread, narrow interval [%g, %g]",
             factor, r.lo, r.hi);
    EB_CHECK(r.verdict == want, "x%g: %s", factor, eb_verdict_name(r.verdict));
}

static void test_samples(void)
{
    test_known_ratio(2.0, EB_SLOWER);
    test_known_ratio(0.5, EB_FASTER);
    test_known_ratio(1.0, EB_INCONCLUSIVE);
    test_known_ratio(1.2, EB_SLOWER);
    test_known_ratio(1.01, EB_INCONCLUSIVE); /* within the spread */

    /* Too few samples: no interval, never a verdict. */
    double b[3] = {1, 1.1, 1.2}, n[3] = {5, 5.1, 5.2};
    eb_ratio r;
    eb_compare_samples(b, 3, n, 3, 0.95, &r);
    EB_CHECK(r.lo == 0 && isinf(r.hi), "3x3: [%g, %g]", r.lo, r.hi);
    EB_CHECK(r.verdict == EB_INCONCLUSIVE, "3x3: %s",
             eb_verdict_name(r.verdict));

    /* One wild outlier in NEW does not move the verdict on a clear
     * doubling (the medians and ranks do not care). */
    double bb[N], nn[N];
    base_samples(bb, N);
    for (int k = 0; k < N; k++)
        nn[k] = 2 * bb[k];
    nn[3] = 1e3; /* a thousand times faster, once */
    eb_compare_samples(bb, N, nn, N, 0.95, &r);
    EB_CHECK(r.verdict == EB_SLOWER && fabs(r.ratio - 2) < 0.05,
             "outlier: %s %g", eb_verdict_name(r.verdict), r.ratio);
}

/* ---- record files ------------------------------------------------------ */

static char dir[] = "/tmp/test_compare.XXXXXX";

static const char *path_of(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void measurement(FILE *f, const char *inst, const char *mode,
                        double factor, const char *extra)
{
    double v[N];
    base_samples(v, N);
    fprintf(f, "{\"type\":\"measurement\",\"backend\":\"einsum-bench\","
            "\"instance\":\"%s\",\"strategy\":\"opt_flops\",\"mode\":\"%s\","
            "\"status\":\"ok\"%s,\"samples_ns\":[", inst, mode, extra);
    for (int k = 0; k < N; k++)
        fprintf(f, "%s%.0f", k ? "," : "", v[(k * 4) % N] * factor);
    fprintf(f, "]}\n");
}

/* A record file: factors for instances a, b, c (trace mode). */
static void write_file(const char *name, const char *commit, double fa,
                       double fb, double fc)
{
    FILE *f = fopen(path_of(name), "w");
    fprintf(f, "{\"type\":\"run\",\"backend\":\"einsum-bench\",\"hostname\":"
            "\"vm\",\"git_commit\":\"%s\",\"threads\":1,\"options\":{"
            "\"no-fuse\":%s,\"json\":\"%s.jsonl\"}}\n", commit,
            strcmp(commit, "aaa") == 0 ? "true" : "false", commit);
    measurement(f, "a", "trace", fa, "");
    measurement(f, "b", "trace", fb, "");
    /* Instance c was measured in float64 in the base, float32 in new. */
    measurement(f, "c", "trace", fc, strcmp(commit, "aaa") == 0
                                         ? ",\"dtype\":\"float64\""
                                         : ",\"dtype\":\"float32\"");
    /* Reused and failed records never count. */
    measurement(f, "d", "trace", fa, ",\"reused_from\":\"opt_size\"");
    fprintf(f, "{\"type\":\"measurement\",\"backend\":\"einsum-bench\","
            "\"instance\":\"e\",\"strategy\":\"opt_flops\",\"mode\":\"trace\","
            "\"status\":\"error\",\"samples_ns\":null}\n");
    fclose(f);
}

static char *slurp(FILE *f)
{
    static char buf[16384];
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    return buf;
}

static int run_compare(const char *a, const char *b, double fail_above,
                       int markdown, char *out, char *err, size_t size)
{
    FILE *fo = tmpfile(), *fe = tmpfile();
    eb_compare_opts o = {fail_above, markdown};
    int rc = eb_compare_files(path_of(a), path_of(b), &o, fo, fe);
    snprintf(out, size, "%s", slurp(fo));
    snprintf(err, size, "%s", slurp(fe));
    fclose(fo);
    fclose(fe);
    return rc;
}

static int count_lines(const char *s, const char *word)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, word)); p++)
        n++;
    return n;
}

static void test_files(void)
{
    static char out[16384], err[16384];
    write_file("base.jsonl", "aaa", 1, 1, 1);
    write_file("new.jsonl", "bbb", 2, 0.5, 1);
    int rc = run_compare("base.jsonl", "new.jsonl", 0, 0, out, err,
                         sizeof out);
    EB_CHECK(rc == 0, "rc %d: %s", rc, err);
    EB_CHECK(strstr(out, " 2.000 ") && strstr(out, " 0.500 "),
             "ratios 2 and 0.5: %s", out);
    EB_CHECK(count_lines(out, "einsum-bench ") == 3, "three rows: %s", out);
    EB_CHECK(count_lines(out, "] slower") == 1 &&
                 count_lines(out, "] faster") == 1 &&
                 count_lines(out, "] inconclusive") == 1,
             "verdicts: %s", out);
    EB_CHECK(strstr(out, "geometric mean of NEW/BASE: 1.000 over 3 "
                         "measurements (1 faster, 1 slower, 1 inconclusive"),
             "geometric mean: %s", out);
    EB_CHECK(strstr(err, "warning: git_commit differs: BASE \"aaa\", NEW "
                         "\"bbb\""), "commit warning: %s", err);
    EB_CHECK(!strstr(err, "hostname differs"), "same host: %s", err);
    EB_CHECK(strstr(err, "warning: options.no-fuse differs: BASE true, NEW "
                         "false"), "option named: %s", err);
    EB_CHECK(!strstr(err, "options.json"), "output options ignored: %s", err);
    EB_CHECK(strstr(err, "note: einsum-bench/c/opt_flops/trace: measured in "
                         "float64 in BASE, float32 in NEW") &&
                 count_lines(err, "measured in") == 1,
             "a dtype that differs is noted, once: %s", err);

    rc = run_compare("base.jsonl", "new.jsonl", 1.5, 1, out, err,
                     sizeof out);
    EB_CHECK(rc == 1, "--fail-above 1.5 trips on the doubling: %d", rc);
    EB_CHECK(strstr(err, "1 measurement slower than 1.5x"), "%s", err);
    EB_CHECK(strstr(out, "| einsum-bench | a | opt_flops | trace |"),
             "markdown row: %s", out);
    rc = run_compare("base.jsonl", "new.jsonl", 2.5, 0, out, err,
                     sizeof out);
    EB_CHECK(rc == 0, "--fail-above 2.5: %d", rc);

    /* Nothing in common: exit 2. */
    FILE *f = fopen(path_of("other.jsonl"), "w");
    measurement(f, "zzz", "eager", 1, "");
    fclose(f);
    rc = run_compare("base.jsonl", "other.jsonl", 0, 0, out, err, sizeof out);
    EB_CHECK(rc == 2 && strstr(err, "share no measurement"), "%d %s", rc,
             err);
    EB_CHECK(strstr(err, "has no run record"), "%s", err);

    /* A broken line: exit 2 naming file and line. */
    f = fopen(path_of("broken.jsonl"), "w");
    fprintf(f, "{\"type\":\"run\"}\n{\"type\":\"measurement\",\"samp\n");
    fclose(f);
    rc = run_compare("base.jsonl", "broken.jsonl", 0, 0, out, err,
                     sizeof out);
    EB_CHECK(rc == 2 && strstr(err, "broken.jsonl:2: not a JSON record"),
             "%d %s", rc, err);
    f = fopen(path_of("negative.jsonl"), "w");
    fprintf(f, "{\"type\":\"measurement\",\"backend\":\"x\",\"instance\":\"a\","
            "\"strategy\":\"s\",\"mode\":\"m\",\"status\":\"ok\","
            "\"samples_ns\":[1,-2]}\n");
    fclose(f);
    rc = run_compare("negative.jsonl", "base.jsonl", 0, 0, out, err,
                     sizeof out);
    EB_CHECK(rc == 2 && strstr(err, "negative.jsonl:1: x/a/s/m: "
                                    "samples_ns[1] is not a positive"),
             "%d %s", rc, err);
    rc = run_compare("missing.jsonl", "base.jsonl", 0, 0, out, err,
                     sizeof out);
    EB_CHECK(rc == 2 && strstr(err, "missing.jsonl: cannot open"), "%d %s",
             rc, err);
}

int main(void)
{
    test_mann_whitney();
    test_samples();
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_files();
    const char *names[] = {"base.jsonl", "new.jsonl", "other.jsonl",
                           "broken.jsonl", "negative.jsonl"};
    for (int k = 0; k < 5; k++)
        unlink(path_of(names[k]));
    rmdir(dir);
    return eb_check_done("test_compare");
}
