/* interrupt: a flag set by SIGINT/SIGTERM, read at sample boundaries. */
#include "interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t pending_sig;
static const char *volatile tmp_path;

static void on_signal(int sig)
{
    if (pending_sig) {
        const char *p = tmp_path;
        if (p)
            unlink(p);
        _exit(128 + sig);
    }
    pending_sig = sig;
}

void eb_interrupt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* Restart slow system calls: the flag is polled, never waited on. */
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int eb_interrupt_pending(void) { return pending_sig; }

void eb_interrupt_tmpfile(const char *path) { tmp_path = path; }

const char *eb_interrupt_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}
