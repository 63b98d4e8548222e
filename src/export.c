/* export: CSV and Markdown files of a run's measurements. */
#include "export.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *file;
    eb_export_kind kind;
    char *head;                 /* Markdown: the run's description */
    char *rows;                 /* the rows so far */
    size_t len, cap;
    int failed;                 /* out of memory on the way */
} export_ctx;

static void add(export_ctx *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add(export_ctx *x, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(x->rows ? x->rows + x->len : NULL,
                          x->rows ? x->cap - x->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            x->failed = 1;
            return;
        }
        if (x->rows && x->len + (size_t)n < x->cap) {
            x->len += (size_t)n;
            return;
        }
        size_t cap = (x->cap ? 2 * x->cap : 4096) + (size_t)n;
        char *p = realloc(x->rows, cap);
        if (!p) {
            x->failed = 1;
            return;
        }
        x->rows = p;
        x->cap = cap;
    }
}

/* A CSV field: quoted when it holds a comma, quote or line break. */
static void csv_field(export_ctx *x, const char *s, const char *sep)
{
    s = s ? s : "";
    if (!strpbrk(s, ",\"\r\n")) {
        add(x, "%s%s", s, sep);
        return;
    }
    add(x, "\"");
    for (; *s; s++) {
        if (*s == '"')
            add(x, "\"\"");
        else
            add(x, "%c", *s);
    }
    add(x, "\"%s", sep);
}

/* Markdown cells must not hold '|' or line breaks. */
static void md_cell(export_ctx *x, const char *s)
{
    add(x, " ");
    for (s = s ? s : ""; *s; s++) {
        if (*s == '|')
            add(x, "\\|");
        else
            add(x, "%c", *s == '\n' || *s == '\r' ? ' ' : *s);
    }
    add(x, " |");
}

static void marks_str(const eb_record *r, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < r->num_marks && len < size; k++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", k ? " " : "",
                                r->marks[k]);
}

static int export_begin(void *vctx, const eb_run_info *i)
{
    export_ctx *x = vctx;
    if (x->kind == EB_EXPORT_CSV) {
        add(x, "backend,instance,strategy,mode,status,median_ms,iqr_ms,"
               "min_ms,max_ms,mean_ms,compile_ms,samples,threads,"
               "log10_flops,log2_size,reused_from,noise,dtype\n");
        return x->failed ? -1 : 0;
    }
    char buf[1024];
    snprintf(buf, sizeof buf,
             "einsum-bench %s, commit %s, %s; %s (%d CPUs), %s; --mode %s, "
             "--threads %d, %d warmups, %d samples, fill %s\n\n",
             i->command, i->sys ? i->sys->git_commit : "unknown",
             i->sys ? i->sys->date : "unknown",
             i->sys ? i->sys->cpu_model : "unknown",
             i->sys ? i->sys->online_cpus : 0,
             i->sys ? i->sys->blas_config : "unknown", i->modes, i->threads,
             i->warmups, i->samples, i->fill);
    x->head = strdup(buf);
    add(x, "| Instance | Strategy | Mode | Dtype | Median (ms) | IQR (ms) | "
           "Compile (ms) | Status |\n|---|---|---|---|---:|---:|---:|---|\n");
    return !x->head || x->failed ? -1 : 0;
}

static int export_measurement(void *vctx, const eb_record *r)
{
    export_ctx *x = vctx;
    char med[32] = "", iqr[32] = "", mn[32] = "", mx[32] = "", mean[32] = "",
         comp[32] = "", marks[64];
    if (r->has_stats) {
        snprintf(med, sizeof med, "%.6f", r->stats.median_ns / 1e6);
        snprintf(iqr, sizeof iqr, "%.6f", r->stats.iqr_ns / 1e6);
        snprintf(mn, sizeof mn, "%.6f", r->stats.min_ns / 1e6);
        snprintf(mx, sizeof mx, "%.6f", r->stats.max_ns / 1e6);
        snprintf(mean, sizeof mean, "%.6f", r->stats.mean_ns / 1e6);
        snprintf(comp, sizeof comp, "%.6f", r->compile_ms);
    }
    marks_str(r, marks, sizeof marks);
    if (x->kind == EB_EXPORT_CSV) {
        csv_field(x, "einsum-bench", ",");
        csv_field(x, r->instance, ",");
        csv_field(x, r->strategy, ",");
        csv_field(x, r->mode, ",");
        csv_field(x, r->status, ",");
        add(x, "%s,%s,%s,%s,%s,%s,%d,%d,%.4f,%.4f,", med, iqr, mn, mx, mean,
            comp, r->samples, r->threads, r->log10_flops, r->log2_size);
        csv_field(x, r->reused_from, ",");
        csv_field(x, marks, ",");
        csv_field(x, r->dtype, "\n");
        return x->failed ? -1 : 0;
    }
    char status[160];
    if (strcmp(r->status, "ok") != 0)
        snprintf(status, sizeof status, "%s", r->status);
    else if (r->reused_from)
        snprintf(status, sizeof status, "ok (same path as %s)%s%s",
                 r->reused_from, marks[0] ? "; noisy: " : "", marks);
    else
        snprintf(status, sizeof status, "ok%s%s", marks[0] ? "; noisy: " : "",
                 marks);
    add(x, "|");
    md_cell(x, r->instance);
    md_cell(x, r->strategy);
    md_cell(x, r->mode);
    md_cell(x, r->dtype);
    if (r->has_stats)
        add(x, " %.3f | %.3f | %.3f |", r->stats.median_ns / 1e6,
            r->stats.iqr_ns / 1e6, r->compile_ms);
    else
        add(x, " - | - | - |");
    md_cell(x, status);
    add(x, "\n");
    return x->failed ? -1 : 0;
}

static int export_finish(void *vctx)
{
    export_ctx *x = vctx;
    if (x->failed)
        return -1;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", x->file);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "einsum-bench: %s: cannot write: %s\n", tmp,
                strerror(errno));
        return -1;
    }
    int ok = (!x->head || fputs(x->head, f) >= 0) &&
             fwrite(x->rows, 1, x->len, f) == x->len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, x->file) != 0) {
        fprintf(stderr, "einsum-bench: %s: cannot write: %s\n", x->file,
                strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

static void export_destroy(void *vctx)
{
    export_ctx *x = vctx;
    if (!x)
        return;
    free(x->head);
    free(x->rows);
    free(x);
}

eb_status eb_report_export(const char *file, eb_export_kind kind,
                           eb_reporter *out, eb_error *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return eb_error_set(err, EB_ERR_IO, "%s: cannot open for writing: %s",
                            tmp, strerror(errno));
    fclose(f);
    remove(tmp);
    export_ctx *x = calloc(1, sizeof *x);
    if (!x)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    x->file = file;
    x->kind = kind;
    *out = (eb_reporter){x, export_begin, export_measurement, export_finish,
                         export_destroy};
    return EB_OK;
}
