/* sysinfo: gathers machine, build and BLAS facts once; writes them as JSON
 * members or as "key: value" lines. */
#include "sysinfo.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "blas.h"
#include "utf8.h"

/* The Makefile defines these for this file only; a hand build gets these. */
#ifndef EB_BUILD_CFLAGS
#define EB_BUILD_CFLAGS "unknown"
#endif
#ifndef EB_GIT_COMMIT
#define EB_GIT_COMMIT "unknown"
#endif

#ifdef __VERSION__
#define EB_CC_VERSION __VERSION__
#else
#define EB_CC_VERSION "unknown"
#endif

/* Variables that change how BLAS and OpenMP pick threads and kernels. */
static const char *const env_names[] = {
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS",
    "OPENBLAS_VERBOSE",  "GOTO_NUM_THREADS", "OMP_NUM_THREADS",
    "OMP_THREAD_LIMIT",  "OMP_DYNAMIC",      "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",  "OMP_PROC_BIND",    "OMP_PLACES",
    "OPENBLAS_THREAD_TIMEOUT", "EB_REEXEC",
};
enum { NUM_ENV = sizeof env_names / sizeof env_names[0] };
_Static_assert((int)NUM_ENV <= (int)EB_SYSINFO_ENVS,
               "env list outgrew eb_sysinfo");

/* Copy src[0..n) into dst[size] as valid UTF-8 with no control characters
 * (each invalid byte or control becomes '?'), cut at a character boundary.
 * The result is safe in JSON and on one line of text. Returns the number of
 * source bytes consumed (< n when truncated). */
static size_t copy_clean(char *dst, size_t size, const char *src, size_t n)
{
    size_t out = 0, in = 0;
    while (in < n) {
        uint32_t cp = 0;
        size_t k = eb_utf8_decode(src + in, n - in, &cp);
        const char *piece = src + in;
        size_t len = k;
        if (k == 0 || cp < 0x20 || cp == 0x7f) {
            piece = "?";
            len = 1;
            k = k ? k : 1;
        }
        if (out + len >= size)
            break;
        memcpy(dst + out, piece, len);
        out += len;
        in += k;
    }
    dst[out] = '\0';
    return in;
}

static void default_unknown(char *dst, size_t size)
{
    if (!dst[0])
        snprintf(dst, size, "unknown");
}

/* copy_clean of a C string, "unknown" when it is NULL or empty. */
static void set_str(char *dst, size_t size, const char *src)
{
    dst[0] = '\0';
    if (src)
        copy_clean(dst, size, src, strlen(src));
    default_unknown(dst, size);
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One "key<tabs>: value" line of /proc/cpuinfo; returns 1 and points *val at
 * the value (trimmed, *len bytes) if the key is `key`. */
static int cpuinfo_field(const char *line, const char *key, const char **val,
                         size_t *len)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0)
        return 0;
    const char *p = line + k;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != ':')
        return 0;
    p++;
    while (is_space(*p))
        p++;
    size_t n = strlen(p);
    while (n > 0 && is_space(p[n - 1]))
        n--;
    *val = p;
    *len = n;
    return 1;
}

/* Model name and flags of the first CPU listed (x86 "model name"/"flags",
 * Arm "Processor"/"Features"). Flags too long for the field are cut at the
 * last whole flag. */
void eb_sysinfo_read_cpuinfo(eb_sysinfo *si, const char *path)
{
    si->cpu_model[0] = si->cpu_flags[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) {
        default_unknown(si->cpu_model, sizeof si->cpu_model);
        default_unknown(si->cpu_flags, sizeof si->cpu_flags);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    const char *val;
    size_t len;
    while (!(si->cpu_model[0] && si->cpu_flags[0]) &&
           getline(&line, &cap, f) > 0) {
        if (!si->cpu_model[0] &&
            (cpuinfo_field(line, "model name", &val, &len) ||
             cpuinfo_field(line, "Processor", &val, &len)))
            copy_clean(si->cpu_model, sizeof si->cpu_model, val, len);
        if (!si->cpu_flags[0] &&
            (cpuinfo_field(line, "flags", &val, &len) ||
             cpuinfo_field(line, "Features", &val, &len)) &&
            copy_clean(si->cpu_flags, sizeof si->cpu_flags, val, len) < len) {
            char *cut = strrchr(si->cpu_flags, ' ');
            if (cut)
                *cut = '\0';
        }
    }
    free(line);
    fclose(f);
    default_unknown(si->cpu_model, sizeof si->cpu_model);
    default_unknown(si->cpu_flags, sizeof si->cpu_flags);
}

/* __VERSION__ says "12.2.0" for gcc and "Debian Clang 14.0.6" for clang:
 * name the compiler unless the version string already does. */
static void set_compiler(char *dst, size_t size)
{
#if defined(__clang__)
    const char *name = "clang";
#elif defined(__GNUC__)
    const char *name = "gcc";
#else
    const char *name = NULL;
#endif
    char buf[EB_SYSINFO_STR];
    if (name && !strcasestr(EB_CC_VERSION, name))
        snprintf(buf, sizeof buf, "%s %s", name, EB_CC_VERSION);
    else
        snprintf(buf, sizeof buf, "%s", EB_CC_VERSION);
    set_str(dst, size, buf);
}

static void set_date(char *dst, size_t size)
{
    time_t now = time(NULL);
    struct tm tm;
    if (now == (time_t)-1 || !gmtime_r(&now, &tm) ||
        strftime(dst, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(dst, size, "unknown");
}

static void read_env(eb_sysinfo *si)
{
    si->num_env = NUM_ENV;
    for (int k = 0; k < NUM_ENV; k++) {
        const char *v = getenv(env_names[k]);
        snprintf(si->env[k].name, sizeof si->env[k].name, "%s", env_names[k]);
        si->env[k].is_set = v != NULL;
        si->env[k].value[0] = '\0';
        if (v)
            copy_clean(si->env[k].value, sizeof si->env[k].value, v,
                       strlen(v));
    }
}

/* "always [madvise] never": the bracketed word is the mode. */
static void read_thp(eb_sysinfo *si)
{
    snprintf(si->thp, sizeof si->thp, "unknown");
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return;
    char line[128];
    if (fgets(line, sizeof line, f)) {
        char *l = strchr(line, '['), *r = l ? strchr(l, ']') : NULL;
        if (l && r && r - l - 1 > 0 && (size_t)(r - l - 1) < sizeof si->thp)
            copy_clean(si->thp, sizeof si->thp, l + 1, (size_t)(r - l - 1));
    }
    fclose(f);
}

/* The first line of a small file into dst (cleaned); 0, or -1. */
static int read_line(const char *file, char *dst, size_t size)
{
    FILE *f = fopen(file, "r");
    char line[256];
    int ok = f && fgets(line, sizeof line, f);
    if (f)
        fclose(f);
    if (!ok)
        return -1;
    size_t n = strcspn(line, "\n");
    copy_clean(dst, size, line, n);
    return 0;
}

/* Governor, mean MHz, cpu0's caches and memory: what makes times drift. */
static void read_clock_and_memory(eb_sysinfo *si)
{
    if (read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                  si->governor, sizeof si->governor))
        snprintf(si->governor, sizeof si->governor, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char *line = NULL;
    size_t cap = 0;
    double sum = 0;
    int n = 0;
    const char *val;
    size_t len;
    while (f && getline(&line, &cap, f) > 0)
        if (cpuinfo_field(line, "cpu MHz", &val, &len)) {
            sum += atof(val);
            n++;
        }
    if (f)
        fclose(f);
    si->cpu_mhz = n ? sum / n : 0;
    size_t used = 0;
    si->caches[0] = '\0';
    for (int k = 0; k < 8; k++) {
        char file[96], level[16], type[32], size[32];
        const char *names[3] = {"level", "type", "size"};
        char *dst[3] = {level, type, size};
        int ok = 1;
        for (int j = 0; j < 3 && ok; j++) {
            snprintf(file, sizeof file,
                     "/sys/devices/system/cpu/cpu0/cache/index%d/%s", k,
                     names[j]);
            ok = read_line(file, dst[j], 16) == 0;
        }
        if (!ok)
            break;
        const char *t = strcmp(type, "Data") == 0 ? "d"
                        : strcmp(type, "Instruction") == 0 ? "i" : "";
        used += (size_t)snprintf(si->caches + used, sizeof si->caches - used,
                                 "%sL%s%s %s", used ? ", " : "", level, t,
                                 size);
        if (used >= sizeof si->caches)
            break;
    }
    default_unknown(si->caches, sizeof si->caches);
    f = fopen("/proc/meminfo", "r");
    long long kb;
    while (f && getline(&line, &cap, f) > 0) {
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
            si->mem_total_kb = kb;
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
            si->mem_avail_kb = kb;
    }
    if (f)
        fclose(f);
    free(line);
}

static void read_host(eb_sysinfo *si)
{
    char host[EB_SYSINFO_STR] = "";
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0'; /* POSIX leaves truncation unterminated */
    set_str(si->hostname, sizeof si->hostname, host);

    struct utsname u;
    char kernel[2 * sizeof u.release + 2] = "";
    if (uname(&u) == 0)
        snprintf(kernel, sizeof kernel, "%.*s %.*s", (int)sizeof u.release,
                 u.sysname, (int)sizeof u.release, u.release);
    set_str(si->kernel, sizeof si->kernel, kernel);

    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    si->online_cpus = cpus > 0 && cpus <= INT32_MAX ? (int)cpus : 0;
}

void eb_sysinfo_collect(eb_sysinfo *si)
{
    memset(si, 0, sizeof *si);
    eb_sysinfo_read_cpuinfo(si, "/proc/cpuinfo");
    read_host(si);
    set_str(si->blas_config, sizeof si->blas_config, eb_blas_config());
    set_str(si->blas_core, sizeof si->blas_core, eb_blas_corename());
    si->blas_threads = eb_blas_threads();
    si->blas_parallel = eb_blas_parallel();
    set_compiler(si->compiler, sizeof si->compiler);
    set_str(si->cflags, sizeof si->cflags, EB_BUILD_CFLAGS);
    set_str(si->git_commit, sizeof si->git_commit, EB_GIT_COMMIT);
    set_date(si->date, sizeof si->date);
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    si->avx2 = __builtin_cpu_supports("avx2") != 0;
#endif
    read_thp(si);
    read_clock_and_memory(si);
    read_env(si);
}

static const char *parallel_name(int p)
{
    return p == 0 ? "sequential" : p == 1 ? "pthreads" : p == 2 ? "openmp"
                                                                : "unknown";
}

void eb_sysinfo_json(const eb_sysinfo *si, eb_jw *w)
{
    eb_jw_str(w, "version", EB_VERSION);
    eb_jw_str(w, "cpu_model", si->cpu_model);
    eb_jw_str(w, "cpu_flags", si->cpu_flags);
    eb_jw_int(w, "online_cpus", si->online_cpus);
    eb_jw_str(w, "hostname", si->hostname);
    eb_jw_str(w, "kernel", si->kernel);
    eb_jw_str(w, "blas_config", si->blas_config);
    eb_jw_str(w, "blas_core", si->blas_core);
    eb_jw_int(w, "blas_threads", si->blas_threads);
    eb_jw_str(w, "blas_parallel", parallel_name(si->blas_parallel));
    eb_jw_str(w, "compiler", si->compiler);
    eb_jw_str(w, "cflags", si->cflags);
    eb_jw_str(w, "git_commit", si->git_commit);
    eb_jw_str(w, "date", si->date);
    eb_jw_bool(w, "avx2", si->avx2);
    eb_jw_str(w, "thp", si->thp);
    eb_jw_str(w, "governor", si->governor);
    if (si->cpu_mhz > 0)
        eb_jw_num(w, "cpu_mhz", si->cpu_mhz);
    else
        eb_jw_null(w, "cpu_mhz");
    eb_jw_str(w, "caches", si->caches);
    eb_jw_int(w, "mem_total_kb", si->mem_total_kb);
    eb_jw_int(w, "mem_avail_kb", si->mem_avail_kb);
    eb_jw_obj_begin(w, "env");
    for (int k = 0; k < si->num_env && k < EB_SYSINFO_ENVS; k++)
        eb_jw_str(w, si->env[k].name,
                  si->env[k].is_set ? si->env[k].value : NULL);
    eb_jw_obj_end(w);
}

void eb_sysinfo_print(const eb_sysinfo *si, FILE *f)
{
    fprintf(f, "version: %s\n", EB_VERSION);
    fprintf(f, "cpu_model: %s\n", si->cpu_model);
    fprintf(f, "cpu_flags: %s\n", si->cpu_flags);
    fprintf(f, "online_cpus: %d\n", si->online_cpus);
    fprintf(f, "hostname: %s\n", si->hostname);
    fprintf(f, "kernel: %s\n", si->kernel);
    fprintf(f, "blas_config: %s\n", si->blas_config);
    fprintf(f, "blas_core: %s\n", si->blas_core);
    fprintf(f, "blas_threads: %d\n", si->blas_threads);
    fprintf(f, "blas_parallel: %s\n", parallel_name(si->blas_parallel));
    fprintf(f, "compiler: %s\n", si->compiler);
    fprintf(f, "cflags: %s\n", si->cflags);
    fprintf(f, "git_commit: %s\n", si->git_commit);
    fprintf(f, "date: %s\n", si->date);
    fprintf(f, "avx2: %s\n", si->avx2 ? "yes" : "no");
    fprintf(f, "thp: %s\n", si->thp);
    fprintf(f, "governor: %s\n", si->governor);
    if (si->cpu_mhz > 0)
        fprintf(f, "cpu_mhz: %.0f (mean over the CPUs, now)\n", si->cpu_mhz);
    else
        fprintf(f, "cpu_mhz: unknown\n");
    fprintf(f, "caches: %s (cpu0)\n", si->caches);
    fprintf(f, "memory: %.1f GiB total, %.1f GiB available\n",
            (double)si->mem_total_kb / 1048576.0,
            (double)si->mem_avail_kb / 1048576.0);
    for (int k = 0; k < si->num_env && k < EB_SYSINFO_ENVS; k++)
        fprintf(f, "env.%s: %s\n", si->env[k].name,
                !si->env[k].is_set     ? "(unset)"
                : !si->env[k].value[0] ? "(empty)"
                                       : si->env[k].value);
}
