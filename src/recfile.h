/*
 * recfile: the file JSON-lines records go to (--json FILE), written so that
 * a record is always whole (DESIGN 3.3):
 *
 *   - each record (text and its newline) is written with one write(2) on an
 *     O_APPEND descriptor, so no kill can leave half a line behind; a short
 *     write (a full disk) is rolled back by truncating to the size before
 *     it, and reported;
 *   - the file is held under an exclusive advisory lock (flock) from the
 *     open to the close: a second einsum-bench given the same file refuses
 *     at once, before measuring anything, instead of mixing its records in;
 *   - the file is emptied only after the lock is won (the old fopen "w"
 *     truncated it under a running writer).
 * "-" is standard output (no lock, no truncation). A FIFO or device is
 * accepted as a stream (a FIFO without a reader is refused, not waited on).
 *
 * Ownership: eb_recfile_open returns an object eb_recfile_close frees.
 */
#ifndef EB_RECFILE_H
#define EB_RECFILE_H

#include <stddef.h>

#include "status.h"

typedef struct eb_recfile eb_recfile;

/* Errors: EB_ERR_USAGE when another process holds the file, EB_ERR_IO
 * otherwise; messages name the file and give errno's text. */
eb_status eb_recfile_open(const char *file, eb_recfile **out, eb_error *err);

/* Write text[0..len) and a newline as one record. */
eb_status eb_recfile_write(eb_recfile *rf, const char *text, size_t len,
                           eb_error *err);

void eb_recfile_close(eb_recfile *rf); /* NULL is fine */

/* 1 when both paths exist and name the same file (device and inode). */
int eb_recfile_same_file(const char *a, const char *b);

#endif
