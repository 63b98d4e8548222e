/*
 * args: what every sub-command's argument parsing shares: option values
 * given as "--opt VALUE" or "--opt=VALUE", and the one-line error message
 * "einsum-bench: [CMD: ]what is wrong" with an optional pointer to --help.
 */
#ifndef EB_ARGS_H
#define EB_ARGS_H

/* Value of "--opt VALUE" or "--opt=VALUE" at argv[*i] (advancing *i past a
 * separate value); NULL if argv[*i] is another option, "" if the value is
 * missing. */
const char *eb_arg_value(int argc, char **argv, int *i, const char *name);

/* Print "einsum-bench: " + prefix (may be NULL) + the message on stderr,
 * then "(einsum-bench HELP --help for usage)" when help is not NULL (""
 * for the top level). Returns code, so callers can `return eb_arg_fail(...)`. */
int eb_arg_fail(int code, const char *prefix, const char *help,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
