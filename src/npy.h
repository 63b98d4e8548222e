/*
 * npy: reading and writing NumPy .npy files (format versions 1.0, 2.0 and
 * 3.0 on read; 1.0 on write) holding arrays of one of dtype.h's element
 * types in C order.
 *
 * The descr of each dtype: '<f8' float64, '<f4' float32, '<c16'
 * complex128, '<c8' complex64 (little-endian; '=' for '<' too, which means
 * the same on the little-endian hosts this module builds for). A read
 * accepts only the descr of the dtype it is asked for (never converts),
 * fortran_order False; any other descr or order is a clear error naming the
 * file and the header field. A 0-d array (shape ()) holds one element (a
 * scalar output).
 *
 * Bytes after the data (never written by numpy) are ignored, as numpy.load
 * ignores them. The header dictionary is parsed as the Python literal numpy
 * writes: keys in any order, either quote style, any whitespace, trailing
 * comma; unknown or repeated keys are rejected, as is a header over
 * EB_NPY_MAX_HEADER_BYTES or a shape of more than EB_NPY_MAX_RANK axes.
 */
#ifndef EB_NPY_H
#define EB_NPY_H

#include <stdint.h>

#include "dtype.h"
#include "status.h"

enum { EB_NPY_MAX_RANK = 64, EB_NPY_MAX_HEADER_BYTES = 1 << 20 };

/*
 * Read file into dst, which has room for the product of expected[0..rank-1]
 * elements of dtype dt and must have that shape and dtype exactly (rank 0:
 * shape (), one element).
 * A shape mismatch is EB_ERR_INVALID with a message like
 * "in/3.npy: shape: (4, 5) but operand 3 needs (4, 6)".
 * `what` names the operand in messages ("operand 3"; NULL: "the caller").
 * Errors: EB_ERR_IO (open/read), EB_ERR_PARSE (not .npy, bad header,
 * truncated data), EB_ERR_UNSUPPORTED (an unknown descr, big-endian,
 * order, version), EB_ERR_INVALID (shape; a known descr of another dtype).
 * On failure dst may have been partly written.
 */
eb_status eb_npy_read(const char *file, const int64_t *expected, int rank,
                      eb_dtype dt, void *dst, const char *what,
                      eb_error *err);

/* The descr numpy writes for dt: "<f8", "<f4", "<c16", "<c8". */
const char *eb_npy_descr(eb_dtype dt);

/* Write data (compact, C order, elements of dt) with the given shape and
 * the descr of dt; written to a temporary file first and renamed into place, so a failure never leaves a partial
 * file. The bytes are those numpy.save (numpy >= 1.24) writes for the same
 * array. */
eb_status eb_npy_write(const char *file, const int64_t *shape, int rank,
                       eb_dtype dt, const void *data, eb_error *err);

#endif
