/*
 * jsonw: a small streaming JSON writer into an in-memory buffer.
 *
 * Records are built whole in memory and written with one call, so a failure
 * never leaves half a record in a file. Keys are NULL inside arrays.
 * Non-finite numbers are written as null. Strings are escaped per RFC 8259
 * (UTF-8 passes through).
 *
 * Ownership: eb_jw_create returns a writer the caller destroys; eb_jw_text
 * borrows the writer's buffer until the next write or reset.
 */
#ifndef EB_JSONW_H
#define EB_JSONW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

typedef struct eb_jw eb_jw;

/* indent > 0: pretty-print with that many spaces per level; 0: one line. */
eb_jw *eb_jw_create(int indent);
void eb_jw_destroy(eb_jw *w);
void eb_jw_reset(eb_jw *w);

void eb_jw_obj_begin(eb_jw *w, const char *key);
void eb_jw_obj_end(eb_jw *w);
void eb_jw_arr_begin(eb_jw *w, const char *key);
void eb_jw_arr_end(eb_jw *w);
void eb_jw_str(eb_jw *w, const char *key, const char *val); /* NULL: null */
void eb_jw_num(eb_jw *w, const char *key, double val);      /* %.17g-exact */
void eb_jw_fixed(eb_jw *w, const char *key, double val, int decimals);
void eb_jw_int(eb_jw *w, const char *key, int64_t val);
void eb_jw_bool(eb_jw *w, const char *key, int val);
void eb_jw_null(eb_jw *w, const char *key);
/* Start a compact (one-line) region inside a pretty document, e.g. for a
 * [i, j] pair; ends at the matching end call. */
void eb_jw_arr_begin_inline(eb_jw *w, const char *key);

const char *eb_jw_text(const eb_jw *w);
size_t eb_jw_len(const eb_jw *w);
/* 0 after any allocation failure or unbalanced nesting. */
int eb_jw_ok(const eb_jw *w);

/* Write the whole text plus a newline with one fwrite; 0 on success. */
int eb_jw_write_line(const eb_jw *w, FILE *f);

/* Write the document (plus a newline) to FILE.tmp, then rename it over
 * FILE: a failure never leaves a partial FILE. */
eb_status eb_jw_write_file(const eb_jw *w, const char *file, eb_error *err);

#endif
