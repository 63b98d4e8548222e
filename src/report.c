/* report: the human table and the JSON-lines records. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "recfile.h"

/* ---- table -------------------------------------------------------------- */

/* median / roofline, or NaN when either is missing. */
static double roofline_ratio(const eb_record *r)
{
    if (!r->has_stats || !r->has_roofline || !(r->roofline_ms > 0))
        return NAN;
    return r->stats.median_ns / 1e6 / r->roofline_ms;
}


typedef struct {
    char *instance, *strategy, *mode, *status, *error, *reused;
    char *dtype, *file_dtype;   /* measured, and as the file says */
    char *check;    /* "check passed (naive, 3e-16)" for check-only rows */
    int tensors, has_stats;
    int one_thread; /* ran on the caller alone at a budget of more */
    double log10_flops, log2_size, median_ms, iqr_ms, compile_ms;
    double x_roofline;  /* median / roofline bound; NaN if unknown */
} row;

typedef struct {
    FILE *f;
    eb_run_info info;
    int has_info;
    row *rows;
    int n, cap;
    int mixed_dtypes;   /* the section being printed has several dtypes */
} table_ctx;

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static int table_begin(void *vctx, const eb_run_info *info)
{
    table_ctx *t = vctx;
    t->info = *info;
    t->has_info = 1;
    return 0;
}

static int table_measurement(void *vctx, const eb_record *r)
{
    table_ctx *t = vctx;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 32;
        row *p = realloc(t->rows, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        t->rows = p;
        t->cap = cap;
    }
    row *w = &t->rows[t->n++];
    memset(w, 0, sizeof *w);
    w->instance = dup_or_null(r->instance);
    w->strategy = dup_or_null(r->strategy ? r->strategy : "-");
    w->mode = dup_or_null(r->mode ? r->mode : "-");
    w->status = dup_or_null(r->status);
    w->error = dup_or_null(r->error);
    w->reused = dup_or_null(r->reused_from);
    w->dtype = dup_or_null(r->dtype ? r->dtype : "float64");
    w->file_dtype = dup_or_null(r->file_dtype ? r->file_dtype : w->dtype);
    w->tensors = r->num_tensors;
    w->has_stats = r->has_stats;
    w->one_thread = r->has_stats && r->threads > 1 && r->engine_threads == 1;
    if (r->has_check && r->check_status) {
        char buf[160];
        snprintf(buf, sizeof buf, "check %s (%s, max_rel_err %.2g)",
                 r->check_status, r->check_ref ? r->check_ref : "-",
                 r->max_rel_err);
        w->check = dup_or_null(buf);
    }
    w->log10_flops = r->log10_flops;
    w->log2_size = r->log2_size;
    w->median_ms = r->has_stats ? r->stats.median_ns / 1e6 : NAN;
    w->iqr_ms = r->has_stats ? r->stats.iqr_ns / 1e6 : NAN;
    w->compile_ms = r->compile_ms;
    w->x_roofline = roofline_ratio(r);
    return 0;
}

static int same_section(const row *a, const row *b)
{
    return strcmp(a->strategy, b->strategy) == 0 &&
           strcmp(a->mode, b->mode) == 0;
}

/* "Dtype: float32 (--dtype; the files say float64)", or for a section of several dtypes
 * "Dtype: per instance" with a footnote per row (print_notes). Words only:
 * no parser may take the line for a row. */
static void print_dtype(table_ctx *t, int first, const char *done)
{
    const row *a = &t->rows[first];
    int mixed = 0;
    for (int b = first; b < t->n && !mixed; b++)
        mixed = !done[b] && same_section(a, &t->rows[b]) &&
                (strcmp(a->dtype, t->rows[b].dtype) != 0 ||
                 strcmp(a->file_dtype, t->rows[b].file_dtype) != 0);
    t->mixed_dtypes = mixed;
    if (mixed)
        fprintf(t->f, "Dtype: per instance (see the notes below)\n");
    else if (strcmp(a->dtype, a->file_dtype) != 0)
        fprintf(t->f, "Dtype: %s (--dtype; the files say %s)\n", a->dtype,
                a->file_dtype);
    else
        fprintf(t->f, "Dtype: %s\n", a->dtype);
}

/*
 * The layout of the public suites' text logs (DESIGN 5.2), so that their
 * parsers (tenferro-einsum-benchmark scripts/format_results.py) read it:
 * a section per mode and strategy starts "Mode: <mode> / Strategy: <s>";
 * header lines follow, written so that no parser takes them for a row
 * (no whitespace-separated number among their tokens); then the column
 * line; rows start with Instance Tensors log10FLOPS log2SIZE, then the
 * extra single-token column xRoofline, and end with Median IQR Compile; a
 * row that has no times has SKIP as its fifth field and only words after
 * it. Marks (a reused path, an error's message) go to footnotes that start
 * with "*" and end in words.
 */
static void print_header(table_ctx *t, const char *strategy, const char *mode,
                         int first, const char *done)
{
    const eb_run_info *i = &t->info;
    fprintf(t->f, "\nMode: %s / Strategy: %s\n", mode, strategy);
    fprintf(t->f, "Backend: einsum-bench\n");
    fprintf(t->f, "Threads: threads=%d, openblas_threads=%d", i->threads,
            i->sys ? i->sys->blas_threads : -1);
    for (int k = 0; i->sys && k < i->sys->num_env; k++)
        if (i->sys->env[k].is_set && strstr(i->sys->env[k].name, "THREADS"))
            fprintf(t->f, ", %s=%s", i->sys->env[k].name,
                    i->sys->env[k].value);
    fprintf(t->f, "\nSamples: warmup=%d, samples=%d, fill=%s, times in ms\n",
            i->warmups, i->samples, i->fill ? i->fill : "-");
    print_dtype(t, first, done);
    if (i->calibration) {
        /* F is float64's; F_<dtype> the others' that are known. */
        const eb_rates *r = &i->calibration->rates;
        fprintf(t->f, "Roofline: F=%.2fGFLOP/s, ", r->gflops[EB_F64]);
        for (int dt = 1; dt < EB_DTYPE_COUNT; dt++)
            if (r->gflops[dt] > 0)
                fprintf(t->f, "F_%s=%.2fGFLOP/s, ",
                        eb_dtype_name((eb_dtype)dt), r->gflops[dt]);
        fprintf(t->f, "BW=%.2fGB/s (calibration %s), xRoofline is the median "
                "over the sum of the steps' bounds\n", r->gbs,
                i->calibration->source);
    } else
        fprintf(t->f, "Roofline: no calibration, xRoofline not known\n");
    fprintf(t->f, "%-52s %7s %10s %8s %9s %12s %10s %12s\n", "Instance",
            "Tensors", "log10FLOPS", "log2SIZE", "xRoofline", "Median (ms)",
            "IQR (ms)", "Compile (ms)");
}

/* Why a row has no times, in words only (digits would look like data). */
static const char *skip_reason(const row *w)
{
    /* interrupted and timeout keep their samples in the record, but a
     * parser must not take a partial measurement for a result. */
    if (strcmp(w->status, "skipped") == 0 ||
        strcmp(w->status, "interrupted") == 0 ||
        strcmp(w->status, "timeout") == 0)
        return w->status;
    if (w->error && strncmp(w->error, "check", 5) == 0)
        return "check failed";
    return "error";
}

static void print_row(FILE *f, const row *w)
{
    fprintf(f, "%-52s %7d %10.4f %8.4f", w->instance, w->tensors,
            w->log10_flops, w->log2_size);
    if (strcmp(w->status, "ok") != 0)
        fprintf(f, " SKIP %s\n", skip_reason(w));
    else if (!w->has_stats)
        fprintf(f, " %s\n", w->check ? w->check : "check");
    else if (isfinite(w->x_roofline))
        fprintf(f, " %9.2f %12.3f %10.3f %12.3f\n", w->x_roofline,
                w->median_ms, w->iqr_ms, w->compile_ms);
    else
        fprintf(f, " %9s %12.3f %10.3f %12.3f\n", "-", w->median_ms,
                w->iqr_ms, w->compile_ms);
}

/* Footnotes of a section: reused paths and errors, each ending in words. */
static void print_notes(FILE *f, const row *w, int mixed_dtypes)
{
    if (mixed_dtypes && strcmp(w->dtype, w->file_dtype) != 0)
        fprintf(f, "* %s: measured in %s, the file says %s\n", w->instance,
                w->dtype, w->file_dtype);
    else if (mixed_dtypes)
        fprintf(f, "* %s: measured in %s\n", w->instance, w->dtype);
    if (w->one_thread)
        fprintf(f, "* %s: ran on one thread, its whole work too small to "
                "gain from splitting (engine_threads in the record)\n",
                w->instance);
    if (w->reused)
        fprintf(f, "* %s: same path as %s, measured once and reported for "
                "both\n", w->instance, w->reused);
    if (strcmp(w->status, "ok") != 0)
        fprintf(f, "* %s: %s: %s (the record has the details)\n",
                w->instance, w->status, w->error ? w->error : "no message");
}

static int table_finish(void *vctx)
{
    table_ctx *t = vctx;
    /* Sections in order of first appearance of (mode, strategy). */
    char *done = calloc((size_t)(t->n ? t->n : 1), 1);
    if (!done)
        return -1;
    for (int a = 0; a < t->n; a++) {
        if (done[a])
            continue;
        print_header(t, t->rows[a].strategy, t->rows[a].mode, a, done);
        for (int b = a; b < t->n; b++)
            if (!done[b] && same_section(&t->rows[a], &t->rows[b]))
                print_row(t->f, &t->rows[b]);
        for (int b = a; b < t->n; b++)
            if (!done[b] && same_section(&t->rows[a], &t->rows[b])) {
                print_notes(t->f, &t->rows[b], t->mixed_dtypes);
                done[b] = 1;
            }
    }
    free(done);
    fflush(t->f);
    return ferror(t->f) ? -1 : 0;
}

static void table_destroy(void *vctx)
{
    table_ctx *t = vctx;
    if (!t)
        return;
    for (int k = 0; k < t->n; k++) {
        row *w = &t->rows[k];
        free(w->instance);
        free(w->strategy);
        free(w->mode);
        free(w->status);
        free(w->error);
        free(w->reused);
        free(w->dtype);
        free(w->file_dtype);
        free(w->check);
    }
    free(t->rows);
    free(t);
}

eb_status eb_report_table(FILE *f, eb_reporter *out, eb_error *err)
{
    table_ctx *t = calloc(1, sizeof *t);
    if (!t)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    t->f = f;
    *out = (eb_reporter){t, table_begin, table_measurement, table_finish,
                         table_destroy};
    return EB_OK;
}

/* ---- JSON lines --------------------------------------------------------- */

typedef struct {
    eb_recfile *rf;
    eb_jw *w;
} jsonl_ctx;

/* The built record as one line, whole or not at all (recfile.h). */
static int jsonl_write(jsonl_ctx *j)
{
    eb_error err;
    if (!eb_jw_ok(j->w))
        return -1;
    if (eb_recfile_write(j->rf, eb_jw_text(j->w), eb_jw_len(j->w), &err)) {
        fprintf(stderr, "einsum-bench: --json: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int jsonl_begin(void *vctx, const eb_run_info *i)
{
    jsonl_ctx *j = vctx;
    eb_jw_reset(j->w);
    eb_jw_obj_begin(j->w, NULL);
    eb_jw_str(j->w, "type", "run");
    eb_jw_str(j->w, "backend", "einsum-bench");
    eb_jw_str(j->w, "command", i->command);
    eb_jw_str(j->w, "modes", i->modes);
    eb_jw_str(j->w, "strategies", i->strategies);
    eb_jw_str(j->w, "fill", i->fill);
    eb_jw_int(j->w, "threads", i->threads);
    eb_jw_int(j->w, "warmups", i->warmups);
    eb_jw_int(j->w, "samples", i->samples);
    eb_jw_bool(j->w, "reexec", i->reexec);
    if (i->argv) {
        eb_jw_arr_begin(j->w, "argv");
        for (int k = 0; k < i->argc; k++)
            eb_jw_str(j->w, NULL, i->argv[k]);
        eb_jw_arr_end(j->w);
    }
    if (i->options) {
        eb_jw_obj_begin(j->w, "options");
        for (int k = 0; k < i->num_options; k++) {
            const eb_opt_value *o = &i->options[k];
            if (o->is_flag)
                eb_jw_bool(j->w, o->name, o->value != NULL);
            else
                eb_jw_str(j->w, o->name, o->value);
        }
        eb_jw_obj_end(j->w);
    }
    if (i->sys)
        eb_sysinfo_json(i->sys, j->w);
    eb_calib_json(i->calibration, j->w, "calibration");
    eb_jw_obj_end(j->w);
    return jsonl_write(j);
}

static void ms(eb_jw *w, const char *key, int has, double ns)
{
    if (has)
        eb_jw_num(w, key, ns / 1e6);
    else
        eb_jw_null(w, key);
}

static void int_array(eb_jw *w, const char *key, const int64_t *v, int n)
{
    if (!v) {
        eb_jw_null(w, key);
        return;
    }
    eb_jw_arr_begin(w, key);
    for (int k = 0; k < n; k++)
        eb_jw_int(w, NULL, v[k]);
    eb_jw_arr_end(w);
}

static void jsonl_stats(eb_jw *w, const eb_record *r)
{
    int h = r->has_stats;
    int_array(w, "samples_ns", h ? r->samples_ns : NULL, r->samples);
    ms(w, "median_ms", h, r->stats.median_ns);
    ms(w, "iqr_ms", h, r->stats.iqr_ns);
    ms(w, "min_ms", h, r->stats.min_ns);
    ms(w, "max_ms", h, r->stats.max_ns);
    ms(w, "mean_ms", h, r->stats.mean_ns);
    ms(w, "mad_ms", h, r->stats.mad_ns);
    if (h)
        eb_jw_num(w, "compile_ms", r->compile_ms);
    else
        eb_jw_null(w, "compile_ms");
    int_array(w, "minflt", h ? r->minflt : NULL, r->samples);
    if (h && r->minflt) {
        int64_t *tmp = malloc((size_t)r->samples * sizeof *tmp);
        eb_stats s;
        if (tmp) {
            eb_stats_compute(r->minflt, r->samples, tmp, &s);
            eb_jw_num(w, "minflt_median", s.median_ns);
            free(tmp);
        }
    } else {
        eb_jw_null(w, "minflt_median");
    }
}

/* How quiet the machine was; marks say what makes the times suspect. */
static void jsonl_noise(eb_jw *w, const eb_record *r)
{
    if (!r->has_noise) {
        eb_jw_null(w, "load_avg");
        eb_jw_null(w, "others_cpus");
        eb_jw_null(w, "noise");
        return;
    }
    if (isnan(r->noise.load1))
        eb_jw_null(w, "load_avg");
    else
        eb_jw_num(w, "load_avg", r->noise.load1);
    if (isnan(r->noise.others_cpus))
        eb_jw_null(w, "others_cpus");
    else
        eb_jw_num(w, "others_cpus", r->noise.others_cpus);
    eb_jw_arr_begin(w, "noise");
    for (int k = 0; k < r->num_marks; k++)
        eb_jw_str(w, NULL, r->marks[k]);
    eb_jw_arr_end(w);
}

static void jsonl_costs(eb_jw *w, const eb_record *r)
{
    int h = r->has_stats;
    eb_jw_num(w, "flops", r->flops);
    eb_jw_num(w, "log10_flops", r->log10_flops);
    eb_jw_num(w, "log2_size", r->log2_size);
    eb_jw_num(w, "stored_log10_flops", r->stored_log10_flops);
    eb_jw_num(w, "stored_log2_size", r->stored_log2_size);
    if (h && r->stats.median_ns > 0)
        eb_jw_num(w, "gflops", r->flops / r->stats.median_ns);
    else
        eb_jw_null(w, "gflops");
    if (h) {
        eb_jw_int(w, "peak_bytes", r->peak_bytes);
        eb_jw_int(w, "gemm_calls", r->gemm_calls);
        eb_jw_int(w, "blas_calls", r->blas_calls);
        eb_jw_int(w, "permuted_elems", r->permuted_elems);
        eb_jw_int(w, "fused_groups", r->fused_groups);
        eb_jw_int(w, "engine_threads", r->engine_threads);
        eb_jw_int(w, "lanes_at", r->lanes_at);
    } else {
        eb_jw_null(w, "peak_bytes");
        eb_jw_null(w, "gemm_calls");
        eb_jw_null(w, "blas_calls");
        eb_jw_null(w, "permuted_elems");
        eb_jw_null(w, "fused_groups");
        eb_jw_null(w, "engine_threads");
        eb_jw_null(w, "lanes_at");
    }
}

static void num_or_null(eb_jw *w, const char *key, int has, double v)
{
    if (has && isfinite(v))
        eb_jw_num(w, key, v);
    else
        eb_jw_null(w, key);
}

static void jsonl_roofline(eb_jw *w, const eb_record *r)
{
    int h = r->has_roofline;
    num_or_null(w, "roofline_ms", h, r->roofline_ms);
    num_or_null(w, "roofline_gflops", h, r->roofline_gflops);
    num_or_null(w, "roofline_gbs", h, r->roofline_gbs);
    num_or_null(w, "roofline_ratio", h, roofline_ratio(r));
}

static int jsonl_measurement(void *vctx, const eb_record *r)
{
    jsonl_ctx *j = vctx;
    eb_jw *w = j->w;
    eb_jw_reset(w);
    eb_jw_obj_begin(w, NULL);
    eb_jw_str(w, "type", "measurement");
    eb_jw_str(w, "backend", "einsum-bench");
    eb_jw_str(w, "instance", r->instance);
    eb_jw_str(w, "instance_file", r->instance_file);
    eb_jw_str(w, "dtype", r->dtype);
    eb_jw_str(w, "file_dtype", r->file_dtype);
    eb_jw_str(w, "strategy", r->strategy);
    eb_jw_str(w, "mode", r->mode);
    eb_jw_str(w, "status", r->status);
    eb_jw_str(w, "error", r->error);
    eb_jw_str(w, "path_source", r->path_source);
    eb_jw_str(w, "path_digest", r->path_digest);
    eb_jw_str(w, "reused_from", r->reused_from);
    eb_jw_str(w, "instance_sha256", r->instance_sha256);
    eb_jw_str(w, "paths_sha256", r->paths_sha256);
    jsonl_noise(w, r);
    eb_jw_int(w, "num_tensors", r->num_tensors);
    eb_jw_int(w, "threads", r->threads);
    eb_jw_int(w, "openblas_threads", r->openblas_threads);
    eb_jw_int(w, "warmups", r->warmups);
    eb_jw_int(w, "samples", r->samples);
    jsonl_stats(w, r);
    jsonl_costs(w, r);
    jsonl_roofline(w, r);
    if (r->has_check) {
        eb_jw_obj_begin(w, "check");
        eb_jw_num(w, "max_rel_err", r->max_rel_err);
        eb_jw_str(w, "reference", r->check_ref);
        eb_jw_str(w, "status", r->check_status);
        eb_jw_obj_end(w);
    } else {
        eb_jw_null(w, "check");
    }
    eb_jw_obj_end(w);
    return jsonl_write(j);
}

static int jsonl_finish(void *vctx)
{
    (void)vctx; /* every record went out with its own write(2) */
    return 0;
}

static void jsonl_destroy(void *vctx)
{
    jsonl_ctx *j = vctx;
    if (!j)
        return;
    eb_recfile_close(j->rf);
    eb_jw_destroy(j->w);
    free(j);
}

eb_status eb_report_jsonl(const char *file, eb_reporter *out, eb_error *err)
{
    jsonl_ctx *j = calloc(1, sizeof *j);
    if (!j)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    j->w = eb_jw_create(0);
    eb_status st = j->w ? eb_recfile_open(file, &j->rf, err)
                        : eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    if (st) {
        jsonl_destroy(j);
        return st;
    }
    *out = (eb_reporter){j, jsonl_begin, jsonl_measurement, jsonl_finish,
                         jsonl_destroy};
    return EB_OK;
}
