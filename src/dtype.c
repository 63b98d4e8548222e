#include "dtype.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
    int complex;
    eb_dtype real;
} dtypes[EB_DTYPE_COUNT] = {
    [EB_F64] = {"float64", 8, 0, EB_F64},
    [EB_F32] = {"float32", 4, 0, EB_F32},
    [EB_C128] = {"complex128", 16, 1, EB_F64},
    [EB_C64] = {"complex64", 8, 1, EB_F32},
};

const char *eb_dtype_name(eb_dtype t)
{
    return (unsigned)t < EB_DTYPE_COUNT ? dtypes[t].name : "?";
}

int eb_dtype_parse(const char *s, eb_dtype *out)
{
    for (int t = 0; t < EB_DTYPE_COUNT; t++)
        if (strcmp(s, dtypes[t].name) == 0) {
            *out = (eb_dtype)t;
            return 0;
        }
    return -1;
}

size_t eb_dtype_size(eb_dtype t) { return dtypes[t].size; }

int eb_dtype_is_complex(eb_dtype t) { return dtypes[t].complex; }

eb_dtype eb_dtype_real(eb_dtype t) { return dtypes[t].real; }
