/* Stable context keys (FNV-1a of module basename + offset frames) for plan matching. */
#ifndef OBJTIER_PLANKEY_H
#define OBJTIER_PLANKEY_H

#include <stdint.h>

/* Finds the runtime's own code range and the main program's name. Call once at start-up. */
void rt_plankey_init(void);

/* The key of context id ctx (from rt_context_capture, same call). On the first use of ctx
 * the caller's stack is unwound; must run inside the allocation's rt_on_alloc call, under
 * the caller's lock. ctx 0 (unwinding failed) is computed each time and not cached. */
uint64_t rt_plankey_of(uint32_t ctx, uint32_t depth);

/* Context ids start over (a forked child writing its own file). */
void rt_plankey_reset(void);

#endif
