/*
 * check.h: the unit-test harness of einsum-bench (header only).
 *
 * EB_CHECK(cond, fmt, ...) counts a pass or prints the failure with its
 * location; eb_check_done() prints "<name>: N passed, N failed" and returns
 * the exit status. tests/run-all sums those lines.
 */
#ifndef EB_TEST_CHECK_H
#define EB_TEST_CHECK_H

#include <stdio.h>

static int eb_checks_passed, eb_checks_failed;

#define EB_CHECK(cond, ...)                                                  \
    do {                                                                     \
        if (cond) {                                                          \
            eb_checks_passed++;                                              \
        } else {                                                             \
            eb_checks_failed++;                                              \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

static inline int eb_check_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, eb_checks_passed,
           eb_checks_failed);
    return eb_checks_failed ? 1 : 0;
}

#endif
