/*
 * npy: reading and writing NumPy .npy files (format versions 1.0, 2.0 and
 * 3.0 on read; 1.0 on write) holding float64 arrays in C order.
 *
 * Only '<f8' (little-endian float64; '=f8' too, which means the same on the
 * little-endian hosts this module builds for), fortran_order False, is
 * accepted; any other dtype or order is a clear error naming the file and the
 * header field. A 0-d array (shape ()) holds one element (a scalar output).
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

#include "status.h"

enum { EB_NPY_MAX_RANK = 64, EB_NPY_MAX_HEADER_BYTES = 1 << 20 };

/*
 * Read file into dst, which has room for the product of expected[0..rank-1]
 * elements and must have that shape exactly (rank 0: shape (), one element).
 * A shape mismatch is EB_ERR_INVALID with a message like
 * "in/3.npy: shape: (4, 5) but operand 3 needs (4, 6)".
 * `what` names the operand in messages ("operand 3"; NULL: "the caller").
 * Errors: EB_ERR_IO (open/read), EB_ERR_PARSE (not .npy, bad header,
 * truncated data), EB_ERR_UNSUPPORTED (dtype, order, version),
 * EB_ERR_INVALID (shape). On failure dst may have been partly written.
 */
eb_status eb_npy_read(const char *file, const int64_t *expected, int rank,
                      double *dst, const char *what, eb_error *err);

/* Write data (compact, C order) with the given shape; written to a temporary
 * file first and renamed into place, so a failure never leaves a partial
 * file. The bytes are those numpy.save (numpy >= 1.24) writes for the same
 * array. */
eb_status eb_npy_write(const char *file, const int64_t *shape, int rank,
                       const double *data, eb_error *err);

#endif
