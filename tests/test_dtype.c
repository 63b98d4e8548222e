/* test_dtype: names, sizes and kinds of every dtype; bad names. */
#include <string.h>

#include "check.h"
#include "dtype.h"

int main(void)
{
    static const char *names[] = {"float64", "float32", "complex128",
                                  "complex64"};
    static const size_t sizes[] = {8, 4, 16, 8};
    for (int i = 0; i < EB_DTYPE_COUNT; i++) {
        eb_dtype t = (eb_dtype)i, got = EB_DTYPE_COUNT;
        EB_CHECK(eb_dtype_parse(names[i], &got) == 0 && got == t, "%s",
                 names[i]);
        EB_CHECK(strcmp(eb_dtype_name(t), names[i]) == 0, "%s", names[i]);
        EB_CHECK(eb_dtype_size(t) == sizes[i], "%s", names[i]);
        int cplx = t == EB_C128 || t == EB_C64;
        EB_CHECK(eb_dtype_is_complex(t) == cplx, "%s", names[i]);
        EB_CHECK(eb_dtype_size(eb_dtype_real(t)) * (cplx ? 2u : 1u) ==
                     sizes[i], "%s", names[i]);
    }
    static const char *bad[] = {"float16", "", "Float64", "complex", "f8",
                                "float64 "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        eb_dtype got = EB_F32;
        EB_CHECK(eb_dtype_parse(bad[i], &got) == -1 && got == EB_F32,
                 "'%s'", bad[i]);
    }
    EB_CHECK(strcmp(eb_dtype_name(EB_DTYPE_COUNT), "?") == 0, "out of range");
    return eb_check_done("test_dtype");
}
