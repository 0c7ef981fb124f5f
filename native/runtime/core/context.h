/* Allocation calling contexts: unwind, map frames to (module, offset), intern, emit. */
#ifndef OBJTIER_CONTEXT_H
#define OBJTIER_CONTEXT_H

#include <stdint.h>

#include "writer.h"

int rt_context_init(uint32_t depth); /* 0 or -errno */

/* The context id of the caller's call stack (frames inside the runtime skipped);
 * writes MODULE and CONTEXT records the first time. 0 when unwinding fails. */
uint32_t rt_context_capture(rt_writer *w);

/* The context id of a one-frame context naming a data address: frame = (module holding addr,
 * addr - load bias + 1), the +1 so that symbolizers, which look up offset - 1, find the
 * symbol that starts at addr. Writes MODULE and CONTEXT records the first time; 0 on failure. */
uint32_t rt_context_of_address(rt_writer *w, uint64_t addr);

/* The stable key of context id (trace_format.h, "Stable context key"): FNV-1a over its frames
 * as recorded — module basename, NUL, offset; a frame in no module has an empty name and its
 * absolute ip as offset. 0 when id is unknown. */
uint64_t rt_context_key(uint32_t id);
/* The same over the context's innermost max_depth frames only (1: a plan `site` record's
 * frame0 key). 0 when id is unknown. */
uint64_t rt_context_key_depth(uint32_t id, uint32_t max_depth);

/* Fork hooks: hold the lock across fork; a child writing its own file re-emits. */
void rt_context_lock(void);
void rt_context_unlock(void);
void rt_context_after_fork_child(void);

#endif
