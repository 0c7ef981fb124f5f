/* Phase markers (phase.c): the exported objtier_phase / objtier_phase_end and fork hook.
 * The public, program-side header is native/include/objtier/phase.h. */
#ifndef OBJTIER_RT_PHASE_H
#define OBJTIER_RT_PHASE_H

void objtier_phase(const char *name);
void objtier_phase_end(void);

/* Forked child: reset the lock, this thread's phase and the NAME records written. */
void rt_phase_fork_child(void);

#endif
