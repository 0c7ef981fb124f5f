/*
 * objtier phase markers: name the phases of a program so that objtier can profile and
 * place memory per phase.
 *
 *     #include <objtier/phase.h>
 *     objtier_phase("build graph");   // enter a phase; this thread's previous phase ends
 *     ...
 *     objtier_phase("bfs");
 *     ...
 *     objtier_phase_end();            // this thread is in no phase any more
 *
 * Header only: nothing to link. The first call looks the markers up in the running process
 * (dlsym(RTLD_DEFAULT)); under `objtier record` / `objtier run` they are the runtime's
 * (libobjtier.so), which writes PHASE and NAME records and, with a per-phase plan, applies
 * the phase's placement. Without the runtime the calls do nothing (one pointer test each).
 * glibc before 2.34 needs -ldl for dlsym.
 *
 * Semantics: phases are per thread and flat (entering a phase ends the thread's previous
 * one). Names are UTF-8, copied by the runtime; the same name is the same phase. The plan
 * in force changes at each call (the last call of any thread wins). Thread-safe; not
 * async-signal-safe.
 */
#ifndef OBJTIER_PHASE_H
#define OBJTIER_PHASE_H

#include <dlfcn.h>
#include <string.h>

#ifndef RTLD_DEFAULT
#define RTLD_DEFAULT ((void *)0) /* glibc's value, hidden without _GNU_SOURCE */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The runtime's definitions (exported by libobjtier.so) have these names. */
typedef void (*objtier_phase_fn_)(const char *name);
typedef void (*objtier_phase_end_fn_)(void);

/* Looks a marker up once per translation unit; 0 when no runtime is loaded. The race of two
 * first calls is benign (both store the same value). */
static inline void *objtier_lookup_(void **slot, int *looked, const char *symbol)
{
    if (!__atomic_load_n(looked, __ATOMIC_ACQUIRE)) {
        void *f = dlsym(RTLD_DEFAULT, symbol);
        __atomic_store_n(slot, f, __ATOMIC_RELAXED);
        __atomic_store_n(looked, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(slot, __ATOMIC_RELAXED);
}

/* Enters the phase `name` on this thread (ends this thread's previous phase). */
static inline void objtier_phase(const char *name)
{
    static void *fn;
    static int looked;
    void *f = objtier_lookup_(&fn, &looked, "objtier_phase");
    if (f) {
        objtier_phase_fn_ call;
        memcpy(&call, &f, sizeof call);
        call(name);
    }
}

/* Ends this thread's phase. */
static inline void objtier_phase_end(void)
{
    static void *fn;
    static int looked;
    void *f = objtier_lookup_(&fn, &looked, "objtier_phase_end");
    if (f) {
        objtier_phase_end_fn_ call;
        memcpy(&call, &f, sizeof call);
        call();
    }
}

#ifdef __cplusplus
}
#endif

#endif /* OBJTIER_PHASE_H */
