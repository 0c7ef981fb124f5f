/* The runtime's signal dispositions, owned with the sigaction/signal interposers; see
 * interpose_signal.c. */
#ifndef OBJTIER_INTERPOSE_SIGNAL_H
#define OBJTIER_INTERPOSE_SIGNAL_H
#include <signal.h>

/* SIGSEGV: installs the fault sampler's handler in front of the program's (0, or -1). */
int rt_signal_install(void (*handler)(int, siginfo_t *, void *));
/* SIGSEGV: a fault that is not the sampler's goes to the program's own disposition. */
void rt_signal_chain(int sig, siginfo_t *info, void *uctx);
/* Flush the trace on terminating signals left at SIG_DFL. */
void rt_signal_install_flush(void);

#endif
