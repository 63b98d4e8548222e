/* test_sysinfo: collection, environment capture, safe truncation, and the
 * JSON and text renderings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "jsonw.h"
#include "sysinfo.h"
#include "utf8.h"

/* The value captured for env variable `name`, or NULL if not listed. */
static const char *env_value(const eb_sysinfo *si, const char *name,
                             int *is_set)
{
    for (int k = 0; k < si->num_env; k++)
        if (strcmp(si->env[k].name, name) == 0) {
            *is_set = si->env[k].is_set;
            return si->env[k].value;
        }
    return NULL;
}

static int valid_utf8(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = eb_utf8_decode(s + i, n - i, &cp);
        if (k == 0 || cp < 0x20)
            return 0;
        i += k;
    }
    return 1;
}

/* "YYYY-MM-DDTHH:MM:SSZ" */
static int iso_date(const char *s)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
    if (strlen(s) != sizeof shape - 1)
        return 0;
    for (size_t i = 0; shape[i]; i++)
        if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
            return 0;
    return 1;
}

static void test_fields(const eb_sysinfo *si)
{
    const char *fields[][2] = {
        {"cpu_model", si->cpu_model},   {"cpu_flags", si->cpu_flags},
        {"hostname", si->hostname},     {"kernel", si->kernel},
        {"blas_config", si->blas_config}, {"blas_core", si->blas_core},
        {"compiler", si->compiler},     {"cflags", si->cflags},
        {"git_commit", si->git_commit}, {"date", si->date},
    };
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        EB_CHECK(fields[k][1][0] != '\0', "%s is empty", fields[k][0]);
        EB_CHECK(valid_utf8(fields[k][1]), "%s is not clean UTF-8: %s",
                 fields[k][0], fields[k][1]);
    }
    EB_CHECK(si->online_cpus >= 1, "online_cpus = %d", si->online_cpus);
    EB_CHECK(si->blas_threads >= 1, "blas_threads = %d", si->blas_threads);
    EB_CHECK(si->blas_parallel >= 0 && si->blas_parallel <= 2,
             "blas_parallel = %d", si->blas_parallel);
    EB_CHECK(strncmp(si->compiler, "gcc ", 4) == 0 ||
                 strstr(si->compiler, "lang") != NULL,
             "compiler = %s", si->compiler);
    EB_CHECK(iso_date(si->date), "date = %s", si->date);
    EB_CHECK(si->avx2 == 0 || si->avx2 == 1, "avx2 = %d", si->avx2);
    /* cpuid may hide features (valgrind does), never invent them. */
    if (si->avx2)
        EB_CHECK(strstr(si->cpu_flags, "avx2") != NULL,
                 "avx2 reported but not in flags");
    EB_CHECK(si->num_env == 14, "num_env = %d", si->num_env);
    const char *modes[] = {"always", "madvise", "never", "unknown"};
    int known = 0;
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++)
        known |= strcmp(si->thp, modes[k]) == 0;
    EB_CHECK(known, "thp = %s", si->thp);
    /* The mode is the bracketed word of the kernel's file. */
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        char line[128] = "", want[40];
        if (fgets(line, sizeof line, f)) {
            snprintf(want, sizeof want, "[%s]", si->thp);
            EB_CHECK(strstr(line, want) != NULL, "thp %s, file says %s",
                     si->thp, line);
        }
        fclose(f);
    }
}

static void test_env(const eb_sysinfo *si)
{
    int set = -1;
    const char *v = env_value(si, "OPENBLAS_CORETYPE", &set);
    EB_CHECK(v && set == 1 && strcmp(v, "Haswell-test") == 0,
             "OPENBLAS_CORETYPE = %s (set %d)", v ? v : "(missing)", set);
    v = env_value(si, "OMP_PLACES", &set);
    EB_CHECK(v && set == 0 && v[0] == '\0', "OMP_PLACES unset: %s (set %d)",
             v ? v : "(missing)", set);
    v = env_value(si, "OMP_DYNAMIC", &set);
    EB_CHECK(v && set == 1 && v[0] == '\0', "OMP_DYNAMIC empty: %s (set %d)",
             v ? v : "(missing)", set);
    v = env_value(si, "OMP_NUM_THREADS", &set);
    EB_CHECK(v && strcmp(v, "a?b?c") == 0, "controls replaced: %s",
             v ? v : "(missing)");
    /* 200 two-byte characters: cut below 256 bytes on a character boundary. */
    v = env_value(si, "OMP_PROC_BIND", &set);
    EB_CHECK(v && strlen(v) == 254 && valid_utf8(v),
             "long UTF-8 value: %zu bytes", v ? strlen(v) : 0);
    v = env_value(si, "OPENBLAS_L2_SIZE", &set);
    EB_CHECK(v && strcmp(v, "?x") == 0, "invalid byte replaced: %s",
             v ? v : "(missing)");
}

static void test_json(const eb_sysinfo *si)
{
    eb_jw *w = eb_jw_create(0);
    eb_jw_obj_begin(w, NULL);
    eb_sysinfo_json(si, w);
    eb_jw_obj_end(w);
    const char *t = eb_jw_text(w);
    size_t n = eb_jw_len(w);
    EB_CHECK(eb_jw_ok(w), "writer failed");
    EB_CHECK(n > 2 && t[0] == '{' && t[n - 1] == '}', "not an object: %s", t);
    const char *want[] = {
        "\"blas_config\":\"", "\"OPENBLAS_CORETYPE\":\"Haswell-test\"",
        "\"OMP_PLACES\":null", "\"OMP_DYNAMIC\":\"\"", "\"avx2\":",
        "\"env\":{", "\"blas_parallel\":\"", "\"online_cpus\":",
        "\"thp\":\"", "\"version\":\"", "\"governor\":\"",
        "\"cpu_mhz\":", "\"caches\":\"", "\"mem_total_kb\":",
        "\"mem_avail_kb\":",
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        EB_CHECK(strstr(t, want[k]) != NULL, "JSON lacks %s", want[k]);
    eb_jw_destroy(w);
}

static void test_print(const eb_sysinfo *si)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    eb_sysinfo_print(si, f);
    fclose(f);
    EB_CHECK(strncmp(buf, "version: ", 9) == 0, "starts %.20s", buf);
    EB_CHECK(strstr(buf, "\ncpu_model: ") != NULL, "no cpu_model:\n%s", buf);
    EB_CHECK(strstr(buf, "\ngovernor: ") != NULL, "no governor:\n%s", buf);
    EB_CHECK(strstr(buf, "\ncpu_mhz: ") != NULL, "no cpu_mhz:\n%s", buf);
    EB_CHECK(strstr(buf, "\ncaches: ") != NULL, "no caches:\n%s", buf);
    EB_CHECK(strstr(buf, "\nmemory: ") != NULL, "no memory:\n%s", buf);
    EB_CHECK(strstr(buf, "\nenv.OPENBLAS_CORETYPE: Haswell-test\n") != NULL,
             "no env line:\n%s", buf);
    EB_CHECK(strstr(buf, "\nthp: ") != NULL, "no thp line:\n%s", buf);
    EB_CHECK(strstr(buf, "\nenv.OMP_PLACES: (unset)\n") != NULL,
             "no unset line:\n%s", buf);
    int lines = 0, bad = 0;
    for (char *p = buf; *p; lines++) {
        char *end = strchr(p, '\n');
        if (!end || !memchr(p, ':', (size_t)(end - p)))
            bad++;
        p = end ? end + 1 : p + strlen(p);
    }
    EB_CHECK(lines == 20 + 14 && bad == 0, "%d lines, %d not key: value",
             lines, bad);
    free(buf);
}

/* Write text to a fresh temp file named in buf (the caller removes it). */
static int temp_file(char *buf, size_t size, const char *text)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/eb-test-cpuinfo-XXXXXX",
             base && *base ? base : "/tmp");
    int fd = mkstemp(buf);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    return fclose(f);
}

static void test_cpuinfo(void)
{
    /* x86 form, flags longer than the field: cut at a whole flag. */
    size_t cap = 2 * EB_SYSINFO_FLAGS + 256;
    char *text = malloc(cap), file[256];
    size_t n = (size_t)snprintf(text, cap, "processor\t: 0\n"
                                "model name\t: Test CPU \t \n"
                                "flags\t\t:");
    for (int k = 0; n + 16 < cap - 64; k++)
        n += (size_t)snprintf(text + n, cap - n, " flag%d", k);
    snprintf(text + n, cap - n, "\nprocessor\t: 1\nmodel name\t: Other\n");
    eb_sysinfo *si = calloc(1, sizeof *si);
    EB_CHECK(temp_file(file, sizeof file, text) == 0, "temp file");
    eb_sysinfo_read_cpuinfo(si, file);
    remove(file);
    size_t len = strlen(si->cpu_flags);
    EB_CHECK(strcmp(si->cpu_model, "Test CPU") == 0, "model = '%s'",
             si->cpu_model);
    EB_CHECK(len < EB_SYSINFO_FLAGS && len > EB_SYSINFO_FLAGS - 16 &&
                 strncmp(si->cpu_flags, "flag0 flag1 ", 12) == 0,
             "flags: %zu bytes", len);
    /* The last flag kept is whole: it is followed by a space in the source. */
    char *last = strrchr(si->cpu_flags, ' ');
    char probe[32];
    snprintf(probe, sizeof probe, " %s ", last ? last + 1 : "?");
    EB_CHECK(last && strstr(text, probe) != NULL, "last flag cut: '%s'",
             last ? last + 1 : "(none)");

    /* Arm form; then a missing file. */
    temp_file(file, sizeof file, "Processor\t: ARMv7 rev 4 (v7l)\n"
                                 "Features\t: half thumb fastmult vfp\n");
    eb_sysinfo_read_cpuinfo(si, file);
    remove(file);
    EB_CHECK(strcmp(si->cpu_model, "ARMv7 rev 4 (v7l)") == 0 &&
                 strcmp(si->cpu_flags, "half thumb fastmult vfp") == 0,
             "arm: '%s' / '%s'", si->cpu_model, si->cpu_flags);
    eb_sysinfo_read_cpuinfo(si, "/nonexistent/cpuinfo");
    EB_CHECK(strcmp(si->cpu_model, "unknown") == 0 &&
                 strcmp(si->cpu_flags, "unknown") == 0,
             "missing: '%s' / '%s'", si->cpu_model, si->cpu_flags);
    free(si);
    free(text);
}

int main(void)
{
    char long_val[401];
    for (int i = 0; i < 200; i++)
        memcpy(long_val + 2 * i, "\xc3\xa9", 2); /* é */
    long_val[400] = '\0';
    setenv("OPENBLAS_CORETYPE", "Haswell-test", 1);
    setenv("OMP_DYNAMIC", "", 1);
    setenv("OMP_NUM_THREADS", "a\nb\033c", 1);
    setenv("OMP_PROC_BIND", long_val, 1);
    setenv("OPENBLAS_L2_SIZE", "\xffx", 1);
    unsetenv("OMP_PLACES");

    eb_sysinfo *si = malloc(sizeof *si);
    eb_sysinfo_collect(si);
    test_fields(si);
    test_env(si);
    test_json(si);
    test_print(si);
    free(si);
    test_cpuinfo();
    return eb_check_done("test_sysinfo");
}
