/*
 * objtier code-region markers: name the regions of a program whose memory behaviour
 * `objtier camat --regions` should report on its own.
 *
 *     #include <objtier/region.h>
 *     objtier_region_begin("update centers");
 *     ...                                   // the region's code (may open regions inside)
 *     objtier_region_end("update centers");
 *
 * Under the runtime (libobjtier.so) each call writes a REGION record (and a NAME record at a
 * name's first use) and, with OBJTIER_REGION_PMU, reads the hardware counters, so that the
 * counts between two markers go to the innermost open region. Without the runtime the calls
 * do nothing (one pointer test each).
 *
 * Semantics: regions are per thread and nest (at most 64 deep; deeper ones are not recorded).
 * objtier_region_end(name) closes the innermost open region of that name and any opened inside
 * it; an end with no open region of that name does nothing. Unlike phases
 * (<objtier/phase.h>), regions change no placement: they only label what is measured. Names
 * are UTF-8, copied by the runtime; the same name is the same region. Thread-safe; not
 * async-signal-safe.
 */
#ifndef OBJTIER_REGION_H
#define OBJTIER_REGION_H

#include <objtier/phase.h> /* objtier_lookup_: the runtime's symbol, looked up once */

#ifdef __cplusplus
extern "C" {
#endif

/* The runtime's definitions (exported by libobjtier.so) have these names. */
typedef void (*objtier_region_fn_)(const char *name);

static inline void objtier_region_call_(void **slot, int *looked, const char *symbol,
                                        const char *name)
{
    void *f = objtier_lookup_(slot, looked, symbol);
    if (f) {
        objtier_region_fn_ call;
        memcpy(&call, &f, sizeof call);
        call(name);
    }
}

/* Opens the region `name` on this thread, inside the regions open there. */
static inline void objtier_region_begin(const char *name)
{
    static void *fn;
    static int looked;
    objtier_region_call_(&fn, &looked, "objtier_region_begin", name);
}

/* Closes this thread's innermost open region `name` (and the regions opened inside it). */
static inline void objtier_region_end(const char *name)
{
    static void *fn;
    static int looked;
    objtier_region_call_(&fn, &looked, "objtier_region_end", name);
}

#ifdef __cplusplus
}
#endif

#endif /* OBJTIER_REGION_H */
