/* Phase markers (phase.c): the exported objtier_phase / objtier_phase_end and fork hook.
 * The public, program-side header is native/include/objtier/phase.h. */
#ifndef OBJTIER_RT_PHASE_H
#define OBJTIER_RT_PHASE_H

#include <stddef.h>
#include <stdint.h>

void objtier_phase(const char *name);
void objtier_phase_end(void);

/* The name id of name[0..n) (1.., shared by phases and code regions), writing its NAME record
 * at first use; 0 when the table is full. Call with rt_guard raised. */
uint32_t rt_phase_name_id(const char *name, size_t n);

/* The calling thread's phase (a name id), 0 = none. */
uint32_t rt_phase_current(void);

/* Forked child: reset the lock, this thread's phase and the NAME records written. */
void rt_phase_fork_child(void);

#endif
