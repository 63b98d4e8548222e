/* npy: .npy header parsing (hostile input in mind) and numpy-exact writing. */
#include "npy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "infile.h"
#include "interrupt.h"

/* Data bytes are copied as they are: '<f8' is the host's double only here. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c assumes a little-endian host ('<f8' data is read as is)"
#endif

/* The type code after the byte-order character, per dtype. */
static const char *const npy_code[EB_DTYPE_COUNT] = {
    [EB_F64] = "f8", [EB_F32] = "f4", [EB_C128] = "c16", [EB_C64] = "c8"};

const char *eb_npy_descr(eb_dtype dt)
{
    static const char *const descr[EB_DTYPE_COUNT] = {
        [EB_F64] = "<f8", [EB_F32] = "<f4", [EB_C128] = "<c16",
        [EB_C64] = "<c8"};
    return descr[dt];
}

enum {
    NPY_MAGIC_BYTES = 6,
    NPY_ALIGN = 64,           /* numpy's ARRAY_ALIGN */
    NPY_GROWTH_DIGITS = 21,   /* numpy's GROWTH_AXIS_MAX_DIGITS (>= 1.24) */
    NPY_DESCR_BYTES = 32,     /* longest descr kept for comparison/messages */
    NPY_SHAPE_TEXT = 24 * EB_NPY_MAX_RANK + 8, /* "(d, d, ...)" */
};

static const char npy_magic[NPY_MAGIC_BYTES] = "\x93NUMPY";

typedef struct {
    char descr[NPY_DESCR_BYTES];
    int descr_long;           /* the string did not fit in descr */
    int fortran;
    int rank;
    int64_t dims[EB_NPY_MAX_RANK];
    int seen_descr, seen_fortran, seen_shape;
} npy_header;

/* A bounded cursor over the header text; err gets "file: field: ...". */
typedef struct {
    const char *s;
    size_t n, i;
    const char *file;
    eb_error *err;
} cursor;

/* Append to buf (size bytes, len used so far), truncating quietly. */
static void appendf(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void appendf(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = (size_t)n < size - *len ? *len + (size_t)n : size - 1;
}

/* Python tuple repr of a shape: "()", "(7,)", "(3, 4)". */
static void format_shape(char *buf, size_t size, const int64_t *dims,
                         int rank)
{
    size_t len = 0;
    buf[0] = '\0';
    appendf(buf, size, &len, "(");
    for (int a = 0; a < rank; a++)
        appendf(buf, size, &len, "%s%" PRId64, a ? ", " : "", dims[a]);
    appendf(buf, size, &len, rank == 1 ? ",)" : ")");
}

/* Copy s[0..n) for a message, replacing what is not printable ASCII. */
static void printable(char *out, size_t size, const char *s, size_t n)
{
    size_t k = 0;
    for (; k < n && k + 1 < size; k++)
        out[k] = (s[k] >= 0x20 && s[k] < 0x7f) ? s[k] : '?';
    out[k] = '\0';
}

/* Bytes of a compact array of this shape with elements of esize bytes, or
 * an error on a negative dimension or an overflow of size_t or int64_t. */
static eb_status shape_bytes(const char *file, const int64_t *dims, int rank,
                             size_t esize, size_t *bytes, eb_error *err)
{
    /* Once past INT64_MAX elems sticks at UINT64_MAX, unless a later zero
     * dimension makes the true product 0. */
    uint64_t elems = 1;
    for (int a = 0; a < rank; a++) {
        if (dims[a] < 0)
            return eb_error_set(err, EB_ERR_INVALID,
                                "%s: shape: dimension %d is negative (%" PRId64
                                ")", file, a, dims[a]);
        if (dims[a] != 0 && elems > (uint64_t)INT64_MAX / (uint64_t)dims[a])
            elems = UINT64_MAX;
        else
            elems *= (uint64_t)dims[a];
    }
    if (elems > (uint64_t)INT64_MAX / esize || elems > SIZE_MAX / esize) {
        char shape[NPY_SHAPE_TEXT];
        format_shape(shape, sizeof shape, dims, rank);
        return eb_error_set(err, EB_ERR_NOMEM,
                            "%s: shape: %s is too large to address", file,
                            shape);
    }
    *bytes = (size_t)elems * esize;
    return EB_OK;
}

/* ---- header dictionary parser ------------------------------------------ */

static eb_status syntax(cursor *c, const char *what)
{
    return eb_error_set(c->err, EB_ERR_PARSE,
                        "%s: header: %s at offset %zu (expected a dict like "
                        "{'descr': '<f8', 'fortran_order': False, "
                        "'shape': (3, 4), })", c->file, what, c->i);
}

static void skip_ws(cursor *c)
{
    while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' ||
                           c->s[c->i] == '\n' || c->s[c->i] == '\r' ||
                           c->s[c->i] == '\f' || c->s[c->i] == '\v'))
        c->i++;
}

static int peek(const cursor *c)
{
    return c->i < c->n ? (unsigned char)c->s[c->i] : -1;
}

/* Take the expected character after optional whitespace. */
static int take_char(cursor *c, char ch)
{
    skip_ws(c);
    if (peek(c) != ch)
        return 0;
    c->i++;
    return 1;
}

/* A Python string literal without escapes; sets *start and *len. */
static eb_status parse_string(cursor *c, const char **start, size_t *len)
{
    skip_ws(c);
    int q = peek(c);
    if (q != '\'' && q != '"')
        return syntax(c, "expected a quoted string");
    size_t from = ++c->i;
    while (c->i < c->n && c->s[c->i] != q)
        c->i++;
    if (c->i >= c->n)
        return syntax(c, "unterminated string");
    *start = c->s + from;
    *len = c->i - from;
    c->i++;
    return EB_OK;
}

static int take_word(cursor *c, const char *word)
{
    size_t n = strlen(word);
    if (c->n - c->i < n || memcmp(c->s + c->i, word, n) != 0)
        return 0;
    c->i += n;
    return 1;
}

static eb_status parse_bool(cursor *c, int *val)
{
    skip_ws(c);
    if (take_word(c, "False"))
        *val = 0;
    else if (take_word(c, "True"))
        *val = 1;
    else
        return eb_error_set(c->err, EB_ERR_PARSE,
                            "%s: fortran_order: not True or False at offset "
                            "%zu", c->file, c->i);
    return EB_OK;
}

/* One non-negative decimal dimension (Python 2's "3L" accepted). */
static eb_status parse_dim(cursor *c, int axis, int64_t *dim)
{
    skip_ws(c);
    if (peek(c) == '-')
        return eb_error_set(c->err, EB_ERR_PARSE,
                            "%s: shape: dimension %d is negative", c->file,
                            axis);
    if (peek(c) < '0' || peek(c) > '9')
        return syntax(c, "shape: expected a dimension");
    int64_t v = 0;
    while (peek(c) >= '0' && peek(c) <= '9') {
        int d = c->s[c->i++] - '0';
        if (v > (INT64_MAX - d) / 10)
            return eb_error_set(c->err, EB_ERR_PARSE,
                                "%s: shape: dimension %d is too large (more "
                                "than %" PRId64 ")", c->file, axis, INT64_MAX);
        v = v * 10 + d;
    }
    if (peek(c) == 'L' || peek(c) == 'l')
        c->i++;
    *dim = v;
    return EB_OK;
}

/* A tuple of dimensions: (), (5,), (3, 4), (3, 4,). */
static eb_status parse_shape(cursor *c, npy_header *h)
{
    if (!take_char(c, '('))
        return syntax(c, "shape: expected a tuple");
    h->rank = 0;
    if (take_char(c, ')'))
        return EB_OK;
    for (;;) {
        if (h->rank == EB_NPY_MAX_RANK)
            return eb_error_set(c->err, EB_ERR_UNSUPPORTED,
                                "%s: shape: more than %d dimensions", c->file,
                                EB_NPY_MAX_RANK);
        eb_status s = parse_dim(c, h->rank, &h->dims[h->rank]);
        if (s != EB_OK)
            return s;
        h->rank++;
        int comma = take_char(c, ',');
        if (take_char(c, ')')) {
            if (h->rank == 1 && !comma)
                return eb_error_set(c->err, EB_ERR_PARSE,
                                    "%s: shape: (%" PRId64 ") is not a tuple "
                                    "(expected (%" PRId64 ",))", c->file,
                                    h->dims[0], h->dims[0]);
            return EB_OK;
        }
        if (!comma)
            return syntax(c, "shape: expected ',' or ')'");
    }
}

static eb_status parse_descr(cursor *c, npy_header *h)
{
    skip_ws(c);
    if (peek(c) != '\'' && peek(c) != '"')
        return eb_error_set(c->err, EB_ERR_UNSUPPORTED,
                            "%s: descr: not a plain dtype string (a "
                            "structured dtype?) (expected a string such as "
                            "'<f8')", c->file);
    const char *s;
    size_t n;
    eb_status st = parse_string(c, &s, &n);
    if (st != EB_OK)
        return st;
    h->descr_long = n >= sizeof h->descr;
    if (h->descr_long)
        n = sizeof h->descr - 1;
    memcpy(h->descr, s, n);
    h->descr[n] = '\0';
    return EB_OK;
}

/* One "key: value" entry of the dict. */
static eb_status parse_entry(cursor *c, npy_header *h)
{
    const char *key;
    size_t n;
    eb_status s = parse_string(c, &key, &n);
    if (s != EB_OK)
        return s;
    char shown[40];
    printable(shown, sizeof shown, key, n);
    int *seen = n == 5 && !memcmp(key, "descr", 5)           ? &h->seen_descr
              : n == 13 && !memcmp(key, "fortran_order", 13) ? &h->seen_fortran
              : n == 5 && !memcmp(key, "shape", 5)           ? &h->seen_shape
                                                             : NULL;
    if (!seen)
        return eb_error_set(c->err, EB_ERR_PARSE,
                            "%s: header: unexpected key '%s' (expected "
                            "'descr', 'fortran_order', 'shape')", c->file,
                            shown);
    if (*seen)
        return eb_error_set(c->err, EB_ERR_PARSE,
                            "%s: header: key '%s' appears twice", c->file,
                            shown);
    *seen = 1;
    if (!take_char(c, ':'))
        return syntax(c, "expected ':' after a key");
    if (seen == &h->seen_descr)
        return parse_descr(c, h);
    if (seen == &h->seen_fortran)
        return parse_bool(c, &h->fortran);
    return parse_shape(c, h);
}

static eb_status parse_dict(cursor *c, npy_header *h)
{
    if (!take_char(c, '{'))
        return syntax(c, "expected '{'");
    while (!take_char(c, '}')) {
        if (c->i >= c->n)
            return syntax(c, "missing '}'");
        eb_status s = parse_entry(c, h);
        if (s != EB_OK)
            return s;
        if (!take_char(c, ',') && peek(c) != '}')
            return syntax(c, "expected ',' or '}'");
    }
    skip_ws(c);
    if (c->i != c->n)
        return syntax(c, "unexpected text after '}'");
    const char *missing = !h->seen_descr     ? "descr"
                        : !h->seen_fortran ? "fortran_order"
                        : !h->seen_shape   ? "shape"
                                           : NULL;
    if (missing)
        return eb_error_set(c->err, EB_ERR_PARSE,
                            "%s: header: missing key '%s'", c->file, missing);
    return EB_OK;
}

/* ---- reading ------------------------------------------------------------ */

static eb_status read_error(FILE *f, const char *file, const char *field,
                            eb_error *err)
{
    if (ferror(f))
        return eb_error_set(err, EB_ERR_IO, "%s: %s: read error: %s", file,
                            field, strerror(errno));
    return EB_OK;
}

/* Magic, version and header length; leaves f at the header text. */
static eb_status read_prelude(FILE *f, const char *file, uint32_t *hlen,
                              eb_error *err)
{
    unsigned char pre[NPY_MAGIC_BYTES + 2], len[4];
    size_t got = fread(pre, 1, sizeof pre, f);
    eb_status s = read_error(f, file, "magic", err);
    if (s != EB_OK)
        return s;
    if (got < NPY_MAGIC_BYTES || memcmp(pre, npy_magic, NPY_MAGIC_BYTES))
        return eb_error_set(err, EB_ERR_PARSE,
                            "%s: magic: not a .npy file (expected the bytes "
                            "\\x93NUMPY)", file);
    if (got < sizeof pre)
        return eb_error_set(err, EB_ERR_PARSE,
                            "%s: version: missing (truncated?)", file);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return eb_error_set(err, EB_ERR_UNSUPPORTED,
                            "%s: version: %d.%d is not supported (expected "
                            "1.0, 2.0 or 3.0)", file, major, minor);
    size_t width = major == 1 ? 2 : 4;
    if (fread(len, 1, width, f) != width)
        return eb_error_set(err, EB_ERR_PARSE,
                            "%s: header: length missing (truncated?)", file);
    *hlen = (uint32_t)len[0] | (uint32_t)len[1] << 8;
    if (width == 4)
        *hlen |= (uint32_t)len[2] << 16 | (uint32_t)len[3] << 24;
    if (*hlen > EB_NPY_MAX_HEADER_BYTES)
        return eb_error_set(err, EB_ERR_PARSE,
                            "%s: header: length %" PRIu32 " is over the limit "
                            "of %d bytes", file, *hlen,
                            EB_NPY_MAX_HEADER_BYTES);
    return EB_OK;
}

static eb_status read_header(FILE *f, const char *file, npy_header *h,
                             eb_error *err)
{
    uint32_t hlen = 0;
    eb_status s = read_prelude(f, file, &hlen, err);
    if (s != EB_OK)
        return s;
    char *text = malloc((size_t)hlen + 1);
    if (!text)
        return eb_error_set(err, EB_ERR_NOMEM, "%s: header: out of memory",
                            file);
    size_t got = fread(text, 1, hlen, f);
    if ((s = read_error(f, file, "header", err)) == EB_OK && got < hlen)
        s = eb_error_set(err, EB_ERR_PARSE,
                         "%s: header: length %" PRIu32 " but only %zu bytes "
                         "follow (truncated?)", file, hlen, got);
    if (s == EB_OK) {
        text[got] = '\0';
        memset(h, 0, sizeof *h);
        cursor c = {text, got, 0, file, err};
        s = parse_dict(&c, h);
    }
    free(text);
    return s;
}

/* The dtype a descr names ('<' or '=' and a code of npy_code; '>' sets
 * *big), or -1. */
static int descr_dtype(const char *descr, int *big)
{
    *big = descr[0] == '>';
    if (descr[0] != '<' && descr[0] != '=' && descr[0] != '>')
        return -1;
    for (int t = 0; t < EB_DTYPE_COUNT; t++)
        if (strcmp(descr + 1, npy_code[t]) == 0)
            return t;
    return -1;
}

/* The descr against the dtype the caller reads: a known descr of another
 * dtype is never converted. */
static eb_status check_descr(const npy_header *h, const char *file,
                             eb_dtype dt, eb_error *err)
{
    int big = 0;
    int t = h->descr_long ? -1 : descr_dtype(h->descr, &big);
    if (t == (int)dt && !big)
        return EB_OK;
    char shown[NPY_DESCR_BYTES];
    printable(shown, sizeof shown, h->descr, strlen(h->descr));
    const char *want = eb_dtype_name(dt), *descr = eb_npy_descr(dt);
    if (t < 0)
        return eb_error_set(err, EB_ERR_UNSUPPORTED,
                            "%s: descr: '%s%s' is not %s (expected '%s')",
                            file, shown, h->descr_long ? "..." : "", want,
                            descr);
    if (big)
        return eb_error_set(err, EB_ERR_UNSUPPORTED,
                            "%s: descr: '%s' is big-endian %s, not "
                            "little-endian %s (expected '%s')", file, shown,
                            eb_dtype_name((eb_dtype)t), want, descr);
    return eb_error_set(err, EB_ERR_INVALID,
                        "%s: descr: '%s' is %s, not %s, the dtype read "
                        "(expected '%s'; a file is never converted)", file,
                        shown, eb_dtype_name((eb_dtype)t), want, descr);
}

/* dtype, order and shape against what the caller needs. */
static eb_status check_header(const npy_header *h, const char *file,
                              const int64_t *expected, int rank, eb_dtype dt,
                              const char *what, eb_error *err)
{
    eb_status st = check_descr(h, file, dt, err);
    if (st != EB_OK)
        return st;
    if (h->fortran)
        return eb_error_set(err, EB_ERR_UNSUPPORTED,
                            "%s: fortran_order: True (expected False: C "
                            "order)", file);
    int same = h->rank == rank;
    for (int a = 0; same && a < rank; a++)
        same = h->dims[a] == expected[a];
    if (!same) {
        char got[NPY_SHAPE_TEXT], need[NPY_SHAPE_TEXT];
        format_shape(got, sizeof got, h->dims, h->rank);
        format_shape(need, sizeof need, expected, rank);
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: shape: %s but %s needs %s", file, got,
                            what ? what : "the caller", need);
    }
    return EB_OK;
}

eb_status eb_npy_read(const char *file, const int64_t *expected, int rank,
                      eb_dtype dt, void *dst, const char *what, eb_error *err)
{
    if ((unsigned)dt >= EB_DTYPE_COUNT)
        return eb_error_set(err, EB_ERR_INTERNAL, "%s: descr: no dtype %d",
                            file, (int)dt);
    if (rank < 0 || rank > EB_NPY_MAX_RANK || (rank > 0 && !expected))
        return eb_error_set(err, EB_ERR_INTERNAL,
                            "%s: shape: rank %d is out of range (0..%d)", file,
                            rank, EB_NPY_MAX_RANK);
    size_t need;
    eb_status s = shape_bytes(file, expected, rank, eb_dtype_size(dt), &need,
                              err);
    if (s != EB_OK)
        return s;
    /* Regular files only (a FIFO or /dev/zero is refused, never read). */
    int fd;
    s = eb_infile_open(file, INT64_MAX, &fd, NULL, err);
    if (s != EB_OK)
        return s;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return eb_error_set(err, EB_ERR_NOMEM, "%s: cannot open: %s", file,
                            strerror(errno));
    }
    npy_header h;
    s = read_header(f, file, &h, err);
    if (s == EB_OK)
        s = check_header(&h, file, expected, rank, dt, what, err);
    if (s == EB_OK) {
        size_t got = need ? fread(dst, 1, need, f) : 0;
        s = read_error(f, file, "data", err);
        if (s == EB_OK && got < need)
            s = eb_error_set(err, EB_ERR_PARSE,
                             "%s: data: %zu bytes but the shape needs %zu "
                             "(truncated?)", file, got, need);
    }
    fclose(f);
    return s;
}

/* ---- writing ------------------------------------------------------------ */

/* The whole v1.0 prelude and header exactly as numpy.save writes it: the dict
 * in sorted key order, spare spaces so the first axis can grow in place, then
 * space padding and '\n' to a multiple of NPY_ALIGN bytes (a full extra block
 * when already aligned, as numpy does). Returns the length, 0 if too long. */
static size_t build_header(char *buf, size_t size, const int64_t *shape,
                           int rank, eb_dtype dt)
{
    char tuple[NPY_SHAPE_TEXT];
    format_shape(tuple, sizeof tuple, shape, rank);
    int dict = snprintf(buf + 10, size - 10,
                        "{'descr': '%s', 'fortran_order': False, "
                        "'shape': %s, }", eb_npy_descr(dt), tuple);
    if (dict < 0 || (size_t)dict >= size - 10)
        return 0;
    size_t hlen = (size_t)dict;
    if (10 + hlen + NPY_GROWTH_DIGITS + NPY_ALIGN + 1 > size)
        return 0;
    if (rank > 0) {
        int digits = snprintf(NULL, 0, "%" PRId64, shape[0]);
        for (int k = digits; k < NPY_GROWTH_DIGITS; k++)
            buf[10 + hlen++] = ' ';
    }
    size_t pad = NPY_ALIGN - (10 + hlen + 1) % NPY_ALIGN;
    size_t total = 10 + hlen + pad + 1;
    if (hlen + pad + 1 > 0xffff) /* numpy would switch to version 2.0 */
        return 0;
    memset(buf + 10 + hlen, ' ', pad);
    buf[total - 1] = '\n';
    memcpy(buf, npy_magic, NPY_MAGIC_BYTES);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)((hlen + pad + 1) & 0xff);
    buf[9] = (char)((hlen + pad + 1) >> 8);
    return total;
}

/* Write header and data to the new temporary fd, checking every step
 * including close. */
static eb_status write_tmp(int fd, const char *tmp, const char *head,
                           size_t head_len, const void *data, size_t bytes,
                           eb_error *err)
{
    /* mkstemp makes the file 0600; give it the mode fopen would have. */
    mode_t mask = umask(0);
    umask(mask);
    FILE *f = fchmod(fd, 0666 & ~mask) == 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        return eb_error_set(err, EB_ERR_IO, "%s: cannot create: %s", tmp,
                            strerror(e));
    }
    int ok = fwrite(head, 1, head_len, f) == head_len &&
             (bytes == 0 || fwrite(data, 1, bytes, f) == bytes) &&
             fflush(f) == 0 && fsync(fileno(f)) == 0;
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (!ok)
        return eb_error_set(err, EB_ERR_IO, "%s: write error: %s", tmp,
                            strerror(saved));
    return EB_OK;
}

eb_status eb_npy_write(const char *file, const int64_t *shape, int rank,
                       eb_dtype dt, const void *data, eb_error *err)
{
    if (rank < 0 || rank > EB_NPY_MAX_RANK || (rank > 0 && !shape) ||
        (unsigned)dt >= EB_DTYPE_COUNT)
        return eb_error_set(err, EB_ERR_INTERNAL,
                            "%s: shape: rank %d is out of range (0..%d) or "
                            "no dtype %d", file, rank, EB_NPY_MAX_RANK,
                            (int)dt);
    size_t bytes;
    eb_status s = shape_bytes(file, shape, rank, eb_dtype_size(dt), &bytes,
                              err);
    if (s != EB_OK)
        return s;
    char head[NPY_SHAPE_TEXT + 4 * NPY_ALIGN];
    size_t head_len = build_header(head, sizeof head, shape, rank, dt);
    if (head_len == 0)
        return eb_error_set(err, EB_ERR_INTERNAL,
                            "%s: header: does not fit in %zu bytes", file,
                            sizeof head);
    size_t tmp_size = strlen(file) + 32;
    char *tmp = malloc(tmp_size);
    if (!tmp)
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    /* An unpredictable name made with O_EXCL in the target's folder (so
     * the rename stays on one file system). */
    snprintf(tmp, tmp_size, "%s.tmp.XXXXXX", file);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        s = eb_error_set(err, EB_ERR_IO, "%s: cannot create a temporary "
                         "file: %s", file, strerror(errno));
        free(tmp);
        return s;
    }
    eb_interrupt_tmpfile(tmp);
    s = write_tmp(fd, tmp, head, head_len, data, bytes, err);
    if (s == EB_OK && rename(tmp, file) != 0)
        s = eb_error_set(err, EB_ERR_IO, "%s: cannot rename %s into place: %s",
                         file, tmp, strerror(errno));
    if (s != EB_OK)
        remove(tmp);
    eb_interrupt_tmpfile(NULL);
    free(tmp);
    return s;
}
