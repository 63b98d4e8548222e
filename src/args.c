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
