/* Static data objects: the large .data/.bss arrays of the loaded modules; see statics.c. */
#ifndef OBJTIER_STATICS_H
#define OBJTIER_STATICS_H
#include <stdint.h>

/* Hands every writable data symbol of at least min_size bytes of the executable and the
 * shared objects loaded now to track(addr, size) (the runtime tracks it as an ALLOC of kind
 * STATIC), in address order per module, aliases and symbols inside another left out. Called
 * once, when main is about to run. Returns the number of objects handed over. */
int rt_statics_register(uint64_t min_size, void (*track)(uint64_t addr, uint64_t size));

/* The calling thread's stack mapping and its static thread-local storage, [lo, hi) each
 * (0, 0 when unknown). The main thread's stack is counted down to its RLIMIT_STACK (at most
 * 1 GiB) below the mapping's top, as it grows. */
typedef struct rt_thread_memory {
    uint64_t stack_lo, stack_hi, tls_lo, tls_hi;
} rt_thread_memory;

/* Sums the static TLS of the modules loaded now; once, before any thread asks. */
void rt_threadmem_init(void);

/* Raw system calls only: /proc/self/maps for the stack, the thread pointer for TLS. */
void rt_threadmem_ranges(rt_thread_memory *m);

#endif
