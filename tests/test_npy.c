/* test_npy: .npy reading (fixtures, hostile headers) and numpy-exact writing.
 * Run from the repository root (tests/run-all does): the fixtures are kept
 * as hex text in tests/fixtures/npy/NAME.npy.hex (reviewable, no binary
 * data in git) and unpacked into a temporary folder first. */
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "npy.h"

#define FIXTURES "tests/fixtures/npy/"

static const char *const fixture_names[] = {
    "hand_py2_trailing.npy", "hand_v2_reordered.npy", "hand_v3_native.npy",
    "numpy_1.npy", "numpy_2x3x4.npy", "numpy_3x0.npy", "numpy_3x4.npy",
    "numpy_7.npy", "numpy_align_edge.npy", "numpy_scalar.npy"};

static char tmpdir[256];

/* ---- helpers ------------------------------------------------------------ */

static void tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmpdir, name);
}

static int write_bytes(const char *file, const void *data, size_t n)
{
    FILE *f = fopen(file, "wb");
    if (!f)
        return -1;
    size_t put = n ? fwrite(data, 1, n, f) : 0;
    return (fclose(f) == 0 && put == n) ? 0 : -1;
}

/* Whole file into a malloc'd buffer (caller frees), NULL on failure. */
static unsigned char *read_bytes(const char *file, size_t *n)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16;
    unsigned char *buf = malloc(cap);
    *n = buf ? fread(buf, 1, cap, f) : 0;
    fclose(f);
    return buf;
}

/* A .npy file of version major.0 with this header text (newline added) and
 * `data_bytes` bytes of data (0x11 each). */
static void make_npy_n(const char *file, int major, const char *dict,
                       size_t dict_len, size_t data_bytes)
{
    size_t hl = dict_len + 1, pre = major == 1 ? 10 : 12;
    size_t n = pre + hl + data_bytes;
    unsigned char *b = malloc(n);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    for (size_t k = 0; k < pre - 8; k++)
        b[8 + k] = (unsigned char)(hl >> (8 * k));
    memcpy(b + pre, dict, hl - 1);
    b[pre + hl - 1] = '\n';
    memset(b + pre + hl, 0x11, data_bytes);
    write_bytes(file, b, n);
    free(b);
}

static void make_npy(const char *file, int major, const char *dict,
                     size_t data_bytes)
{
    make_npy_n(file, major, dict, strlen(dict), data_bytes);
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* ---- fixtures ----------------------------------------------------------- */

typedef struct {
    const char *name;
    int rank;
    int64_t dims[16];
    int formula;
} fixture;

/* The values the fixture scripts in tests/fixtures/npy/README produced. */
static double fixture_value(int formula, int64_t i)
{
    switch (formula) {
    case 0: return -2.5;
    case 1: return 42.0;
    case 2: return (double)i * 1.5 - 3;
    case 3: return (double)(i - 5) / 4;
    case 4: return (double)i / 3;
    case 5: return (double)i;
    case 6: return (double)(i + 1);
    case 7: return 7.0;
    default: return i == 0 ? 1.0 : -2.0;
    }
}

static const fixture fixtures[] = {
    {"numpy_scalar.npy", 0, {0}, 0},
    {"numpy_1.npy", 1, {1}, 1},
    {"numpy_7.npy", 1, {7}, 2},
    {"numpy_3x4.npy", 2, {3, 4}, 3},
    {"numpy_2x3x4.npy", 3, {2, 3, 4}, 4},
    {"numpy_align_edge.npy", 14, {2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 100},
     5},
    {"numpy_3x0.npy", 2, {3, 0}, 5},
    {"hand_v2_reordered.npy", 2, {2, 3}, 6},
    {"hand_v3_native.npy", 0, {0}, 7},
    {"hand_py2_trailing.npy", 2, {2, 1}, 8},
};

static int64_t elems_of(const int64_t *dims, int rank)
{
    int64_t n = 1;
    for (int a = 0; a < rank; a++)
        n *= dims[a];
    return n;
}

static void test_fixtures(void)
{
    for (size_t k = 0; k < sizeof fixtures / sizeof fixtures[0]; k++) {
        const fixture *fx = &fixtures[k];
        char file[512], out[512];
        tmp_path(file, sizeof file, fx->name);
        int64_t n = elems_of(fx->dims, fx->rank);
        double *buf = malloc((size_t)(n ? n : 1) * sizeof(double));
        eb_error err = {0};
        eb_status s = eb_npy_read(file, fx->dims, fx->rank, EB_F64, buf,
                                  "fixture", &err);
        EB_CHECK(s == EB_OK, "%s: %s", fx->name, err.msg);
        for (int64_t i = 0; s == EB_OK && i < n; i++)
            EB_CHECK(buf[i] == fixture_value(fx->formula, i),
                     "%s[%lld] = %g", fx->name, (long long)i, buf[i]);
        if (strncmp(fx->name, "numpy_", 6) == 0) {
            /* The writer reproduces numpy.save byte for byte. */
            for (int64_t i = 0; i < n; i++)
                buf[i] = fixture_value(fx->formula, i);
            tmp_path(out, sizeof out, fx->name);
            s = eb_npy_write(out, fx->dims, fx->rank, EB_F64, buf, &err);
            EB_CHECK(s == EB_OK, "write %s: %s", fx->name, err.msg);
            size_t na = 0, nb = 0;
            unsigned char *a = read_bytes(file, &na);
            unsigned char *b = read_bytes(out, &nb);
            EB_CHECK(a && b && na == nb && memcmp(a, b, na) == 0,
                     "%s: written bytes differ from numpy's (%zu vs %zu)",
                     fx->name, nb, na);
            free(a);
            free(b);
        }
        free(buf);
    }
}

/* ---- round trip --------------------------------------------------------- */

static void test_round_trip(void)
{
    static const struct { int rank; int64_t dims[3]; } shapes[] = {
        {0, {0}}, {1, {1}}, {1, {7}}, {2, {3, 4}}, {3, {2, 3, 4}},
        {2, {5, 0}}, {1, {0}},
    };
    const double special[] = {-0.0, INFINITY, -INFINITY, NAN, 5e-324,
                              1.7976931348623157e308, 0.1, -1.0 / 3};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int rank = shapes[k].rank;
        int64_t n = elems_of(shapes[k].dims, rank);
        double *src = malloc((size_t)(n ? n : 1) * sizeof(double));
        double *dst = malloc((size_t)(n ? n : 1) * sizeof(double));
        for (int64_t i = 0; i < n; i++)
            src[i] = i < 8 ? special[i] : (double)i * 0.25;
        char file[512];
        tmp_path(file, sizeof file, "round.npy");
        eb_error err = {0};
        eb_status s = eb_npy_write(file, shapes[k].dims, rank, EB_F64, src,
                                   &err);
        EB_CHECK(s == EB_OK, "shape %zu: write: %s", k, err.msg);
        s = eb_npy_read(file, shapes[k].dims, rank, EB_F64, dst, "round", &err);
        EB_CHECK(s == EB_OK, "shape %zu: read: %s", k, err.msg);
        EB_CHECK(s != EB_OK || n == 0 ||
                     memcmp(src, dst, (size_t)n * sizeof(double)) == 0,
                 "shape %zu: values differ after the round trip", k);
        size_t bytes = 0;
        unsigned char *raw = read_bytes(file, &bytes);
        EB_CHECK(raw && (bytes - (size_t)n * 8) % 64 == 0,
                 "shape %zu: header of %zu bytes is not 64-aligned", k,
                 bytes - (size_t)n * 8);
        free(raw);
        free(src);
        free(dst);
    }
}

/* ---- numpy itself, when installed --------------------------------------- */

static const char numpy_script[] =
    "import numpy as np, sys\n"
    "shapes = [(), (5,), (1000, 0), (0, 5), (12345, 0, 7), (2,) * 10,\n"
    "          (9,) + (1,) * 20, (10**15, 0)]\n"
    "for k, s in enumerate(shapes):\n"
    "    n = int(np.prod(s))\n"
    "    np.save('%s/np%d.npy' % (sys.argv[1], k),\n"
    "            (np.arange(n) / 7.0).reshape(s))\n";

static void test_live_numpy(void)
{
    if (system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
        printf("test_npy: note: /usr/bin/python3 has no numpy; live numpy "
               "comparison skipped (fixtures still cover it)\n");
        return;
    }
    char script[512], cmd[1024];
    tmp_path(script, sizeof script, "gen.py");
    write_bytes(script, numpy_script, sizeof numpy_script - 1);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", script, tmpdir);
    EB_CHECK(system(cmd) == 0, "numpy script failed: %s", cmd);
    static const struct { int rank; int64_t dims[21]; } shapes[] = {
        {0, {0}}, {1, {5}}, {2, {1000, 0}}, {2, {0, 5}}, {3, {12345, 0, 7}},
        {10, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}},
        {21, {9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
        {2, {1000000000000000, 0}},
    };
    double vals[1024];
    for (int i = 0; i < 1024; i++)
        vals[i] = i / 7.0;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        char theirs[512], ours[512], name[32];
        snprintf(name, sizeof name, "np%zu.npy", k);
        tmp_path(theirs, sizeof theirs, name);
        snprintf(name, sizeof name, "eb%zu.npy", k);
        tmp_path(ours, sizeof ours, name);
        eb_error err = {0};
        eb_status s = eb_npy_write(ours, shapes[k].dims, shapes[k].rank,
                                   EB_F64, vals, &err);
        EB_CHECK(s == EB_OK, "numpy shape %zu: %s", k, err.msg);
        size_t na = 0, nb = 0;
        unsigned char *a = read_bytes(theirs, &na);
        unsigned char *b = read_bytes(ours, &nb);
        EB_CHECK(a && b && na == nb && memcmp(a, b, na) == 0,
                 "numpy shape %zu: bytes differ (%zu vs %zu)", k, nb, na);
        free(a);
        free(b);
    }
}

/* ---- bad input ---------------------------------------------------------- */

/* Read `file` expecting failure with status `want` and a message that starts
 * with the file name and contains `part`. */
static void expect_fail_dt(const char *file, const int64_t *dims, int rank,
                           eb_dtype dt, eb_status want, const char *part,
                           int line)
{
    int64_t n = elems_of(dims, rank);
    void *dst = malloc((size_t)(n ? n : 1) * eb_dtype_size(dt));
    eb_error err = {0};
    eb_status s = eb_npy_read(file, dims, rank, dt, dst, "operand 3", &err);
    EB_CHECK(s == want, "line %d: status %d, want %d (%s)", line, (int)s,
             (int)want, err.msg);
    EB_CHECK(strncmp(err.msg, file, strlen(file)) == 0 &&
                 strstr(err.msg, part) != NULL,
             "line %d: message \"%s\" lacks \"%s\"", line, err.msg, part);
    free(dst);
}

static void expect_fail(const char *file, const int64_t *dims, int rank,
                        eb_status want, const char *part, int line)
{
    expect_fail_dt(file, dims, rank, EB_F64, want, part, line);
}

static void expect_ok_dt(const char *file, const int64_t *dims, int rank,
                         eb_dtype dt, int line)
{
    int64_t n = elems_of(dims, rank);
    void *dst = malloc((size_t)(n ? n : 1) * eb_dtype_size(dt));
    eb_error err = {0};
    eb_status s = eb_npy_read(file, dims, rank, dt, dst, "operand 3", &err);
    EB_CHECK(s == EB_OK, "line %d: %s", line, err.msg);
    free(dst);
}

#define BAD_HEADER(dict, want, part)                                         \
    do {                                                                     \
        make_npy(bad, 1, dict, 160);                                         \
        expect_fail(bad, d45, 2, want, part, __LINE__);                      \
    } while (0)

static void test_bad_headers(void)
{
    char bad[512];
    tmp_path(bad, sizeof bad, "x.npy");
    const int64_t d45[2] = {4, 5};
    BAD_HEADER("{'descr': '<i4', 'fortran_order': False, 'shape': (4, 5), }",
               EB_ERR_UNSUPPORTED, "descr: '<i4' is not float64 (expected "
               "'<f8')");
    BAD_HEADER("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 5), }",
               EB_ERR_INVALID, "descr: '<f4' is float32, not float64, the "
               "dtype read (expected '<f8'; a file is never converted)");
    BAD_HEADER("{'descr': '>f8', 'fortran_order': False, 'shape': (4, 5), }",
               EB_ERR_UNSUPPORTED, "descr: '>f8' is big-endian float64, not "
               "little-endian float64");
    BAD_HEADER("{'descr': '|f8', 'fortran_order': False, 'shape': (4, 5), }",
               EB_ERR_UNSUPPORTED, "descr: '|f8'");
    BAD_HEADER("{'descr': [('a', '<f8')], 'fortran_order': False, "
               "'shape': (4, 5), }", EB_ERR_UNSUPPORTED, "descr: ");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': True, 'shape': (4, 5), }",
               EB_ERR_UNSUPPORTED, "fortran_order: True");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': 0, 'shape': (4, 5), }",
               EB_ERR_PARSE, "fortran_order: ");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, "
               "'shape': (99999999999999999999,), }",
               EB_ERR_PARSE, "shape: dimension 0 is too large");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, 'shape': (4, -5), }",
               EB_ERR_PARSE, "shape: dimension 1 is negative");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, 'shape': (20), }",
               EB_ERR_PARSE, "shape: (20) is not a tuple");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, 'shape': [4, 5], }",
               EB_ERR_PARSE, "shape: expected a tuple");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, 'shape': (4,, 5), }",
               EB_ERR_PARSE, "shape: expected a dimension");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 5), ",
               EB_ERR_PARSE, "header: missing '}'");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 5",
               EB_ERR_PARSE, "header: ");
    BAD_HEADER("{'descr': '<f8, 'fortran_order': False, 'shape': (4, 5)}",
               EB_ERR_PARSE, "header: ");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False}",
               EB_ERR_PARSE, "header: missing key 'shape'");
    BAD_HEADER("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, "
               "'shape': (4, 5)}", EB_ERR_PARSE, "key 'descr' appears twice");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 5), "
               "'extra': 1}", EB_ERR_PARSE, "unexpected key 'extra'");
    BAD_HEADER("{'descr': '<f8' 'fortran_order': False, 'shape': (4, 5)}",
               EB_ERR_PARSE, "expected ',' or '}'");
    BAD_HEADER("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 5)} x",
               EB_ERR_PARSE, "unexpected text after '}'");
    BAD_HEADER("", EB_ERR_PARSE, "header: expected '{'");
    static const char nul[] = "{'descr': '<f8',\0 'fortran_order': False, "
                              "'shape': (4, 5), }";
    make_npy_n(bad, 1, nul, sizeof nul - 1, 160);
    expect_fail(bad, d45, 2, EB_ERR_PARSE, "header: ", __LINE__);
}

#define WRITE_LIT(file, lit) write_bytes(file, lit, sizeof lit - 1)

static void test_bad_files(void)
{
    char bad[512], want[1200];
    tmp_path(bad, sizeof bad, "x.npy");
    const int64_t d45[2] = {4, 5}, d46[2] = {4, 6}, d20[1] = {20};

    /* The messages the brief promises, word for word. */
    make_npy(bad, 1, "{'descr': '<f8', 'fortran_order': False, "
                     "'shape': (4, 5), }", 160);
    snprintf(want, sizeof want, "%s: shape: (4, 5) but operand 3 needs (4, 6)",
             bad);
    expect_fail(bad, d46, 2, EB_ERR_INVALID, want, __LINE__);
    snprintf(want, sizeof want, "%s: shape: (4, 5) but operand 3 needs (20,)",
             bad);
    expect_fail(bad, d20, 1, EB_ERR_INVALID, want, __LINE__);
    expect_fail(bad, NULL, 0, EB_ERR_INVALID, "(4, 5) but operand 3 needs ()",
                __LINE__);
    make_npy(bad, 1, "{'descr': '<f8', 'fortran_order': False, "
                     "'shape': (4, 5), }", 12);
    snprintf(want, sizeof want, "%s: data: 12 bytes but the shape needs 160 "
             "(truncated?)", bad);
    expect_fail(bad, d45, 2, EB_ERR_PARSE, want,
                __LINE__);
    make_npy(bad, 1, "{'descr': '<f8', 'fortran_order': False, "
                     "'shape': (4294967296, 4294967296), }", 0);
    expect_fail(bad, d45, 2, EB_ERR_INVALID,
                "shape: (4294967296, 4294967296) but", __LINE__);

    /* Prelude damage. */
    WRITE_LIT(bad, "\x93NUMPX\x01\x00\x10\x00{}");
    expect_fail(bad, d45, 2, EB_ERR_PARSE, "magic: not a .npy file", __LINE__);
    WRITE_LIT(bad, "");
    expect_fail(bad, d45, 2, EB_ERR_PARSE, "magic: ", __LINE__);
    WRITE_LIT(bad, "\x93NUMPY\x01");
    expect_fail(bad, d45, 2, EB_ERR_PARSE, "version: ", __LINE__);
    WRITE_LIT(bad, "\x93NUMPY\x04\x00\x10\x00\x00\x00{}");
    expect_fail(bad, d45, 2, EB_ERR_UNSUPPORTED, "version: 4.0", __LINE__);
    WRITE_LIT(bad, "\x93NUMPY\x01\x00\xff");
    expect_fail(bad, d45, 2, EB_ERR_PARSE, "header: length missing", __LINE__);
    WRITE_LIT(bad, "\x93NUMPY\x01\x00\xff\xff{'descr'");
    expect_fail(bad, d45, 2, EB_ERR_PARSE,
                "header: length 65535 but only 8 bytes follow", __LINE__);
    WRITE_LIT(bad, "\x93NUMPY\x02\x00\xff\xff\xff\xff{}");
    expect_fail(bad, d45, 2, EB_ERR_PARSE, "header: length 4294967295 is over",
                __LINE__);

    /* More axes than the reader keeps. */
    char dict[512] = "{'descr': '<f8', 'fortran_order': False, 'shape': (";
    for (int a = 0; a <= EB_NPY_MAX_RANK; a++)
        strcat(dict, "1,");
    strcat(dict, "), }");
    make_npy(bad, 2, dict, 8);
    expect_fail(bad, d45, 2, EB_ERR_UNSUPPORTED, "shape: more than 64",
                __LINE__);

    /* Not there, or not a file. */
    tmp_path(bad, sizeof bad, "missing.npy");
    expect_fail(bad, d45, 2, EB_ERR_IO, "cannot open", __LINE__);
    expect_fail(tmpdir, d45, 2, EB_ERR_IO, "is a directory (expected a "
                "regular file)", __LINE__);
    /* Special files are refused at once, never read (a FIFO would block
     * open, /dev/zero would never end). */
    expect_fail("/dev/zero", d45, 2, EB_ERR_IO, "is a character device",
                __LINE__);
    tmp_path(bad, sizeof bad, "fifo.npy");
    if (mkfifo(bad, 0600) == 0) {
        expect_fail(bad, d45, 2, EB_ERR_IO, "is a FIFO", __LINE__);
        remove(bad);
    }
}

/* ---- every dtype -------------------------------------------------------- */

/* Value i of the dtype tests: float64 i/7 (real part) and -i/3 (imaginary
 * part), rounded to float for float32 and complex64, as numpy's astype
 * rounds. */
static void dtype_values(eb_dtype dt, int64_t n, void *out)
{
    for (int64_t i = 0; i < n; i++) {
        double re = (double)i / 7.0, im = i ? -(double)i / 3.0 : 0.0;
        switch (dt) {
        case EB_F64: ((double *)out)[i] = re; break;
        case EB_F32: ((float *)out)[i] = (float)re; break;
        case EB_C128:
            ((double *)out)[2 * i] = re;
            ((double *)out)[2 * i + 1] = im;
            break;
        default:
            ((float *)out)[2 * i] = (float)re;
            ((float *)out)[2 * i + 1] = (float)im;
            break;
        }
    }
}

/* Write and read back in each dtype; reading as any other dtype is refused
 * (never converted), naming the field; big-endian is refused. */
static void test_dtype_round_trip(void)
{
    const int64_t d34[2] = {3, 4};
    double src[24], dst[24];
    char file[512], want[600];
    tmp_path(file, sizeof file, "dt.npy");
    for (int t = 0; t < EB_DTYPE_COUNT; t++) {
        eb_dtype dt = (eb_dtype)t;
        const char *name = eb_dtype_name(dt);
        size_t bytes = 12 * eb_dtype_size(dt);
        dtype_values(dt, 12, src);
        eb_error err = {0};
        eb_status s = eb_npy_write(file, d34, 2, dt, src, &err);
        EB_CHECK(s == EB_OK, "%s: write: %s", name, err.msg);
        size_t n = 0;
        unsigned char *raw = read_bytes(file, &n);
        snprintf(want, sizeof want, "{'descr': '%s', 'fortran_order': "
                 "False, 'shape': (3, 4), }", eb_npy_descr(dt));
        EB_CHECK(raw && n == 128 + bytes &&
                     memcmp(raw + 10, want, strlen(want)) == 0 &&
                     memcmp(raw + 128, src, bytes) == 0,
                 "%s: file of %zu bytes, header or data not as numpy's",
                 name, n);
        free(raw);
        memset(dst, 0, sizeof dst);
        s = eb_npy_read(file, d34, 2, dt, dst, "operand 0", &err);
        EB_CHECK(s == EB_OK && memcmp(src, dst, bytes) == 0,
                 "%s: read back: %s", name, s ? err.msg : "values differ");
        for (int u = 0; u < EB_DTYPE_COUNT; u++) {
            if (u == t)
                continue;
            snprintf(want, sizeof want, "descr: '%s' is %s, not %s, the "
                     "dtype read (expected '%s'", eb_npy_descr(dt), name,
                     eb_dtype_name((eb_dtype)u), eb_npy_descr((eb_dtype)u));
            expect_fail_dt(file, d34, 2, (eb_dtype)u, EB_ERR_INVALID, want,
                           __LINE__);
        }
        /* '=' is the host's order, little-endian here: the same type. */
        char dict[128], big[16];
        snprintf(dict, sizeof dict, "{'descr': '=%s', 'fortran_order': "
                 "False, 'shape': (3, 4), }", eb_npy_descr(dt) + 1);
        make_npy(file, 1, dict, bytes);
        expect_ok_dt(file, d34, 2, dt, __LINE__);
        snprintf(big, sizeof big, ">%s", eb_npy_descr(dt) + 1);
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': "
                 "False, 'shape': (3, 4), }", big);
        make_npy(file, 1, dict, bytes);
        snprintf(want, sizeof want, "descr: '%s' is big-endian %s, not "
                 "little-endian %s (expected '%s')", big, name, name,
                 eb_npy_descr(dt));
        expect_fail_dt(file, d34, 2, dt, EB_ERR_UNSUPPORTED, want, __LINE__);
        /* Too little data for the dtype's element size. */
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': "
                 "False, 'shape': (3, 4), }", eb_npy_descr(dt));
        make_npy(file, 1, dict, bytes - 1);
        snprintf(want, sizeof want, "data: %zu bytes but the shape needs %zu",
                 bytes - 1, bytes);
        expect_fail_dt(file, d34, 2, dt, EB_ERR_PARSE, want, __LINE__);
        snprintf(dict, sizeof dict, "{'descr': '<i8', 'fortran_order': "
                 "False, 'shape': (3, 4), }");
        make_npy(file, 1, dict, bytes);
        snprintf(want, sizeof want, "descr: '<i8' is not %s (expected '%s')",
                 name, eb_npy_descr(dt));
        expect_fail_dt(file, d34, 2, dt, EB_ERR_UNSUPPORTED, want, __LINE__);
    }
}

static const char numpy_dtype_script[] =
    "import numpy as np, sys\n"
    "i = np.arange(12)\n"
    "for d in ('<f8', '<f4', '<c16', '<c8'):\n"
    "    v = i / 7.0 - 1j * (i / 3.0) if d[1] == 'c' else i / 7.0\n"
    "    np.save('%s/npdt%s.npy' % (sys.argv[1], d[1:]),\n"
    "            v.astype(d).reshape(3, 4))\n";

/* numpy's files of each dtype read as the values numpy wrote, and ours are
 * byte for byte numpy's. */
static void test_live_numpy_dtypes(void)
{
    if (system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0)
        return; /* test_live_numpy said so */
    char script[512], cmd[1024];
    tmp_path(script, sizeof script, "gendt.py");
    write_bytes(script, numpy_dtype_script, sizeof numpy_dtype_script - 1);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", script, tmpdir);
    EB_CHECK(system(cmd) == 0, "numpy script failed: %s", cmd);
    const int64_t d34[2] = {3, 4};
    for (int t = 0; t < EB_DTYPE_COUNT; t++) {
        eb_dtype dt = (eb_dtype)t;
        char theirs[512], ours[512], name[32];
        snprintf(name, sizeof name, "npdt%s.npy", eb_npy_descr(dt) + 1);
        tmp_path(theirs, sizeof theirs, name);
        tmp_path(ours, sizeof ours, "ebdt.npy");
        double want[24], got[24];
        size_t bytes = 12 * eb_dtype_size(dt);
        dtype_values(dt, 12, want);
        eb_error err = {0};
        eb_status s = eb_npy_read(theirs, d34, 2, dt, got, "numpy", &err);
        EB_CHECK(s == EB_OK && memcmp(want, got, bytes) == 0,
                 "%s: numpy's file: %s", eb_dtype_name(dt),
                 s ? err.msg : "values differ");
        s = eb_npy_write(ours, d34, 2, dt, want, &err);
        size_t na = 0, nb = 0;
        unsigned char *a = read_bytes(theirs, &na);
        unsigned char *b = read_bytes(ours, &nb);
        EB_CHECK(s == EB_OK && a && b && na == nb && memcmp(a, b, na) == 0,
                 "%s: our bytes differ from numpy's (%zu vs %zu)",
                 eb_dtype_name(dt), nb, na);
        free(a);
        free(b);
    }
}

/* Every truncation and many one-byte corruptions of a valid file must fail
 * cleanly or succeed, never read or write out of bounds (run under ASan and
 * valgrind). */
static void test_damage(void)
{
    size_t n = 0;
    char good_file[512];
    tmp_path(good_file, sizeof good_file, "numpy_3x4.npy");
    unsigned char *good = read_bytes(good_file, &n);
    EB_CHECK(good && n == 224, "numpy_3x4.npy: %zu bytes", n);
    if (!good)
        return;
    char bad[512];
    tmp_path(bad, sizeof bad, "damaged.npy");
    const int64_t d34[2] = {3, 4};
    double dst[12];
    int failures = 0, successes = 0;
    for (size_t len = 0; len < n; len++) {
        write_bytes(bad, good, len);
        eb_error err = {0};
        failures +=
            eb_npy_read(bad, d34, 2, EB_F64, dst, "damage", &err) != EB_OK;
    }
    EB_CHECK(failures == (int)n, "%d of %zu truncations were accepted",
             (int)n - failures, n);
    static const unsigned char junk[] = {0, '\'', ')', ',', '9', 0xff};
    for (size_t pos = 0; pos < 128; pos++) {
        for (size_t j = 0; j < sizeof junk; j++) {
            unsigned char saved = good[pos];
            good[pos] = junk[j];
            write_bytes(bad, good, n);
            good[pos] = saved;
            eb_error err = {0};
            successes += eb_npy_read(bad, d34, 2, EB_F64, dst, "damage",
                                     &err) == EB_OK;
        }
    }
    EB_CHECK(successes > 0 && successes < 128 * (int)sizeof junk,
             "%d corruptions accepted (padding changes should be)", successes);
    free(good);
}

/* ---- writer failures ---------------------------------------------------- */

/* Entries of tmpdir whose name starts with prefix. */
static int count_prefixed(const char *prefix)
{
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

static void test_write_errors(void)
{
    const int64_t d2[1] = {2}, neg[2] = {3, -1};
    const double v[2] = {1, 2};
    char file[512], tmp[600];
    eb_error err = {0};

    tmp_path(file, sizeof file, "no/such/dir/out.npy");
    eb_status s = eb_npy_write(file, d2, 1, EB_F64, v, &err);
    EB_CHECK(s == EB_ERR_IO && strstr(err.msg, "cannot create"), "%s",
             err.msg);

    /* rename onto a non-empty directory fails; the temp file goes away. */
    tmp_path(file, sizeof file, "busy");
    mkdir(file, 0700);
    tmp_path(tmp, sizeof tmp, "busy/keep");
    write_bytes(tmp, "x", 1);
    s = eb_npy_write(file, d2, 1, EB_F64, v, &err);
    EB_CHECK(s == EB_ERR_IO && strstr(err.msg, "cannot rename"), "%s",
             err.msg);
    EB_CHECK(count_prefixed("busy.tmp.") == 0, "a temporary was left "
             "behind");

    /* The temporary's name is not predictable and is created with O_EXCL:
     * a symlink planted at the old name ("FILE.tmp.PID") is not followed. */
    tmp_path(file, sizeof file, "sym.npy");
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", file, (long)getpid());
    char victim[512];
    tmp_path(victim, sizeof victim, "victim");
    EB_CHECK(symlink(victim, tmp) == 0, "symlink %s", tmp);
    s = eb_npy_write(file, d2, 1, EB_F64, v, &err);
    EB_CHECK(s == EB_OK, "%s", err.msg);
    EB_CHECK(access(victim, F_OK) != 0, "the planted symlink was followed");
    EB_CHECK(count_prefixed("sym.npy.tmp.") == 1, "only the planted link "
             "remains beside sym.npy");
    remove(tmp);

    tmp_path(file, sizeof file, "neg.npy");
    s = eb_npy_write(file, neg, 2, EB_F64, v, &err);
    EB_CHECK(s == EB_ERR_INVALID && strstr(err.msg, "negative"), "%s",
             err.msg);
    EB_CHECK(access(file, F_OK) != 0, "%s was written", file);
}

/* tests/fixtures/npy/NAME.hex (hex digits, any whitespace) -> tmpdir/NAME. */
static int unpack_fixture(const char *name)
{
    char src[512], dst[512];
    snprintf(src, sizeof src, FIXTURES "%s.hex", name);
    tmp_path(dst, sizeof dst, name);
    FILE *in = fopen(src, "r"), *out = fopen(dst, "wb");
    int ok = in && out, hi = -1, c;
    while (ok && (c = fgetc(in)) != EOF) {
        int v = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            continue;
        if (hi < 0) {
            hi = v;
        } else {
            ok = fputc(hi * 16 + v, out) != EOF;
            hi = -1;
        }
    }
    if (in)
        fclose(in);
    if (out)
        ok &= fclose(out) == 0;
    return ok && hi < 0 ? 0 : -1;
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/eb-test-npy-XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror(tmpdir);
        return 1;
    }
    for (size_t k = 0; k < sizeof fixture_names / sizeof *fixture_names; k++)
        EB_CHECK(unpack_fixture(fixture_names[k]) == 0, "unpack %s",
                 fixture_names[k]);
    test_fixtures();
    test_round_trip();
    test_live_numpy();
    test_dtype_round_trip();
    test_live_numpy_dtypes();
    test_bad_headers();
    test_bad_files();
    test_damage();
    test_write_errors();
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return eb_check_done("test_npy");
}
