/* compare: NEW/BASE ratios of two record files with Hodges-Lehmann
 * intervals on log times, verdicts, and warnings about what differs. */
#include "compare.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* Above this many pairs the exact distribution of U costs more than it
 * tells: the normal approximation is used. */
#define EXACT_PAIRS 10000L

const char *eb_verdict_name(eb_verdict v)
{
    return v == EB_FASTER ? "faster" : v == EB_SLOWER ? "slower"
                                                      : "inconclusive";
}

/* z with P(Z > z) = p for a standard normal Z, by bisection on erfc. */
static double normal_upper_quantile(double p)
{
    double lo = 0, hi = 40;
    for (int k = 0; k < 200; k++) {
        double mid = (lo + hi) / 2;
        if (0.5 * erfc(mid / sqrt(2)) > p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* P(U = u) for u in 0..limit under the null hypothesis, for sample sizes m
 * and n, by the recurrence p[m][n](u) = m/(m+n) p[m-1][n](u-n)
 * + n/(m+n) p[m][n-1](u): only sums of positive terms, so no cancellation.
 * Returns NULL when out of memory. */
static double *u_distribution(int m, int n, long limit)
{
    size_t len = (size_t)limit + 1;
    double *prev = calloc((size_t)(n + 1) * len, sizeof *prev);
    double *cur = calloc((size_t)(n + 1) * len, sizeof *cur);
    double *out = malloc(len * sizeof *out);
    if (!prev || !cur || !out) {
        free(prev);
        free(cur);
        free(out);
        return NULL;
    }
    /* Row 0: with no base samples U is 0. */
    for (int j = 0; j <= n; j++)
        prev[(size_t)j * len] = 1;
    for (int i = 1; i <= m; i++) {
        memset(cur, 0, (size_t)(n + 1) * len * sizeof *cur);
        cur[0] = 1; /* no new samples: U is 0 */
        for (int j = 1; j <= n; j++) {
            double a = (double)i / (i + j), b = (double)j / (i + j);
            double *c = cur + (size_t)j * len;
            const double *up = prev + (size_t)j * len;
            const double *left = cur + (size_t)(j - 1) * len;
            for (long u = 0; u <= limit; u++)
                c[u] = b * left[u] + (u >= j ? a * up[u - j] : 0);
        }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    memcpy(out, prev + (size_t)n * len, len * sizeof *out);
    free(prev);
    free(cur);
    return out;
}

long eb_mann_whitney_c(int m, int n, double alpha)
{
    long pairs = (long)m * n;
    if (pairs > EXACT_PAIRS) {
        double mu = pairs / 2.0;
        double sd = sqrt(pairs * (m + n + 1.0) / 12.0);
        double c = floor(mu - normal_upper_quantile(alpha / 2) * sd);
        return c > 0 ? (long)c : 0;
    }
    long limit = pairs / 2;
    double *p = u_distribution(m, n, limit);
    if (!p)
        return -1;
    long c = 0;
    double below = 0; /* P(U < c) */
    while (c <= limit && below + p[c] <= alpha / 2 * (1 + 1e-12)) {
        below += p[c];
        c++;
    }
    free(p);
    return c;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The suites' median: sorted[n/2] (stats.h). Sorts v. */
static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

int eb_compare_samples(const double *base, int m, const double *new_,
                       int n, double conf, eb_ratio *out)
{
    size_t pairs = (size_t)m * (size_t)n;
    double *d = malloc(pairs * sizeof *d);
    double *sb = malloc((size_t)m * sizeof *sb);
    double *sn = malloc((size_t)n * sizeof *sn);
    long c = d && sb && sn ? eb_mann_whitney_c(m, n, 1 - conf) : -1;
    if (c < 0) {
        free(d);
        free(sb);
        free(sn);
        return -1;
    }
    memcpy(sb, base, (size_t)m * sizeof *sb);
    memcpy(sn, new_, (size_t)n * sizeof *sn);
    out->ratio = median_of(sn, n) / median_of(sb, m);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            d[(size_t)i * n + j] = log(new_[j]) - log(base[i]);
    qsort(d, pairs, sizeof *d, cmp_double);
    double hl = pairs % 2 ? d[pairs / 2]
                          : (d[pairs / 2 - 1] + d[pairs / 2]) / 2;
    out->hl_ratio = exp(hl);
    out->lo = c > 0 ? exp(d[c - 1]) : 0;
    out->hi = c > 0 ? exp(d[pairs - (size_t)c]) : INFINITY;
    out->verdict = out->hi < 1 ? EB_FASTER
                   : out->lo > 1 ? EB_SLOWER
                                 : EB_INCONCLUSIVE;
    free(d);
    free(sb);
    free(sn);
    return 0;
}

/* ---- record files ------------------------------------------------------ */

typedef struct {
    char key[512];              /* backend/instance/strategy/mode */
    const char *backend, *instance, *strategy, *mode; /* in the record */
    double *samples;
    int n;
    int matched;
} entry;

typedef struct {
    const char *file;
    cJSON *run;                 /* the first run record, or NULL */
    cJSON **recs;               /* every measurement record kept */
    entry *e;
    int n, cap;
    int duplicates;             /* keys seen again (first one kept) */
} record_file;

static void file_free(record_file *f)
{
    cJSON_Delete(f->run);
    for (int k = 0; k < f->n; k++) {
        free(f->e[k].samples);
        cJSON_Delete(f->recs[k]);
    }
    free(f->e);
    free(f->recs);
}

static const char *str_field(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int find_entry(const record_file *f, const char *key)
{
    for (int k = 0; k < f->n; k++)
        if (strcmp(f->e[k].key, key) == 0)
            return k;
    return -1;
}

/* Keep measurement rec (which the file takes over) if it is ok and has
 * positive samples; 0, or -1 with a message naming the field. */
static int add_measurement(record_file *f, cJSON *rec, long line, FILE *err)
{
    const char *status = str_field(rec, "status");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(rec, "samples_ns");
    if (!status || strcmp(status, "ok") != 0 || !cJSON_IsArray(s) ||
        cJSON_GetArraySize(s) == 0 || str_field(rec, "reused_from")) {
        cJSON_Delete(rec);
        return 0;
    }
    entry e = {.backend = str_field(rec, "backend"),
               .instance = str_field(rec, "instance"),
               .strategy = str_field(rec, "strategy"),
               .mode = str_field(rec, "mode")};
    if (!e.backend || !e.instance || !e.strategy || !e.mode) {
        fprintf(err, "einsum-bench: compare: %s:%ld: a measurement without "
                "backend, instance, strategy or mode\n", f->file, line);
        cJSON_Delete(rec);
        return -1;
    }
    snprintf(e.key, sizeof e.key, "%s/%s/%s/%s", e.backend, e.instance,
             e.strategy, e.mode);
    if (find_entry(f, e.key) >= 0) {
        f->duplicates++;
        cJSON_Delete(rec);
        return 0;
    }
    e.n = cJSON_GetArraySize(s);
    e.samples = malloc((size_t)e.n * sizeof *e.samples);
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 64;
        entry *ne = realloc(f->e, (size_t)cap * sizeof *ne);
        if (ne)
            f->e = ne;
        cJSON **nr = realloc(f->recs, (size_t)cap * sizeof *nr);
        if (nr)
            f->recs = nr;
        if (ne && nr)
            f->cap = cap;
    }
    if (!e.samples || f->n == f->cap) {
        fprintf(err, "einsum-bench: compare: out of memory\n");
        free(e.samples);
        cJSON_Delete(rec);
        return -1;
    }
    int k = 0;
    for (const cJSON *v = s->child; v; v = v->next, k++) {
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0)) {
            fprintf(err, "einsum-bench: compare: %s:%ld: %s: samples_ns[%d] "
                    "is not a positive number\n", f->file, line, e.key, k);
            free(e.samples);
            cJSON_Delete(rec);
            return -1;
        }
        e.samples[k] = v->valuedouble;
    }
    f->recs[f->n] = rec;
    f->e[f->n++] = e;
    return 0;
}

static int load_file(record_file *f, const char *file, FILE *err)
{
    memset(f, 0, sizeof *f);
    f->file = file;
    FILE *in = fopen(file, "r");
    if (!in) {
        fprintf(err, "einsum-bench: compare: %s: cannot open (%s)\n", file,
                strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0;
    long line = 0;
    int rc = 0;
    while (!rc && getline(&buf, &cap, in) > 0) {
        line++;
        if (strspn(buf, " \t\r\n") == strlen(buf))
            continue;
        cJSON *rec = cJSON_Parse(buf);
        const char *type = rec ? str_field(rec, "type") : NULL;
        if (!rec || !cJSON_IsObject(rec) || !type) {
            fprintf(err, "einsum-bench: compare: %s:%ld: not a JSON record "
                    "with a \"type\"\n", file, line);
            cJSON_Delete(rec);
            rc = -1;
        } else if (strcmp(type, "measurement") == 0) {
            rc = add_measurement(f, rec, line, err);
        } else if (strcmp(type, "run") == 0 && !f->run) {
            f->run = rec;
        } else {
            cJSON_Delete(rec);
        }
    }
    free(buf);
    fclose(in);
    return rc;
}

/* ---- output ------------------------------------------------------------ */

/* Run-record fields that make two files' times not comparable. */
static const char *const context_keys[] = {
    "hostname", "cpu_model", "online_cpus", "blas_core", "blas_config",
    "blas_threads", "git_commit", "compiler", "cflags", "threads", "fill",
    "warmups", "samples", "options", "env", NULL};

/* Options that say where output goes, not how the times were taken. */
static int output_option(const char *name)
{
    static const char *const names[] = {"json", "export-csv",
                                        "export-markdown", "save-output",
                                        "filter", "list", NULL};
    for (int k = 0; names[k]; k++)
        if (strcmp(names[k], name) == 0)
            return 1;
    return 0;
}

static void warn_differs(const char *what, const cJSON *x, const cJSON *y,
                         FILE *err)
{
    char *xs = x ? cJSON_PrintUnformatted(x) : NULL;
    char *ys = y ? cJSON_PrintUnformatted(y) : NULL;
    fprintf(err, "einsum-bench: compare: warning: %s differs: BASE %.200s, "
            "NEW %.200s\n", what, xs ? xs : "(absent)", ys ? ys : "(absent)");
    free(xs);
    free(ys);
}

/* Members of two objects one by one ("options.no-fuse differs ..."). */
static void warn_members(const char *key, const cJSON *x, const cJSON *y,
                         FILE *err)
{
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *from = pass ? y : x, *other = pass ? x : y;
        for (const cJSON *m = from->child; m; m = m->next) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(other, m->string);
            if ((pass && o) || (o && cJSON_Compare(m, o, 1)) ||
                (strcmp(key, "options") == 0 && output_option(m->string)))
                continue;
            char what[160];
            snprintf(what, sizeof what, "%s.%s", key, m->string);
            warn_differs(what, pass ? o : m, pass ? m : o, err);
        }
    }
}

static void warn_context(const record_file *a, const record_file *b,
                         FILE *err)
{
    if (!a->run || !b->run) {
        fprintf(err, "einsum-bench: compare: warning: %s has no run record: "
                "cannot tell what else differs\n", a->run ? b->file : a->file);
        return;
    }
    for (int k = 0; context_keys[k]; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a->run,
                                                          context_keys[k]);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b->run,
                                                          context_keys[k]);
        if ((!x && !y) || (x && y && cJSON_Compare(x, y, 1)))
            continue;
        if (cJSON_IsObject(x) && cJSON_IsObject(y))
            warn_members(context_keys[k], x, y, err);
        else
            warn_differs(context_keys[k], x, y, err);
    }
}

static void fmt_bound(char *buf, size_t size, double v)
{
    if (isfinite(v) && v > 0)
        snprintf(buf, size, "%.3f", v);
    else
        snprintf(buf, size, "-");
}

static void print_header(FILE *out, int markdown)
{
    if (markdown)
        fprintf(out, "| Backend | Instance | Strategy | Mode | Base (ms) | "
                "New (ms) | NEW/BASE | 95%% interval | Verdict |\n"
                "|---|---|---|---|---:|---:|---:|---|---|\n");
    else
        fprintf(out, "%-12s %-44s %-10s %-6s %11s %11s %8s %17s %s\n",
                "Backend", "Instance", "Strategy", "Mode", "Base (ms)",
                "New (ms)", "NEW/BASE", "95% interval", "Verdict");
}

static void print_row(FILE *out, int markdown, const entry *e,
                      const eb_ratio *r, double base_ms, double new_ms)
{
    char lo[32], hi[32], iv[80];
    fmt_bound(lo, sizeof lo, r->lo);
    fmt_bound(hi, sizeof hi, r->hi);
    snprintf(iv, sizeof iv, "[%s, %s]", lo, hi);
    if (markdown)
        fprintf(out, "| %s | %s | %s | %s | %.3f | %.3f | %.3f | %s | %s |\n",
                e->backend, e->instance, e->strategy, e->mode, base_ms, new_ms,
                r->ratio, iv, eb_verdict_name(r->verdict));
    else
        fprintf(out, "%-12s %-44s %-10s %-6s %11.3f %11.3f %8.3f %17s %s\n",
                e->backend, e->instance, e->strategy, e->mode, base_ms, new_ms,
                r->ratio, iv, eb_verdict_name(r->verdict));
}

static double median_ms(const entry *e)
{
    double *v = malloc((size_t)e->n * sizeof *v);
    if (!v)
        return NAN;
    memcpy(v, e->samples, (size_t)e->n * sizeof *v);
    double m = median_of(v, e->n) / 1e6;
    free(v);
    return m;
}

int eb_compare_files(const char *base, const char *new_,
                     const eb_compare_opts *o, FILE *out, FILE *err)
{
    record_file a, b;
    int la = load_file(&a, base, err);
    int lb = la ? 0 : load_file(&b, new_, err);
    if (la || lb) {
        file_free(&a);
        if (!la)
            file_free(&b);
        return EXIT_USAGE;
    }
    warn_context(&a, &b, err);
    int counts[3] = {0, 0, 0}, matched = 0, over = 0, rc = 0;
    double log_sum = 0;
    for (int k = 0; k < a.n && !rc; k++) {
        int j = find_entry(&b, a.e[k].key);
        if (j < 0)
            continue;
        eb_ratio r;
        if (eb_compare_samples(a.e[k].samples, a.e[k].n, b.e[j].samples,
                               b.e[j].n, 0.95, &r)) {
            fprintf(err, "einsum-bench: compare: out of memory\n");
            rc = EXIT_USAGE;
            break;
        }
        const char *da = str_field(a.recs[k], "dtype"),
                   *db = str_field(b.recs[j], "dtype");
        if (da && db && strcmp(da, db) != 0)
            fprintf(err, "einsum-bench: compare: note: %s: measured in %s "
                    "in BASE, %s in NEW (the ratio compares dtypes)\n",
                    a.e[k].key, da, db);
        if (!matched++)
            print_header(out, o->markdown);
        b.e[j].matched = 1;
        print_row(out, o->markdown, &a.e[k], &r, median_ms(&a.e[k]),
                  median_ms(&b.e[j]));
        counts[r.verdict]++;
        log_sum += log(r.ratio);
        if (o->fail_above > 0 && r.lo > o->fail_above)
            over++;
    }
    if (!rc && matched) {
        fprintf(out, "%sgeometric mean of NEW/BASE: %.3f over %d measurements"
                " (%d faster, %d slower, %d inconclusive at 95%%)\n",
                o->markdown ? "\n" : "", exp(log_sum / matched), matched,
                counts[EB_FASTER], counts[EB_SLOWER], counts[EB_INCONCLUSIVE]);
    } else if (!rc) {
        fprintf(err, "einsum-bench: compare: %s and %s share no measurement "
                "(backend, instance, strategy and mode with samples)\n", base,
                new_);
        rc = EXIT_USAGE;
    }
    if (!rc && (a.n > matched || b.n > matched))
        fprintf(err, "einsum-bench: compare: note: %d measurements only in "
                "BASE, %d only in NEW\n", a.n - matched, b.n - matched);
    if (a.duplicates || b.duplicates)
        fprintf(err, "einsum-bench: compare: note: a measurement repeated in "
                "one file counts once (the first): %d in BASE, %d in NEW\n",
                a.duplicates, b.duplicates);
    if (!rc && over) {
        fprintf(err, "einsum-bench: compare: %d measurement%s slower than "
                "%.3gx with 95%% confidence (--fail-above)\n", over,
                over == 1 ? "" : "s", o->fail_above);
        rc = EXIT_FAIL;
    }
    file_free(&a);
    file_free(&b);
    return rc;
}

static const char compare_usage[] =
    "usage: einsum-bench compare [options] BASE.jsonl NEW.jsonl\n"
    "\n"
    "NEW/BASE ratios of the medians of every measurement (backend, instance,\n"
    "strategy, mode) present in both record files (records that reuse\n"
    "another strategy's measurement are left out), with a distribution-free\n"
    "95% interval (Hodges-Lehmann on log times, exact Mann-Whitney bounds)\n"
    "and a verdict: faster or slower when the whole interval is below or\n"
    "above 1, inconclusive otherwise. Warns on stderr when the machine,\n"
    "BLAS, commit, threads or options of the two runs differ.\n"
    "\n"
    "options:\n"
    "  --fail-above R               exit 1 when a measurement is slower\n"
    "                               than R times BASE with 95% confidence\n"
    "                               (the interval's low end is above R)\n"
    "  --markdown                   print a Markdown table\n"
    "\n"
    "exit status: 0 ok, 1 --fail-above tripped, 2 usage or input error\n";

#define usage_error(...) \
    eb_arg_fail(EXIT_USAGE, "compare", "compare", __VA_ARGS__)

int eb_cmd_compare(int argc, char **argv)
{
    eb_compare_opts o = {0, 0};
    const char *files[2];
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(compare_usage, stdout);
            return 0;
        }
        if (strcmp(a, "--markdown") == 0) {
            o.markdown = 1;
        } else if ((v = eb_arg_value(argc, argv, &i, "--fail-above"))) {
            char *end;
            errno = 0;
            o.fail_above = strtod(v, &end);
            if (errno || end == v || *end || !(o.fail_above > 0) ||
                !isfinite(o.fail_above))
                return usage_error("--fail-above: '%s' is not a ratio > 0",
                                   v);
        } else if (a[0] == '-' && a[1]) {
            static const char *const known[] = {"--fail-above", "--markdown",
                                                "--help"};
            const char *near = eb_arg_closest(a, known, 3, sizeof known[0]);
            if (near)
                return usage_error("unknown option '%s' (did you mean %s?)",
                                   a, near);
            return usage_error("unknown option '%s'", a);
        } else if (nfiles == 2) {
            return usage_error("more than two files ('%s')", a);
        } else {
            files[nfiles++] = a;
        }
    }
    if (nfiles != 2)
        return usage_error("%s", "give BASE.jsonl and NEW.jsonl");
    return eb_compare_files(files[0], files[1], &o, stdout, stderr);
}
