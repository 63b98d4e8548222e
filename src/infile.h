/*
 * infile: opening untrusted input files (DESIGN 3.3). Only regular files are
 * read: a FIFO, device, socket or folder given as an input file is an error,
 * never a hang (the open is O_NONBLOCK, so a FIFO without a writer cannot
 * block it, and the type is checked with fstat on the open descriptor, so a
 * file swapped between a check and the open is caught too). Each file has a
 * size cap.
 *
 * Ownership: eb_infile_open's descriptor and eb_infile_read's buffer belong
 * to the caller.
 */
#ifndef EB_INFILE_H
#define EB_INFILE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Cap of instance and path files: 256 MiB. */
#define EB_INFILE_MAX_BYTES ((int64_t)256 << 20)

/* Open file for reading (blocking reads, close-on-exec) if it is a regular
 * file of at most max_bytes; *size gets its size. Messages name the file. */
eb_status eb_infile_open(const char *file, int64_t max_bytes, int *fd,
                         int64_t *size, eb_error *err);

/* The whole file (at most max_bytes) in a NUL-terminated buffer. */
eb_status eb_infile_read(const char *file, int64_t max_bytes, char **text,
                         size_t *len, eb_error *err);

#endif
