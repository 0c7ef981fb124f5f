/*
 * sigaction/signal interposition for SIGSEGV while the fault sampler owns the signal, and
 * the trace flush on terminating signals.
 *
 * Terminating signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGPIPE, SIGALRM,
 * SIGUSR1, SIGUSR2) whose disposition is SIG_DFL when recording starts get a handler that
 * flushes the trace, restores SIG_DFL and re-raises, so Ctrl-C or kill loses no record
 * and the program still dies by the same signal. Inherited SIG_IGN stays ignored. A program
 * that installs its own handler replaces ours; sigaction reports ours as SIG_DFL.
 *
 * The kernel-side handler is always ours. The program's view (what it installs and
 * what sigaction reports back) is kept in app_segv; faults that are not the sampler's
 * are passed to that handler, or, when it is SIG_DFL/SIG_IGN, the default action is
 * restored and the fault re-executed (or re-raised when the signal was sent) so the
 * program dies by SIGSEGV exactly as without the runtime.
 */
#define _GNU_SOURCE
#include "rt.h"
#include "real.h"
#include "runtime.h"
#include "sampler.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

static _Atomic int installed;
static struct sigaction app_segv; /* the program's SIGSEGV disposition */
static pthread_mutex_t app_lock = PTHREAD_MUTEX_INITIALIZER;

/* The trace is flushed, then sig goes back to SIG_DFL: what a dying process does before its
 * signal is delivered again. Async-signal-safe. */
static void flush_then_default(int sig)
{
    rt_flush_before_death();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    rt_real.sigaction(sig, &dfl, NULL);
}

int rt_signal_install(void (*handler)(int, siginfo_t *, void *))
{
    struct sigaction ours, old;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = handler;
    ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&ours.sa_mask);
    rt_real_init();
    if (rt_real.sigaction(SIGSEGV, &ours, &old) != 0)
        return -1;
    pthread_mutex_lock(&app_lock);
    app_segv = old;
    pthread_mutex_unlock(&app_lock);
    atomic_store(&installed, 1);
    return 0;
}

void rt_signal_chain(int sig, siginfo_t *info, void *uctx)
{
    /* no lock: a handler cannot block; a torn read is as likely as the program changing
     * its handler while faulting, and the copy is a plain struct */
    struct sigaction a = app_segv;
    if (a.sa_flags & SA_SIGINFO) {
        if ((void *)a.sa_sigaction != (void *)SIG_DFL && (void *)a.sa_sigaction != (void *)SIG_IGN) {
            if (a.sa_flags & SA_RESETHAND)
                app_segv.sa_handler = SIG_DFL, app_segv.sa_flags = 0;
            a.sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) {
        if (a.sa_flags & SA_RESETHAND)
            app_segv.sa_handler = SIG_DFL, app_segv.sa_flags = 0;
        a.sa_handler(sig);
        return;
    }
    /* a genuine fault with no program handler: die by SIGSEGV, trace flushed first */
    flush_then_default(sig);
    if (info->si_code <= 0) /* sent by kill/raise: the instruction will not fault again */
        raise(sig);
    /* returning re-executes the faulting instruction under SIG_DFL */
}

static const int terminating[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT,
                                  SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2};

static void on_terminating(int sig)
{
    int saved = errno;
    flush_then_default(sig);
    raise(sig); /* blocked while this handler runs: delivered, by SIG_DFL, on return */
    errno = saved;
}

void rt_signal_install_flush(void)
{
    rt_real_init();
    for (size_t i = 0; i < sizeof terminating / sizeof terminating[0]; i++) {
        struct sigaction old, ours;
        if (rt_real.sigaction(terminating[i], NULL, &old) != 0)
            continue;
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue; /* ignored or handled by the program: leave it alone */
        memset(&ours, 0, sizeof ours);
        ours.sa_handler = on_terminating;
        ours.sa_flags = SA_RESTART;
        sigemptyset(&ours.sa_mask);
        rt_real.sigaction(terminating[i], &ours, NULL);
    }
}

/* The program sees SIG_DFL where the flush handler stands in for it. */
static void hide_flush_handler(struct sigaction *oldact)
{
    if (oldact && !(oldact->sa_flags & SA_SIGINFO) && oldact->sa_handler == on_terminating) {
        oldact->sa_handler = SIG_DFL;
        oldact->sa_flags = 0;
    }
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
    rt_real_init();
    if (sig != SIGSEGV || !atomic_load(&installed)) {
        int r = rt_real.sigaction(sig, act, oldact);
        hide_flush_handler(oldact);
        return r;
    }
    pthread_mutex_lock(&app_lock);
    if (oldact)
        *oldact = app_segv;
    if (act)
        app_segv = *act;
    pthread_mutex_unlock(&app_lock);
    return 0;
}

sighandler_t signal(int sig, sighandler_t handler)
{
    rt_real_init();
    if (sig != SIGSEGV || !atomic_load(&installed)) {
        sighandler_t old = rt_real.signal(sig, handler);
        return old == on_terminating ? SIG_DFL : old;
    }
    pthread_mutex_lock(&app_lock);
    sighandler_t old = (app_segv.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)app_segv.sa_sigaction
                                                        : app_segv.sa_handler;
    memset(&app_segv, 0, sizeof app_segv);
    app_segv.sa_handler = handler;
    app_segv.sa_flags = SA_RESTART; /* glibc's signal() has BSD semantics */
    sigemptyset(&app_segv.sa_mask);
    pthread_mutex_unlock(&app_lock);
    return old;
}
