/* Stable context keys (FNV-1a of module basename + offset frames) for plan matching. */
#ifndef OBJTIER_PLANKEY_H
#define OBJTIER_PLANKEY_H

#include <stdint.h>

/* The key of context id ctx (from rt_context_capture), computed from its recorded frames on
 * first use and cached; the caller serializes. 0 when ctx is unknown. */
uint64_t rt_plankey_of(uint32_t ctx);

/* Context ids start over (a forked child writing its own file). */
void rt_plankey_reset(void);

#endif
