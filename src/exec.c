/* exec: the mode table. */
#include "exec.h"

#include <string.h>

#include "eager.h"
#include "trace.h"

const char *eb_mode_name(eb_mode m)
{
    return m == EB_MODE_EAGER ? "eager" : m == EB_MODE_TRACE ? "trace" : "?";
}

eb_status eb_exec_create(eb_mode mode, const eb_instance *inst,
                         const eb_path *path, const eb_view *inputs,
                         eb_pool *pool, struct eb_team *team,
                         const eb_fuse_opts *fuse, eb_executor *ex,
                         eb_error *err)
{
    memset(ex, 0, sizeof *ex);
    switch (mode) {
    case EB_MODE_EAGER:
        return eb_eager_create(inst, path, inputs, pool, team, ex, err);
    case EB_MODE_TRACE:
        return eb_trace_create(inst, path, inputs, team, fuse, ex, err);
    default:
        return eb_error_set(err, EB_ERR_UNSUPPORTED,
                            "mode '%s' is not implemented yet",
                            eb_mode_name(mode));
    }
}

void eb_exec_destroy(eb_executor *ex)
{
    if (ex->destroy)
        ex->destroy(ex->ctx);
    memset(ex, 0, sizeof *ex);
}
