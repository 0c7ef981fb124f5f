/* Static data objects: the large .data/.bss arrays of the loaded modules; see statics.c. */
#ifndef OBJTIER_STATICS_H
#define OBJTIER_STATICS_H
#include <stdint.h>

/* Registers every writable data symbol of at least min_size bytes of the executable and the
 * shared objects loaded now as an object (ALLOC kind STATIC). Called once, when main is about
 * to run. Returns the number of objects registered. */
int rt_statics_register(uint64_t min_size);

#endif
