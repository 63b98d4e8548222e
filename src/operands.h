/*
 * operands: the input tensors of a measurement, created and filled once
 * before the warmups (DESIGN 4.4).
 *
 * Fills: zeros (the default, as in the public suites), random:SEED (the
 * seeded generator below, uniform in [-1, 1)), or .npy files from a folder
 * (operand k from DIR/k.npy). The random generator is part of the contract
 * so that peers (scripts/ebpeer.py) fill bit-identical inputs: element i of
 * operand k is u(mix64(base_k + (i + 1) * 0x9E3779B97F4A7C15)) with
 * base_k = mix64(SEED + 0x632BE59BD9B4E019 * (k + 1)), mix64 the splitmix64
 * finaliser, u(v) = (v >> 11) * 2^-53 * 2 - 1; all arithmetic mod 2^64.
 * That stream of doubles fills every dtype (dtype.h): float64 takes value
 * i as element i; complex128 takes values 2i and 2i+1 as the real and
 * imaginary parts of element i (the buffer is 2n doubles); float32 and
 * complex64 take the same values as float64 and complex128 rounded to
 * float (to nearest), so a float32 run's inputs are the float64 run's
 * rounded. Buffers hold elements of the instance's dtype (inst->dt, the
 * run's dtype), eb_dtype_size bytes each.
 *
 * Ownership: eb_operands owns its buffers; the views borrow them.
 */
#ifndef EB_OPERANDS_H
#define EB_OPERANDS_H

#include <stdint.h>

#include "dtype.h"
#include "tensor.h"

typedef enum { EB_FILL_ZEROS, EB_FILL_RANDOM, EB_FILL_NPY } eb_fill_kind;

typedef struct {
    eb_fill_kind kind;
    uint64_t seed;          /* EB_FILL_RANDOM */
    const char *dir;        /* EB_FILL_NPY */
} eb_fill;

typedef struct {
    int count;
    void **bufs;            /* elements of inst->dt */
    eb_view *views;
    int64_t bytes;          /* all input buffers */
} eb_operands;

/* Parse "zeros", "random" or "random:SEED"; 0 on success. */
int eb_fill_parse(const char *s, eb_fill *fill);

eb_status eb_operands_create(const eb_instance *inst, const eb_fill *fill,
                             eb_operands **out, eb_error *err);
void eb_operands_destroy(eb_operands *ops);

/* Fill n float64 elements of operand k as EB_FILL_RANDOM with seed would. */
void eb_fill_random(double *dst, int64_t n, uint64_t seed, int k);

/* The same for n elements of dtype dt (the mapping above). */
void eb_fill_random_dt(void *dst, eb_dtype dt, int64_t n, uint64_t seed,
                       int k);

#endif
