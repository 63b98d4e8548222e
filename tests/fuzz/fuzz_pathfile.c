/* fuzz_pathfile: the stored-path file loader against a fixed instance of
 * five operands (names, indices, costs, duplicate keys, ...). */
#include <string.h>

#include "fuzz.h"
#include "load.h"

static const char instance_json[] =
    "{\"name\": \"f\", \"format_string\": \"ab,bc,cd,de,ea->\", "
    "\"shapes\": [[2, 3], [3, 4], [4, 5], [5, 6], [6, 2]], "
    "\"dtype\": \"float64\", \"num_tensors\": 5}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static eb_instance *inst;
    eb_error err;
    if (!inst) {
        const char *f = eb_fuzz_file(1, (const uint8_t *)instance_json,
                                     strlen(instance_json));
        if (!f || eb_load_instance(f, &inst, &err))
            return 0;
    }
    const char *file = eb_fuzz_file(0, data, size);
    eb_pathset *ps;
    if (file && eb_load_pathfile(file, inst, &ps, &err) == EB_OK)
        eb_pathset_destroy(ps);
    return 0;
}
