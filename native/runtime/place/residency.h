/* Residency (NUMA tier, while recording): see residency.c. */
#ifndef OBJTIER_RESIDENCY_H
#define OBJTIER_RESIDENCY_H

#include <stdint.h>

/* One pass over every tracked object (move_pages queries): RESIDENCY records with time
 * now_ns. */
void rt_residency_pass(uint64_t now_ns);

int rt_residency_init(void); /* 0, or -ENOMEM (then no residency) */

#endif
