/* fuzz_npy: the .npy reader (magic, version, header dictionary, shape
 * check, data) into a 3x4 float64 operand. */
#include "fuzz.h"
#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t shape[2] = {3, 4};
    double dst[12];
    eb_error err;
    const char *file = eb_fuzz_file(0, data, size);
    if (file)
        (void)eb_npy_read(file, shape, 2, dst, "operand 0", &err);
    return 0;
}
