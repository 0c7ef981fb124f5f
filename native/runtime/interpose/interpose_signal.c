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
 *
 * SIGSEGV blocked (fault sampler). A thread that blocks SIGSEGV and touches an armed page
 * would be killed by the kernel, so:
 *   - sigprocmask/pthread_sigmask calls that block SIGSEGV tell the sampler first
 *     (rt_fault_segv_block_begin disarms and keeps windows off until the mask is set;
 *     afterwards the sampler reads the mask from /proc/self/task/N/status);
 *   - a program handler for another signal whose sa_mask holds SIGSEGV is installed
 *     through a trampoline with SIGSEGV left out of the kernel's mask; while it runs the
 *     thread counts as blocking SIGSEGV (rt_segv_logically_blocked) and a fault there
 *     that is not the sampler's takes SIGSEGV's default action, as the kernel would do
 *     for a blocked SIGSEGV. sigaction reports the program's own sa_mask and handler;
 *   - the program's SIGSEGV handler is called with its sa_mask blocked (SIGSEGV itself
 *     left deliverable, so the sampler's faults inside the handler are still served).
 */
#define _GNU_SOURCE
#include "interpose_signal.h"
#include "rt.h"
#include "fault_guard.h"
#include "real.h"
#include "writer.h"
#include "sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int installed;
static struct sigaction app_segv; /* the program's SIGSEGV disposition */
static pthread_mutex_t app_lock = PTHREAD_MUTEX_INITIALIZER;
__thread int rt_segv_logically_blocked __attribute__((tls_model("initial-exec")));

/* Program handlers installed through the trampoline (their sa_mask holds SIGSEGV). */
#define NSIGS 65
static struct sigaction app_act[NSIGS];
static void trampoline(int sig, siginfo_t *info, void *uctx);
static int needs_trampoline(int sig, const struct sigaction *act);

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
    /* handlers the program installed before now that block SIGSEGV: through the trampoline */
    for (int sig = 1; sig < NSIGS; sig++) {
        struct sigaction cur;
        if (sig != SIGSEGV && rt_real.sigaction(sig, NULL, &cur) == 0 &&
            needs_trampoline(sig, &cur))
            sigaction(sig, &cur, NULL);
    }
    return 0;
}

/* Calls the program's SIGSEGV handler with its sa_mask blocked, as the kernel would
 * (SIGSEGV itself stays deliverable: the sampler's faults must be served inside it). A
 * handler that longjmps out leaves the mask the jump restores, as without the runtime. */
static void call_app_segv(const struct sigaction *a, int sig, siginfo_t *info, void *uctx)
{
    sigset_t mask = a->sa_mask, old;
    sigdelset(&mask, SIGSEGV);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &mask, &old, 8);
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(sig, info, uctx);
    else
        a->sa_handler(sig);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, 8);
}

/* Frame of the innermost trampoline running on this thread: a fault whose stack pointer
 * lies above it happened after the handler was left by a longjmp (the count is stale). */
static RT_TLS uintptr_t trampoline_frame;

static int still_in_trampoline(void *uctx)
{
#if defined(__x86_64__)
    uintptr_t sp = (uintptr_t)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RSP];
    if (trampoline_frame && sp > trampoline_frame) {
        rt_segv_logically_blocked = 0;
        trampoline_frame = 0;
        return 0;
    }
#endif
    (void)uctx;
    return 1;
}

void rt_signal_chain(int sig, siginfo_t *info, void *uctx)
{
    /* a fault on a thread that (for the program) blocks SIGSEGV: the kernel would reset
     * SIGSEGV to its default action and deliver it, killing the process */
    if (rt_segv_logically_blocked > 0 && info->si_code > 0 && still_in_trampoline(uctx)) {
        flush_then_default(sig);
        return;
    }
    /* no lock: a handler cannot block; a torn read is as likely as the program changing
     * its handler while faulting, and the copy is a plain struct */
    struct sigaction a = app_segv;
    if (a.sa_flags & SA_SIGINFO) {
        if ((void *)a.sa_sigaction != (void *)SIG_DFL &&
            (void *)a.sa_sigaction != (void *)SIG_IGN) {
            if (a.sa_flags & SA_RESETHAND)
                app_segv.sa_handler = SIG_DFL, app_segv.sa_flags = 0;
            call_app_segv(&a, sig, info, uctx);
            return;
        }
    } else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) {
        if (a.sa_flags & SA_RESETHAND)
            app_segv.sa_handler = SIG_DFL, app_segv.sa_flags = 0;
        call_app_segv(&a, sig, info, uctx);
        return;
    }
    /* a genuine fault with no program handler: die by SIGSEGV, trace flushed first */
    flush_then_default(sig);
    if (info->si_code <= 0) /* sent by kill/raise: the instruction will not fault again */
        raise(sig);
    /* returning re-executes the faulting instruction under SIG_DFL */
}

static const int terminating[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGABRT,
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

static void trampoline(int sig, siginfo_t *info, void *uctx)
{
    struct sigaction a = app_act[sig];
    uintptr_t outer = trampoline_frame;
    trampoline_frame = (uintptr_t)__builtin_frame_address(0);
    rt_segv_logically_blocked++;
    if (a.sa_flags & SA_SIGINFO)
        a.sa_sigaction(sig, info, uctx);
    else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN)
        a.sa_handler(sig);
    if (rt_segv_logically_blocked > 0)
        rt_segv_logically_blocked--;
    trampoline_frame = outer;
}

/* 1 if act is a program handler for a signal other than SIGSEGV that blocks SIGSEGV. */
static int needs_trampoline(int sig, const struct sigaction *act)
{
    if (!act || sig == SIGSEGV || sig <= 0 || sig >= NSIGS || !atomic_load(&installed))
        return 0;
    void *h = (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction : (void *)act->sa_handler;
    return h != (void *)SIG_DFL && h != (void *)SIG_IGN && sigismember(&act->sa_mask, SIGSEGV);
}

/* The program sees its own handler and sa_mask where the trampoline stands in. */
static void hide_trampoline(int sig, struct sigaction *oldact)
{
    if (oldact && sig > 0 && sig < NSIGS && (oldact->sa_flags & SA_SIGINFO) &&
        oldact->sa_sigaction == trampoline)
        *oldact = app_act[sig];
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
    rt_real_init();
    if (sig != SIGSEGV || !atomic_load(&installed)) {
        int r;
        if (needs_trampoline(sig, act)) {
            struct sigaction k = *act, prev = sig < NSIGS ? app_act[sig] : k;
            app_act[sig] = *act;
            sigdelset(&k.sa_mask, SIGSEGV);
            k.sa_flags |= SA_SIGINFO;
            k.sa_sigaction = trampoline;
            r = rt_real.sigaction(sig, &k, oldact);
            if (oldact && (oldact->sa_flags & SA_SIGINFO) && oldact->sa_sigaction == trampoline)
                *oldact = prev;
            if (r != 0)
                app_act[sig] = prev;
        } else {
            r = rt_real.sigaction(sig, act, oldact);
            hide_trampoline(sig, oldact);
        }
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
    sighandler_t old = (app_segv.sa_flags & SA_SIGINFO)
                           ? (sighandler_t)(void *)app_segv.sa_sigaction
                           : app_segv.sa_handler;
    memset(&app_segv, 0, sizeof app_segv);
    app_segv.sa_handler = handler;
    app_segv.sa_flags = SA_RESTART; /* glibc's signal() has BSD semantics */
    sigemptyset(&app_segv.sa_mask);
    pthread_mutex_unlock(&app_lock);
    return old;
}

/* ---- signal masks ------------------------------------------------------------------ */

/* 1 if the call blocks SIGSEGV (it may already be blocked). */
static int blocks_segv(int how, const sigset_t *set)
{
    return set && (how == SIG_BLOCK || how == SIG_SETMASK) && sigismember(set, SIGSEGV) == 1;
}

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    static int (*real)(int, const sigset_t *, sigset_t *);
    if (!__atomic_load_n(&real, __ATOMIC_ACQUIRE)) {
        rt_resolving++;
        __atomic_store_n(&real, dlsym(RTLD_NEXT, "pthread_sigmask"), __ATOMIC_RELEASE);
        rt_resolving--;
    }
    int t = blocks_segv(how, set) ? rt_fault_segv_block_begin() : 0;
    int r = real(how, set, old);
    rt_fault_segv_block_done(t);
    return r;
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    static int (*real)(int, const sigset_t *, sigset_t *);
    if (!__atomic_load_n(&real, __ATOMIC_ACQUIRE)) {
        rt_resolving++;
        __atomic_store_n(&real, dlsym(RTLD_NEXT, "sigprocmask"), __ATOMIC_RELEASE);
        rt_resolving--;
    }
    int t = blocks_segv(how, set) ? rt_fault_segv_block_begin() : 0;
    int r = real(how, set, old);
    int saved = errno;
    rt_fault_segv_block_done(t);
    errno = saved;
    return r;
}

/* New threads inherit their creator's mask: the fault sampler reads every thread's SigBlk
 * again before its next window (fault_guard.h). */
int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!__atomic_load_n(&real, __ATOMIC_ACQUIRE)) {
        rt_resolving++;
        __atomic_store_n(&real, dlsym(RTLD_NEXT, "pthread_create"), __ATOMIC_RELEASE);
        rt_resolving--;
    }
    rt_fault_thread_event();
    int r = real(thread, attr, start, arg);
    rt_fault_thread_event();
    return r;
}
