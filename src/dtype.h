/*
 * dtype: the element types the pipeline runs. An instance file names its
 * dtype; `--dtype` may run it in another one. Everything that depends on
 * the element type (element size, BLAS routine, kernels, .npy descr,
 * roofline rate, check tolerance) asks this module or switches on eb_dtype;
 * strides and sizes elsewhere stay in elements.
 *
 * Complex types are interleaved (real, imaginary), as in C99 _Complex,
 * numpy and BLAS.
 */
#ifndef EB_DTYPE_H
#define EB_DTYPE_H

#include <stddef.h>

typedef enum {
    EB_F64,   /* float64, the default and the public suite's dtype */
    EB_F32,   /* float32 */
    EB_C128,  /* complex128: two float64 */
    EB_C64,   /* complex64: two float32 */
    EB_DTYPE_COUNT
} eb_dtype;

/* "float64", "float32", "complex128", "complex64". */
const char *eb_dtype_name(eb_dtype t);

/* Parse a name as above; 0 on success, -1 when s names no dtype. */
int eb_dtype_parse(const char *s, eb_dtype *out);

/* Bytes per element: 8, 4, 16, 8. */
size_t eb_dtype_size(eb_dtype t);

/* 1 for complex128 and complex64. */
int eb_dtype_is_complex(eb_dtype t);

/* The real type under t (itself for a real type). */
eb_dtype eb_dtype_real(eb_dtype t);

#endif
