/* calibrate: measure F (per dtype) and BW, and the per-machine cache of
 * them. */
#include "calibrate.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "blas.h"
#include "clock.h"
#include "mem.h"
#include "team.h"
#include "window.h"

enum {
    GEMM_N = 1024,              /* F: C = A B at 1024^3, every dtype */
    GEMM_RUNS = 5,
    STREAM_ELEMS = (32 << 20) / 8,  /* three arrays of 32 MiB */
    STREAM_RUNS = 10,           /* passes of each store kind */
    FILE_CAP = 64 << 10,        /* a calibration file is a few lines */
};

static const char MAGIC[] = "einsum-bench-calibration";
/* How the rates are measured; part of the cache key, so that a cache
 * written by an earlier method (BW with ordinary stores only, best of 3
 * GEMMs) is measured again rather than read. */
static const char METHOD[] =
    "gemm best of 5; stream best of 10+10 (nt), busiest thread";

/* ---- measuring ------------------------------------------------------------ */

static int64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How long a run of the work took on `threads` CPUs: its wall time, or
 * the process's CPU time over threads when that is shorter, i.e. when
 * other processes took the CPUs part of the time. The rates are the
 * machine's while it does the work, so a calibration on a loaded machine
 * is not cached at half the rate. */
typedef struct {
    int64_t wall, cpu;
} run_clock;

static run_clock clock_start(void)
{
    return (run_clock){eb_now_ns(), cpu_now_ns()};
}

static int64_t clock_elapsed(run_clock c, int threads)
{
    int64_t wall = eb_now_ns() - c.wall;
    int64_t cpu = (cpu_now_ns() - c.cpu) / threads;
    return cpu > 0 && cpu < wall ? cpu : wall;
}

static double *alloc_filled(size_t n, double v)
{
    double *p = eb_mem_alloc(n * sizeof *p);
    if (p)
        for (size_t i = 0; i < n; i++)
            p[i] = v;
    return p;
}

/* Zeros, like the tool's default fill and the bench's references; every
 * page written. */
static void *alloc_zeroed(size_t bytes)
{
    void *p = eb_mem_alloc(bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

/* Best time of `runs` GEMM calls of dtype dt after one warmup, in ns; 0 on
 * no memory. */
static int64_t gemm_best_ns(int threads, eb_dtype dt)
{
    size_t bytes = (size_t)GEMM_N * GEMM_N * eb_dtype_size(dt);
    void *a = alloc_zeroed(bytes), *b = alloc_zeroed(bytes);
    void *c = alloc_zeroed(bytes);
    int64_t best = 0;
    if (a && b && c) {
        for (int k = 0; k <= GEMM_RUNS; k++) {
            run_clock t0 = clock_start();
            eb_blas_gemm_dt(dt, 0, 0, GEMM_N, GEMM_N, GEMM_N, a, GEMM_N, b,
                            GEMM_N, c, GEMM_N);
            int64_t t = clock_elapsed(t0, threads);
            if (k > 0 && (best == 0 || t < best))
                best = t;
        }
    }
    eb_mem_free(a);
    eb_mem_free(b);
    eb_mem_free(c);
    return best;
}

typedef struct {
    double *a, *b, *c;
    int streaming;              /* non-temporal stores */
    int64_t *part_ns;           /* per part: its thread's CPU time in it */
    uintptr_t *part_thread;     /* per part: which thread ran it */
} stream_job;

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* An address unique to the calling thread while it lives. */
static uintptr_t thread_key(void)
{
    static _Thread_local char key;
    return (uintptr_t)&key;
}

int64_t eb_calib_parts_ns(int nparts, const int64_t *part_ns,
                          const uintptr_t *part_thread, int64_t wall_ns)
{
    int64_t worst = 0;
    for (int p = 0; p < nparts; p++) {
        int64_t sum = 0;
        int first = 1;
        for (int q = 0; q < nparts && first; q++)
            first = q >= p || part_thread[q] != part_thread[p];
        if (!first)
            continue; /* counted with the thread's first part */
        for (int q = p; q < nparts; q++)
            if (part_thread[q] == part_thread[p])
                sum += part_ns[q];
        worst = sum > worst ? sum : worst;
    }
    return worst > 0 && worst < wall_ns ? worst : wall_ns;
}

/* c[lo, hi) = a * b with non-temporal stores where the machine has them
 * (SSE2, part of x86-64), so that writing c does not first read it into
 * the cache; `lo` and `hi` even, the arrays 16-byte aligned. Returns 0
 * where there are no such stores. */
static int stream_nt(const double *restrict a, const double *restrict b,
                     double *restrict c, long long lo, long long hi)
{
#if defined(__x86_64__)
    for (long long i = lo; i < hi; i += 2)
        _mm_stream_pd(c + i, _mm_mul_pd(_mm_load_pd(a + i),
                                        _mm_load_pd(b + i)));
    _mm_sfence();
    return 1;
#else
    (void)a, (void)b, (void)c, (void)lo, (void)hi;
    return 0;
#endif
}

/* The stream kernel of DESIGN 6, c[i] = a[i] * b[i]: plain C as in the
 * bench's reference, or the same product with non-temporal stores. */
static void stream_kernel(const stream_job *j, int part, int nparts)
{
    long long lo, hi;
    eb_team_split(STREAM_ELEMS / 2, part, nparts, &lo, &hi);
    lo *= 2;
    hi *= 2;
    const double *restrict a = j->a, *restrict b = j->b;
    double *restrict c = j->c;
    if (j->streaming && stream_nt(a, b, c, lo, hi))
        return;
    for (long long i = lo; i < hi; i++)
        c[i] = a[i] * b[i];
}

static void stream_part(void *arg, int part, int nparts)
{
    const stream_job *j = arg;
    int64_t t0 = thread_cpu_ns();
    stream_kernel(j, part, nparts);
    j->part_ns[part] = thread_cpu_ns() - t0;
    j->part_thread[part] = thread_key();
}

/* Best time over STREAM_RUNS passes with ordinary stores and as many with
 * non-temporal ones, alternating, after one warmup of each, in ns; 0 on no
 * memory. The bandwidth is the machine's limit, so the faster store kind
 * counts (ordinary stores read each line of c before writing it, a fourth
 * array of traffic the formula does not count), and the best pass, since
 * a pass only gets slower when another process takes the memory bus.
 * A pass takes the CPU time of its busiest thread when that is shorter
 * than its wall time (eb_calib_parts_ns): the process's CPU time over the
 * thread count counted a pass whose worker never woke (the caller ran
 * both halves) at twice the caller's rate, and the suite's two-thread
 * calibrations read 108-267 GB/s against 24-66 at one thread. */
static int64_t stream_best_ns(eb_team *team)
{
    int n = eb_team_size(team);
    stream_job j = {alloc_filled(STREAM_ELEMS, 1.5),
                    alloc_filled(STREAM_ELEMS, 2.0),
                    alloc_filled(STREAM_ELEMS, 0), 0,
                    calloc((size_t)n, sizeof(int64_t)),
                    calloc((size_t)n, sizeof(uintptr_t))};
    int64_t best = 0;
    if (j.a && j.b && j.c && j.part_ns && j.part_thread) {
        for (int k = 0; k < 2 * (STREAM_RUNS + 1); k++) {
            j.streaming = k & 1;
            int64_t w0 = eb_now_ns();
            eb_team_run(team, stream_part, &j);
            int64_t t = eb_calib_parts_ns(n, j.part_ns, j.part_thread,
                                          eb_now_ns() - w0);
            if (k > 1 && (best == 0 || t < best))
                best = t;
        }
    }
    eb_mem_free(j.a);
    eb_mem_free(j.b);
    eb_mem_free(j.c);
    free(j.part_ns);
    free(j.part_thread);
    return best;
}

/* F of every dtype in `dtypes` into out->gflops (the others untouched). */
static eb_status measure_gemms(int threads, unsigned dtypes, eb_rates *out,
                               eb_error *err)
{
    for (int dt = 0; dt < EB_DTYPE_COUNT; dt++) {
        if (!(dtypes & 1u << dt))
            continue;
        int64_t ns = gemm_best_ns(threads, (eb_dtype)dt);
        if (ns <= 0)
            return eb_error_set(err, EB_ERR_NOMEM, "calibrate: out of memory "
                                "(needs 3 x %zu MiB)",
                                eb_dtype_size((eb_dtype)dt));
        out->gflops[dt] = 2.0 * GEMM_N * GEMM_N * GEMM_N / (double)ns;
    }
    return EB_OK;
}

eb_status eb_calib_measure(int threads, unsigned dtypes, eb_rates *out,
                           eb_error *err)
{
    memset(out, 0, sizeof *out);
    eb_status st = measure_gemms(threads, dtypes, out, err);
    eb_team *team;
    if (!st)
        st = eb_team_create(threads, &team, err);
    if (st)
        return st;
    int64_t stream_ns = stream_best_ns(team);
    eb_team_destroy(team);
    if (stream_ns <= 0)
        return eb_error_set(err, EB_ERR_NOMEM, "calibrate: out of memory "
                            "(needs 3 x 32 MiB)");
    out->gbs = 3.0 * STREAM_ELEMS * sizeof(double) / (double)stream_ns;
    return EB_OK;
}

/* ---- the file ------------------------------------------------------------- */

/* Up to FILE_CAP bytes of a regular file, NUL-terminated (caller frees). */
static eb_status read_small(const char *file, char **text, eb_error *err)
{
    *text = NULL;
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return eb_error_set(err, EB_ERR_IO, "%s: cannot open: %s", file,
                            strerror(errno));
    struct stat sb;
    eb_status st = EB_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = eb_error_set(err, EB_ERR_IO, "%s: not a regular file", file);
    else if (sb.st_size > FILE_CAP)
        st = eb_error_set(err, EB_ERR_INVALID, "%s: %lld bytes (a calibration "
                          "file has at most %d)", file,
                          (long long)sb.st_size, FILE_CAP);
    char *buf = st ? NULL : malloc(FILE_CAP + 1);
    if (!st && !buf)
        st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    size_t n = 0;
    while (!st && n < FILE_CAP) {
        ssize_t r = read(fd, buf + n, FILE_CAP - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            st = eb_error_set(err, EB_ERR_IO, "%s: read error: %s", file,
                              strerror(errno));
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (st) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        free(buf);
        return eb_error_set(err, EB_ERR_PARSE, "%s: contains a NUL byte",
                            file);
    }
    *text = buf;
    return EB_OK;
}

/* F_GFLOPS + dt is the F of dtype dt; float64's keeps the name "gflops"
 * (older files have only that one). */
enum { F_MAGIC, F_CPU, F_CONFIG, F_CORE, F_THREADS, F_GBS, F_DATE, F_GFLOPS,
       F_COUNT = F_GFLOPS + EB_DTYPE_COUNT };
static const char *const field_names[F_COUNT] = {
    MAGIC, "cpu_model", "blas_config", "blas_core", "threads", "gbs", "date",
    [F_GFLOPS + EB_F64] = "gflops",
    [F_GFLOPS + EB_F32] = "gflops_float32",
    [F_GFLOPS + EB_C128] = "gflops_complex128",
    [F_GFLOPS + EB_C64] = "gflops_complex64"};

/* Fields a file may leave out. */
static int optional_field(int f)
{
    return f == F_DATE || (f > F_GFLOPS && f < F_COUNT);
}

static eb_status parse_number(const char *file, int line, const char *name,
                              const char *v, double lo, double hi,
                              double *out, eb_error *err)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < lo || x > hi)
        return eb_error_set(err, EB_ERR_INVALID, "%s: line %d: %s: '%s' is "
                            "not a number from %g to %g", file, line, name,
                            v, lo, hi);
    *out = x;
    return EB_OK;
}

static eb_status parse_field(const char *file, int line, int f, const char *v,
                             eb_calibration *c, eb_error *err)
{
    double x;
    eb_status st = EB_OK;
    switch (f) {
    case F_MAGIC:
        if (strcmp(v, "1") != 0)
            st = eb_error_set(err, EB_ERR_UNSUPPORTED, "%s: line %d: format "
                              "version '%s' (expected 1)", file, line, v);
        break;
    case F_THREADS:
        st = parse_number(file, line, "threads", v, 1, 1024, &x, err);
        if (!st && x != floor(x))
            st = eb_error_set(err, EB_ERR_INVALID, "%s: line %d: threads: "
                              "'%s' is not a whole number", file, line, v);
        c->threads = (int)x;
        break;
    case F_GBS:
        st = parse_number(file, line, "gbs", v, 1e-6, 1e9, &c->rates.gbs,
                          err);
        break;
    default: {
        if (f >= F_GFLOPS)
            return parse_number(file, line, field_names[f], v, 1e-6, 1e9,
                                &c->rates.gflops[f - F_GFLOPS], err);
        char *dst = f == F_CPU ? c->cpu_model : f == F_CONFIG ? c->blas_config
                    : f == F_CORE ? c->blas_core : c->date;
        size_t cap = f == F_DATE ? sizeof c->date : sizeof c->cpu_model;
        if (strlen(v) >= cap)
            st = eb_error_set(err, EB_ERR_INVALID, "%s: line %d: %s: longer "
                              "than %zu bytes", file, line, field_names[f],
                              cap - 1);
        else
            strcpy(dst, v);
    }
    }
    return st;
}

/* One "name value" line; seen[] catches duplicates. */
static eb_status parse_line(const char *file, int line, char *s,
                            eb_calibration *c, int *seen, eb_error *err)
{
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return eb_error_set(err, EB_ERR_PARSE, "%s: line %d: control "
                                "character 0x%02x", file, line,
                                (unsigned)(unsigned char)*p);
    char *v = strchr(s, ' ');
    if (!v)
        return eb_error_set(err, EB_ERR_PARSE, "%s: line %d: expected "
                            "\"name value\"", file, line);
    *v++ = '\0';
    for (int f = 0; f < F_COUNT; f++) {
        if (strcmp(s, field_names[f]) != 0)
            continue;
        if (seen[f])
            return eb_error_set(err, EB_ERR_INVALID, "%s: line %d: %s: given "
                                "twice", file, line, s);
        seen[f] = 1;
        return parse_field(file, line, f, v, c, err);
    }
    return eb_error_set(err, EB_ERR_INVALID, "%s: line %d: unknown field "
                        "'%.40s'", file, line, s);
}

eb_status eb_calib_read(const char *file, eb_calibration *out, eb_error *err)
{
    memset(out, 0, sizeof *out);
    char *text;
    eb_status st = read_small(file, &text, err);
    if (st)
        return st;
    int seen[F_COUNT] = {0}, line = 0;
    for (char *s = text, *next; !st && s && *s; s = next) {
        next = strchr(s, '\n');
        if (next)
            *next++ = '\0';
        line++;
        if (*s && *s != '#')
            st = parse_line(file, line, s, out, seen, err);
    }
    free(text);
    for (int f = 0; !st && f < F_COUNT; f++)
        if (!seen[f] && !optional_field(f))
            st = eb_error_set(err, EB_ERR_INVALID, "%s: %s: missing (not a "
                              "calibration file?)", file, field_names[f]);
    if (st)
        return st;
    snprintf(out->file, sizeof out->file, "%s", file);
    return EB_OK;
}

static int key_matches(const eb_calibration *c, const eb_sysinfo *sys,
                       int threads)
{
    return c->threads == threads && strcmp(c->cpu_model, sys->cpu_model) == 0
           && strcmp(c->blas_config, sys->blas_config) == 0
           && strcmp(c->blas_core, sys->blas_core) == 0;
}

/* Written whole to a temporary beside `file`, then renamed over it. */
static eb_status write_file(const eb_calibration *c, const char *file,
                            eb_error *err)
{
    char tmp[EB_CALIB_PATH + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", file, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return eb_error_set(err, EB_ERR_IO, "%s: cannot write: %s", tmp,
                            strerror(errno));
    fprintf(f, "# einsum-bench calibrate: cblas_dgemm 1024^3 rate (gflops, "
            "GFLOP/s; gflops_<dtype>: the {s,z,c}gemm rates, 2 * 1024^3 "
            "flops per call) and c[i] = a[i] * b[i] bandwidth over three "
            "32 MiB arrays (gbs, GB/s), best of a few runs\n");
    fprintf(f, "%s 1\ncpu_model %s\nblas_config %s\nblas_core %s\n"
            "threads %d\n", MAGIC, c->cpu_model, c->blas_config,
            c->blas_core, c->threads);
    for (int dt = 0; dt < EB_DTYPE_COUNT; dt++)
        if (c->rates.gflops[dt] > 0)
            fprintf(f, "%s %.17g\n", field_names[F_GFLOPS + dt],
                    c->rates.gflops[dt]);
    fprintf(f, "gbs %.17g\ndate %s\n", c->rates.gbs, c->date);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, file) != 0) {
        int e = errno;
        unlink(tmp);
        return eb_error_set(err, EB_ERR_IO, "%s: cannot write: %s", file,
                            strerror(e));
    }
    return EB_OK;
}

/* mkdir -p of the folder part of `file`. */
static int make_parent_dirs(const char *file)
{
    char dir[EB_CALIB_PATH];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(dir, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return (h ^ '\n') * 0x100000001b3ULL;
}

int eb_calib_cache_file(const eb_sysinfo *sys, int threads, char *buf,
                        size_t size)
{
    const char *dir = getenv("EB_CALIBRATION_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[EB_CALIB_PATH];
    if (dir && *dir)
        snprintf(base, sizeof base, "%s", dir);
    else if (xdg && *xdg == '/')
        snprintf(base, sizeof base, "%s/einsum-bench", xdg);
    else if (home && *home)
        snprintf(base, sizeof base, "%s/.cache/einsum-bench", home);
    else
        return -1;
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv1a(h, METHOD);
    h = fnv1a(h, sys->cpu_model);
    h = fnv1a(h, sys->blas_config);
    h = fnv1a(h, sys->blas_core);
    int n = snprintf(buf, size, "%s/calibration-t%d-%016llx.txt", base,
                     threads, (unsigned long long)h);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* The cache's calibration when it exists, parses and has this key. */
static int from_cache(const eb_sysinfo *sys, int threads, const char *file,
                      FILE *notes, eb_calibration *out)
{
    struct stat sb;
    if (stat(file, &sb) != 0 && errno == ENOENT)
        return 0;
    eb_error e;
    if (eb_calib_read(file, out, &e)) {
        fprintf(notes, "einsum-bench: note: calibration cache %s; measuring "
                "again\n", e.msg);
        return 0;
    }
    if (!key_matches(out, sys, threads)) {
        fprintf(notes, "einsum-bench: note: calibration cache %s was made "
                "for another CPU, BLAS or thread count; measuring again\n",
                file);
        return 0;
    }
    out->source = "cache";
    out->key_matches = 1;
    return 1;
}

static void utc_now(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The dtypes a request needs: float64's always, all of them to measure. */
static unsigned needed_dtypes(const eb_calib_opts *o)
{
    return o->measure ? EB_CALIB_ALL_DTYPES
                      : (o->dtypes | 1u << EB_F64) & EB_CALIB_ALL_DTYPES;
}

/* The bits of `need` whose F c lacks. */
static unsigned missing_dtypes(const eb_calibration *c, unsigned need)
{
    unsigned m = 0;
    for (int dt = 0; dt < EB_DTYPE_COUNT; dt++)
        if ((need & 1u << dt) && !(c->rates.gflops[dt] > 0))
            m |= 1u << dt;
    return m;
}

/* "complex128, float32" of the bits. */
static const char *dtype_list(unsigned bits, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int dt = 0; dt < EB_DTYPE_COUNT && len < size; dt++)
        if (bits & 1u << dt)
            len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                    len ? ", " : "",
                                    eb_dtype_name((eb_dtype)dt));
    return buf;
}

/* Write c to `file` (the cache, or --calibration FILE of calibrate) and
 * name it in c->file; a failure is a note, not an error. */
static void store(eb_calibration *c, const char *file, FILE *notes)
{
    eb_error e;
    if (make_parent_dirs(file))
        eb_error_set(&e, EB_ERR_IO, "%s: cannot create its folder: %s", file,
                     strerror(errno));
    else if (!write_file(c, file, &e))
        snprintf(c->file, sizeof c->file, "%s", file);
    if (!c->file[0])
        fprintf(notes, "einsum-bench: note: calibration not cached: %s\n",
                e.msg);
}

/* A valid cached calibration that lacks some F the run needs: measure
 * those and add them to the file (under Valgrind: a note, and the run goes
 * on without them). */
static eb_status top_up(const eb_calib_opts *o, const char *file,
                        unsigned missing, FILE *notes, eb_calibration *out,
                        eb_error *err)
{
    char names[64];
    dtype_list(missing, names, sizeof names);
    if (eb_window_on_valgrind()) {
        fprintf(notes, "einsum-bench: note: %s has no GEMM rate for %s and "
                "under Valgrind nothing is calibrated: no roofline figures "
                "for %s\n", file, names, names);
        return EB_OK;
    }
    fprintf(notes, "einsum-bench: calibrating the roofline model's %s GEMM "
            "rate (first use of %s for this CPU, BLAS and --threads %d)\n",
            names, names, o->threads);
    eb_status st = measure_gemms(o->threads, missing, &out->rates, err);
    if (st)
        return st;
    utc_now(out->date, sizeof out->date);
    out->file[0] = '\0';
    store(out, file, notes);
    return EB_OK;
}

eb_status eb_calib_get(const eb_sysinfo *sys, const eb_calib_opts *o,
                       FILE *notes, eb_calibration *out, eb_error *err)
{
    unsigned need = needed_dtypes(o);
    if (o->file && !o->measure) {
        eb_status st = eb_calib_read(o->file, out, err);
        if (st)
            return st;
        unsigned m = missing_dtypes(out, need);
        for (int dt = 0; dt < EB_DTYPE_COUNT; dt++)
            if (m & 1u << dt)
                return eb_error_set(err, EB_ERR_INVALID, "%s: %s: missing "
                                    "(the run needs the %s GEMM rate; "
                                    "einsum-bench calibrate --calibration "
                                    "FILE measures every dtype)", o->file,
                                    field_names[F_GFLOPS + dt],
                                    eb_dtype_name((eb_dtype)dt));
        out->source = "file";
        out->key_matches = key_matches(out, sys, o->threads);
        if (!out->key_matches)
            fprintf(notes, "einsum-bench: note: %s was calibrated for another "
                    "CPU, BLAS or thread count; its rates are used as "
                    "given\n", o->file);
        return EB_OK;
    }
    char file[EB_CALIB_PATH];
    int cached = o->file ? snprintf(file, sizeof file, "%s", o->file) > 0
                 : eb_calib_cache_file(sys, o->threads, file, sizeof file) == 0;
    if (cached && !o->measure &&
        from_cache(sys, o->threads, file, notes, out)) {
        unsigned m = missing_dtypes(out, need);
        return m ? top_up(o, file, m, notes, out, err) : EB_OK;
    }
    memset(out, 0, sizeof *out);
    if (eb_window_on_valgrind())
        return eb_error_set(err, EB_ERR_UNSUPPORTED, "under Valgrind nothing "
                            "is calibrated (its times are not the machine's) "
                            "and no cached calibration has this CPU, BLAS "
                            "core (%s under Valgrind) and --threads %d",
                            sys->blas_core, o->threads);
    if (!o->measure)
        fprintf(notes, "einsum-bench: calibrating the roofline model (first "
                "use for this CPU, BLAS and --threads %d)\n", o->threads);
    eb_status st = eb_calib_measure(o->threads, need, &out->rates, err);
    if (st)
        return st;
    out->source = "measured";
    out->key_matches = 1;
    out->threads = o->threads;
    snprintf(out->cpu_model, sizeof out->cpu_model, "%s", sys->cpu_model);
    snprintf(out->blas_config, sizeof out->blas_config, "%s",
             sys->blas_config);
    snprintf(out->blas_core, sizeof out->blas_core, "%s", sys->blas_core);
    utc_now(out->date, sizeof out->date);
    if (!cached) {
        fprintf(notes, "einsum-bench: note: no cache folder (set HOME, "
                "XDG_CACHE_HOME or EB_CALIBRATION_DIR); not cached\n");
        return EB_OK;
    }
    store(out, file, notes);
    return EB_OK;
}

void eb_calib_json(const eb_calibration *c, eb_jw *w, const char *key)
{
    if (!c) {
        eb_jw_null(w, key);
        return;
    }
    eb_jw_obj_begin(w, key);
    eb_jw_num(w, "gflops", c->rates.gflops[EB_F64]);
    eb_jw_obj_begin(w, "gflops_by_dtype");
    for (int dt = 0; dt < EB_DTYPE_COUNT; dt++) {
        if (c->rates.gflops[dt] > 0)
            eb_jw_num(w, eb_dtype_name((eb_dtype)dt), c->rates.gflops[dt]);
        else
            eb_jw_null(w, eb_dtype_name((eb_dtype)dt));
    }
    eb_jw_obj_end(w);
    eb_jw_num(w, "gbs", c->rates.gbs);
    eb_jw_int(w, "threads", c->threads);
    eb_jw_str(w, "source", c->source);
    eb_jw_str(w, "file", c->file[0] ? c->file : NULL);
    eb_jw_bool(w, "key_matches", c->key_matches);
    eb_jw_str(w, "cpu_model", c->cpu_model);
    eb_jw_str(w, "blas_config", c->blas_config);
    eb_jw_str(w, "blas_core", c->blas_core);
    eb_jw_str(w, "date", c->date[0] ? c->date : NULL);
    eb_jw_str(w, "gemm", "cblas_{d,s,z,c}gemm 1024^3 (gflops: dgemm), "
              "2 * 1024^3 flops per call, best of 5 after 1 warmup");
    eb_jw_str(w, "stream", "c[i] = a[i] * b[i], 3 x 32 MiB, best of 10 "
              "passes with ordinary and 10 with non-temporal stores, after "
              "1 warmup of each");
    eb_jw_obj_end(w);
}
