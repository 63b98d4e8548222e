/*
 * args: what every sub-command's argument parsing shares: option values
 * given as "--opt VALUE" or "--opt=VALUE", and the one-line error message
 * "einsum-bench: [CMD: ]what is wrong" with an optional pointer to --help.
 */
#ifndef EB_ARGS_H
#define EB_ARGS_H

#include <stddef.h>

/* Value of "--opt VALUE" or "--opt=VALUE" at argv[*i] (advancing *i past a
 * separate value); NULL if argv[*i] is another option, "" if the value is
 * missing. */
const char *eb_arg_value(int argc, char **argv, int *i, const char *name);

/* Print "einsum-bench: " + prefix (may be NULL) + the message on stderr,
 * then "(einsum-bench HELP --help for usage)" when help is not NULL (""
 * for the top level). Returns code, so callers can `return eb_arg_fail(...)`. */
int eb_arg_fail(int code, const char *prefix, const char *help,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The closest of n names to s, for "did you mean": names[0] is the first,
 * each next one stride bytes further (a member of an array of structs, or
 * sizeof(char *) for a plain array): the one name s begins (3 characters
 * or more), else the nearest within a third of the length of s (at least 2
 * edits), else NULL. */
const char *eb_arg_closest(const char *s, const char *const *names, size_t n,
                           size_t stride);

#endif
