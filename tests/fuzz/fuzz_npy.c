/* fuzz_npy: the .npy reader (magic, version, header dictionary, descr
 * against each dtype, shape check, data) into a 3x4 operand. */
#include "fuzz.h"
#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t shape[2] = {3, 4};
    double dst[12 * 2]; /* room for 12 complex128 */
    eb_error err;
    const char *file = eb_fuzz_file(0, data, size);
    for (int t = 0; file && t < EB_DTYPE_COUNT; t++)
        (void)eb_npy_read(file, shape, 2, (eb_dtype)t, dst, "operand 0",
                          &err);
    return 0;
}
