/* test_operands: the inputs of a measurement in each dtype (issue 17):
 * buffers of the dtype's element size, zeros, the seeded random fill's
 * contract (operands.h: one stream of doubles; complex takes values 2i and
 * 2i+1 as the parts of element i; float32 and complex64 the same values
 * rounded to float), the same seed giving the same values, and --inputs
 * files that must have the run's dtype. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "npy.h"
#include "operands.h"

static eb_instance *make_instance(eb_dtype dt)
{
    int64_t s0[2] = {3, 4}, s1[1] = {4};
    int64_t *shapes[2] = {s0, s1};
    int ranks[2] = {2, 1};
    eb_instance *inst = NULL;
    eb_error err;
    EB_CHECK(eb_instance_build("ops.json", "ops", "ij,j->i",
                               eb_dtype_name(dt), 2, shapes, ranks, &inst,
                               &err) == EB_OK, "%s", err.msg);
    return inst;
}

/* The fill of each dtype against the float64 stream it is defined by. */
static void test_random_fill(void)
{
    double ref[2 * 12];
    for (int t = 0; t < EB_DTYPE_COUNT; t++) {
        eb_dtype dt = (eb_dtype)t;
        eb_instance *inst = make_instance(dt);
        if (!inst)
            continue;
        EB_CHECK(inst->dt == dt, "%s parsed", eb_dtype_name(dt));
        eb_fill fill;
        EB_CHECK(eb_fill_parse("random:42", &fill) == 0, "parse");
        eb_operands *a = NULL, *b = NULL;
        eb_error err;
        EB_CHECK(eb_operands_create(inst, &fill, &a, &err) == EB_OK &&
                     eb_operands_create(inst, &fill, &b, &err) == EB_OK,
                 "%s: %s", eb_dtype_name(dt), err.msg);
        if (!a || !b) {
            eb_operands_destroy(a);
            eb_operands_destroy(b);
            eb_instance_destroy(inst);
            continue;
        }
        size_t es = eb_dtype_size(dt);
        EB_CHECK(a->bytes == (12 + 4) * (int64_t)es, "%s: %lld bytes",
                 eb_dtype_name(dt), (long long)a->bytes);
        int cplx = eb_dtype_is_complex(dt), f32 = eb_dtype_real(dt) == EB_F32;
        for (int k = 0; k < 2; k++) {
            int64_t n = k ? 4 : 12, parts = cplx ? 2 * n : n;
            EB_CHECK(memcmp(a->bufs[k], b->bufs[k], (size_t)n * es) == 0,
                     "%s: operand %d: the same seed, other values",
                     eb_dtype_name(dt), k);
            EB_CHECK(a->views[k].data == a->bufs[k], "view on the buffer");
            eb_fill_random(ref, parts, 42, k);
            int same = 1, nonzero_imag = 0;
            for (int64_t i = 0; i < parts; i++) {
                double v = f32 ? ((const float *)a->bufs[k])[i]
                               : ((const double *)a->bufs[k])[i];
                same &= v == (f32 ? (double)(float)ref[i] : ref[i]);
                nonzero_imag |= cplx && i % 2 && v != 0;
            }
            EB_CHECK(same, "%s: operand %d is not the contract's stream",
                     eb_dtype_name(dt), k);
            EB_CHECK(!cplx || nonzero_imag, "%s: operand %d: imaginary parts "
                     "all zero", eb_dtype_name(dt), k);
        }
        eb_operands_destroy(a);
        eb_operands_destroy(b);
        EB_CHECK(eb_fill_parse("random:43", &fill) == 0, "parse");
        EB_CHECK(eb_operands_create(inst, &fill, &a, &err) == EB_OK, "%s",
                 err.msg);
        eb_fill_random(ref, 1, 42, 0);
        EB_CHECK(a && (f32 ? ((const float *)a->bufs[0])[0] != (float)ref[0]
                           : ((const double *)a->bufs[0])[0] != ref[0]),
                 "%s: another seed, the same first value", eb_dtype_name(dt));
        eb_operands_destroy(a);
        eb_instance_destroy(inst);
    }
}

static void test_zeros(void)
{
    for (int t = 0; t < EB_DTYPE_COUNT; t++) {
        eb_instance *inst = make_instance((eb_dtype)t);
        eb_fill fill;
        EB_CHECK(eb_fill_parse("zeros", &fill) == 0, "parse");
        eb_operands *a = NULL;
        eb_error err;
        EB_CHECK(inst && eb_operands_create(inst, &fill, &a, &err) == EB_OK,
                 "%s", err.msg);
        if (!a) {
            eb_instance_destroy(inst);
            continue;
        }
        const unsigned char *p = a->bufs[0];
        int zero = 1;
        for (size_t i = 0; i < 12 * eb_dtype_size((eb_dtype)t); i++)
            zero &= p[i] == 0;
        EB_CHECK(zero, "%s: zeros", eb_dtype_name((eb_dtype)t));
        eb_operands_destroy(a);
        eb_instance_destroy(inst);
    }
}

/* --inputs: files of the run's dtype are read as they are; a file of
 * another dtype is refused naming the file and 'descr'. */
static void test_npy_inputs(void)
{
    char dir[] = "/tmp/eb-test-operands-XXXXXX";
    if (!mkdtemp(dir))
        return;
    char f0[64], f1[64];
    snprintf(f0, sizeof f0, "%s/0.npy", dir);
    snprintf(f1, sizeof f1, "%s/1.npy", dir);
    double v[2 * 12];
    for (int i = 0; i < 24; i++)
        v[i] = i * 0.5 - 3;
    const int64_t d0[2] = {3, 4}, d1[1] = {4};
    eb_error err;
    EB_CHECK(eb_npy_write(f0, d0, 2, EB_C128, v, &err) == EB_OK, "%s",
             err.msg);
    EB_CHECK(eb_npy_write(f1, d1, 1, EB_C128, v, &err) == EB_OK, "%s",
             err.msg);
    eb_fill fill = {.kind = EB_FILL_NPY, .dir = dir};
    eb_instance *inst = make_instance(EB_C128);
    eb_operands *a = NULL;
    EB_CHECK(inst && eb_operands_create(inst, &fill, &a, &err) == EB_OK,
             "complex128 inputs: %s", err.msg);
    EB_CHECK(a && memcmp(a->bufs[0], v, 12 * 16) == 0 &&
                 memcmp(a->bufs[1], v, 4 * 16) == 0,
             "complex128 inputs read as written");
    eb_operands_destroy(a);
    eb_instance_destroy(inst);
    inst = make_instance(EB_C64);
    a = NULL;
    eb_status st = inst ? eb_operands_create(inst, &fill, &a, &err)
                        : EB_ERR_INTERNAL;
    EB_CHECK(st == EB_ERR_INVALID && !a && strstr(err.msg, f0) &&
                 strstr(err.msg, "descr: '<c16' is complex128, not "
                                 "complex64"),
             "complex64 run, complex128 files: %d %s", st, err.msg);
    eb_instance_destroy(inst);
    remove(f0);
    remove(f1);
    rmdir(dir);
}

int main(void)
{
    test_random_fill();
    test_zeros();
    test_npy_inputs();
    return eb_check_done("test_operands");
}
