/* args: option values and error messages of the command layer. */
#include "args.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *eb_arg_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (strcmp(argv[*i], name) != 0)
        return NULL;
    if (*i + 1 >= argc)
        return "";
    return argv[++*i];
}

int eb_arg_fail(int code, const char *prefix, const char *help,
                const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("einsum-bench: ", stderr);
    if (prefix)
        fprintf(stderr, "%s: ", prefix);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    if (help)
        fprintf(stderr, "(einsum-bench %s%s--help for usage)\n", help,
                *help ? " " : "");
    va_end(ap);
    return code;
}

/* Edit distance of a and b (both short), for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return (size_t)-1;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *eb_arg_closest(const char *s, const char *const *names, size_t n,
                           size_t stride)
{
    const char *best = NULL, *prefix_of = NULL;
    size_t bd = (size_t)-1, slen = strlen(s);
    int prefixes = 0;
    for (size_t k = 0; k < n; k++) {
        const char *name = *(const char *const *)((const char *)names +
                                                  k * stride);
        if (slen >= 3 && strncmp(s, name, slen) == 0) {
            prefixes++;
            prefix_of = name;
        }
        size_t d = edit_distance(s, name);
        if (d < bd) {
            bd = d;
            best = name;
        }
    }
    if (prefixes == 1)
        return prefix_of;
    size_t limit = slen / 3 > 2 ? slen / 3 : 2;
    return bd <= limit ? best : NULL;
}
