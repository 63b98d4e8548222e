/*
 * status: the error vocabulary of einsum-bench.
 *
 * Every fallible function returns an eb_status and, on failure, fills an
 * eb_error with a context message that says where the problem is, in the form
 * "file: field[index]: what is wrong (what was expected)". Library code never
 * exits; only main.c maps a status to an exit code.
 */
#ifndef EB_STATUS_H
#define EB_STATUS_H

#include <stddef.h>

typedef enum {
    EB_OK = 0,
    EB_ERR_USAGE,       /* bad command line */
    EB_ERR_IO,          /* a file could not be read or written */
    EB_ERR_PARSE,       /* malformed JSON or .npy */
    EB_ERR_INVALID,     /* well-formed input that breaks a rule of DESIGN 3 */
    EB_ERR_UNSUPPORTED, /* valid input the engine does not handle (e.g. dtype) */
    EB_ERR_NOMEM,       /* allocation failed or a size overflowed */
    EB_ERR_CHECK,       /* a result disagreed with its reference */
    EB_ERR_INTERNAL,    /* a broken invariant: a bug in einsum-bench */
    EB_STATUS_COUNT
} eb_status;

enum { EB_ERROR_MSG_BYTES = 1024 };

typedef struct {
    eb_status status;
    char msg[EB_ERROR_MSG_BYTES];
} eb_error;

/* Short name of a status ("invalid input", ...). */
const char *eb_status_str(eb_status s);

/* Record a failure in err (which may be NULL) and return s. */
eb_status eb_error_set(eb_error *err, eb_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clear err to EB_OK with an empty message. */
void eb_error_clear(eb_error *err);

#endif
