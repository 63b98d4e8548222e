/* jsonw: buffer-backed JSON writer with optional pretty printing. */
#include "jsonw.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { JW_MAX_DEPTH = 64 };

struct eb_jw {
    char *buf;
    size_t len, cap;
    int indent;
    int depth;
    int failed;
    int count[JW_MAX_DEPTH];  /* items written at each depth */
    int inline_at;            /* depth at which compact mode began, or -1 */
};

eb_jw *eb_jw_create(int indent)
{
    eb_jw *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->indent = indent;
    w->inline_at = -1;
    return w;
}

void eb_jw_destroy(eb_jw *w)
{
    if (!w)
        return;
    free(w->buf);
    free(w);
}

void eb_jw_reset(eb_jw *w)
{
    w->len = 0;
    w->depth = 0;
    w->failed = 0;
    w->count[0] = 0;
    w->inline_at = -1;
    if (w->buf)
        w->buf[0] = '\0';
}

static void put(eb_jw *w, const char *s, size_t n)
{
    if (w->failed)
        return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n + 1)
            cap *= 2;
        char *p = realloc(w->buf, cap);
        if (!p) {
            w->failed = 1;
            return;
        }
        w->buf = p;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void puts_(eb_jw *w, const char *s) { put(w, s, strlen(s)); }

static void putf(eb_jw *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void putf(eb_jw *w, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp)
        w->failed = 1;
    else
        put(w, tmp, (size_t)n);
}

static void newline(eb_jw *w)
{
    if (w->indent <= 0 || w->inline_at >= 0)
        return;
    put(w, "\n", 1);
    for (int i = 0; i < w->depth * w->indent; i++)
        put(w, " ", 1);
}

static void put_string(eb_jw *w, const char *s)
{
    put(w, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': puts_(w, "\\\""); break;
        case '\\': puts_(w, "\\\\"); break;
        case '\n': puts_(w, "\\n"); break;
        case '\r': puts_(w, "\\r"); break;
        case '\t': puts_(w, "\\t"); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                puts_(w, esc);
            } else {
                put(w, (const char *)p, 1);
            }
        }
    }
    put(w, "\"", 1);
}

/* Separator, indentation and key before a value. */
static void item(eb_jw *w, const char *key)
{
    if (w->depth > 0) {
        if (w->count[w->depth]++ > 0)
            put(w, w->inline_at >= 0 ? ", " : ",", w->inline_at >= 0 ? 2 : 1);
        newline(w);
    }
    if (key) {
        put_string(w, key);
        put(w, w->indent > 0 || w->inline_at >= 0 ? ": " : ":",
            w->indent > 0 || w->inline_at >= 0 ? 2 : 1);
    }
}

static void open(eb_jw *w, const char *key, const char *bracket)
{
    item(w, key);
    puts_(w, bracket);
    if (w->depth + 1 >= JW_MAX_DEPTH) {
        w->failed = 1;
        return;
    }
    w->depth++;
    w->count[w->depth] = 0;
}

static void close_(eb_jw *w, const char *bracket)
{
    if (w->depth == 0) {
        w->failed = 1;
        return;
    }
    int had = w->count[w->depth] > 0;
    w->depth--;
    if (had)
        newline(w);
    puts_(w, bracket);
    if (w->inline_at == w->depth)
        w->inline_at = -1;
}

void eb_jw_obj_begin(eb_jw *w, const char *key) { open(w, key, "{"); }
void eb_jw_obj_end(eb_jw *w) { close_(w, "}"); }
void eb_jw_arr_begin(eb_jw *w, const char *key) { open(w, key, "["); }
void eb_jw_arr_end(eb_jw *w) { close_(w, "]"); }

void eb_jw_arr_begin_inline(eb_jw *w, const char *key)
{
    open(w, key, "[");
    if (w->inline_at < 0)
        w->inline_at = w->depth - 1;
}

void eb_jw_str(eb_jw *w, const char *key, const char *val)
{
    item(w, key);
    if (val)
        put_string(w, val);
    else
        puts_(w, "null");
}

void eb_jw_num(eb_jw *w, const char *key, double val)
{
    item(w, key);
    if (!isfinite(val))
        puts_(w, "null");
    else
        putf(w, "%.17g", val);
}

void eb_jw_fixed(eb_jw *w, const char *key, double val, int decimals)
{
    item(w, key);
    if (!isfinite(val))
        puts_(w, "null");
    else
        putf(w, "%.*f", decimals, val);
}

void eb_jw_int(eb_jw *w, const char *key, int64_t val)
{
    item(w, key);
    putf(w, "%lld", (long long)val);
}

void eb_jw_bool(eb_jw *w, const char *key, int val)
{
    item(w, key);
    puts_(w, val ? "true" : "false");
}

void eb_jw_null(eb_jw *w, const char *key)
{
    item(w, key);
    puts_(w, "null");
}

const char *eb_jw_text(const eb_jw *w) { return w->buf ? w->buf : ""; }
size_t eb_jw_len(const eb_jw *w) { return w->len; }
int eb_jw_ok(const eb_jw *w) { return !w->failed && w->depth == 0; }

int eb_jw_write_line(const eb_jw *w, FILE *f)
{
    if (!eb_jw_ok(w))
        return -1;
    /* One buffer, one fwrite: the record lands whole or not at all. */
    char *line = malloc(w->len + 2);
    if (!line)
        return -1;
    memcpy(line, eb_jw_text(w), w->len);
    line[w->len] = '\n';
    size_t n = fwrite(line, 1, w->len + 1, f);
    free(line);
    return n == w->len + 1 && fflush(f) == 0 ? 0 : -1;
}

eb_status eb_jw_write_file(const eb_jw *w, const char *file, eb_error *err)
{
    size_t n = strlen(file) + 5;
    char *tmp = malloc(n);
    if (!tmp)
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    snprintf(tmp, n, "%s.tmp", file);
    eb_status st = EB_OK;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        st = eb_error_set(err, EB_ERR_IO, "%s: cannot create: %s", tmp,
                          strerror(errno));
    } else {
        int bad = eb_jw_write_line(w, f);
        bad |= fclose(f) != 0;
        if (bad || rename(tmp, file) != 0) {
            st = eb_error_set(err, EB_ERR_IO, "%s: cannot write: %s", file,
                              strerror(errno));
            remove(tmp);
        }
    }
    free(tmp);
    return st;
}
