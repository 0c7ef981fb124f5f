/* Hardware counters read at region boundaries (region_pmu.c), on when OBJTIER_REGION_PMU is set.
 */
#ifndef OBJTIER_RT_REGION_PMU_H
#define OBJTIER_RT_REGION_PMU_H

#include "rt.h"

#include <stdint.h>

/* At a phase marker of the calling thread (rt_guard raised): the counts since its previous
 * marker go to the phase that marker entered; `entered` (a phase name id, 0 = none) is in
 * force from now on. */
RT_HIDDEN void rt_region_pmu_boundary(uint32_t entered);

/* Forked child: forget the parent thread's counters and totals. */
RT_HIDDEN void rt_region_pmu_fork_child(void);

#endif
