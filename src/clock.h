/*
 * clock: the one clock every time the tool takes is read from
 * (CLOCK_MONOTONIC, DESIGN 4.4), in nanoseconds.
 */
#ifndef EB_CLOCK_H
#define EB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t eb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
