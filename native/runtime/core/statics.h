/* Static data objects: the large .data/.bss arrays of the loaded modules; see statics.c. */
#ifndef OBJTIER_STATICS_H
#define OBJTIER_STATICS_H
#include <stdint.h>

/* Hands every writable data symbol of at least min_size bytes of the executable and the
 * shared objects loaded now to track(addr, size) (the runtime tracks it as an ALLOC of kind
 * STATIC), in address order per module, aliases and symbols inside another left out. Called
 * once, when main is about to run. Returns the number of objects handed over. */
int rt_statics_register(uint64_t min_size, void (*track)(uint64_t addr, uint64_t size));

#endif
