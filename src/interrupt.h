/*
 * interrupt: SIGINT and SIGTERM stop a run at the next sample boundary
 * (DESIGN 3.3). The first signal only sets a flag that the measurement loop
 * reads between runs; what was measured is kept and reported. A second
 * signal of either kind ends the process at once (exit 128 + signal) after
 * removing the temporary file being written, if any.
 *
 * Process-wide by nature (a signal disposition): the state lives here and
 * nowhere else.
 */
#ifndef EB_INTERRUPT_H
#define EB_INTERRUPT_H

/* Install the handlers (run and check call this once). */
void eb_interrupt_install(void);

/* The signal that asked to stop (SIGINT, SIGTERM), or 0. */
int eb_interrupt_pending(void);

/* Name of the temporary file being written (NULL: none); the handler of a
 * second signal unlinks it. The string must stay valid until cleared. */
void eb_interrupt_tmpfile(const char *path);

/* "SIGINT" or "SIGTERM". */
const char *eb_interrupt_name(int sig);

#endif
