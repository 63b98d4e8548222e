/* status: message table and error context formatting. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const status_names[EB_STATUS_COUNT] = {
    [EB_OK] = "ok",
    [EB_ERR_USAGE] = "usage error",
    [EB_ERR_IO] = "i/o error",
    [EB_ERR_PARSE] = "parse error",
    [EB_ERR_INVALID] = "invalid input",
    [EB_ERR_UNSUPPORTED] = "unsupported",
    [EB_ERR_NOMEM] = "out of memory",
    [EB_ERR_CHECK] = "check failed",
    [EB_ERR_INTERNAL] = "internal error",
};

const char *eb_status_str(eb_status s)
{
    if ((unsigned)s >= EB_STATUS_COUNT)
        return "unknown status";
    return status_names[s];
}

eb_status eb_error_set(eb_error *err, eb_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = s;
    }
    return s;
}

void eb_error_clear(eb_error *err)
{
    if (err) {
        err->status = EB_OK;
        err->msg[0] = '\0';
    }
}
