/* window: Callgrind client requests and the stderr markers. */
#include "window.h"

#include <stdio.h>
#include <valgrind/callgrind.h>
#include <valgrind/valgrind.h>

int eb_window_on_valgrind(void)
{
    return RUNNING_ON_VALGRIND ? 1 : 0;
}

void eb_window_begin(const char *label)
{
    if (RUNNING_ON_VALGRIND) {
        fprintf(stderr, "einsum-bench: callgrind window begin %s\n", label);
        fflush(stderr);
    }
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
}

void eb_window_end(const char *label, int dump)
{
    if (dump)
        CALLGRIND_DUMP_STATS_AT(label);
    CALLGRIND_STOP_INSTRUMENTATION;
    if (RUNNING_ON_VALGRIND) {
        fprintf(stderr, "einsum-bench: callgrind window end %s\n", label);
        fflush(stderr);
    }
}

void eb_window_dump(const char *label)
{
    CALLGRIND_DUMP_STATS_AT(label);
}
