/*
 * window: the callgrind window around the sampled runs (DESIGN 4.5). The
 * only module that includes valgrind's headers.
 *
 * Natively each call costs a few instructions (the client request is a
 * no-op sequence) and nothing else. Under Valgrind, begin and end also print
 * a marker line on stderr with the window's label, so a log can be matched
 * to the dump files. Never uses CALLGRIND_TOGGLE_COLLECT: it would count only the
 * calling thread and drop OpenBLAS workers.
 */
#ifndef EB_WINDOW_H
#define EB_WINDOW_H

/* Nonzero when running under Valgrind. */
int eb_window_on_valgrind(void);

/* Marker "einsum-bench: callgrind window begin <label>" on stderr, then
 * START_INSTRUMENTATION + ZERO_STATS: call right before the first sample. */
void eb_window_begin(const char *label);

/* DUMP_STATS_AT(label) (when dump is nonzero) + STOP_INSTRUMENTATION,
 * then the end marker. */
void eb_window_end(const char *label, int dump);

/* --callgrind-per-sample: dump after one sample (callgrind zeroes the
 * counters after a dump, so the next sample starts from zero). */
void eb_window_dump(const char *label);

#endif
