/*
 * What the fault sampler must know to leave the program's behaviour unchanged, told by
 * the interposers (interpose_protect.c, interpose_signal.c, interpose_stdio.c):
 *   - every change the program makes to protections or mappings (mmap, mprotect,
 *     pkey_mprotect, munmap, mremap, madvise, mlock), so that only pages that are
 *     read-write now are armed and a window is restored to what the program set last;
 *   - a thread about to block SIGSEGV (a PROT_NONE fault on a thread that blocks it kills
 *     the process), so no window is armed then;
 *   - stdio calls in flight that may hand a program buffer straight to the kernel, so no
 *     new window is armed under them.
 * Every hook is a no-op unless the fault sampler was initialised.
 */
#ifndef OBJTIER_FAULT_GUARD_H
#define OBJTIER_FAULT_GUARD_H

#include <stdint.h>

#define RT_PROT_FORGET 0xFFFFFFFFu /* prot_end: the range is unmapped */

/* Before the program changes [addr, addr+len): disarms an overlapping window and holds
 * the arm lock until prot_end, so the scanner cannot arm in between. Returns the token
 * prot_end needs (0: nothing held). */
int rt_fault_prot_begin(uint64_t addr, uint64_t len);
/* After the change: when ok, the range (rounded out to pages) now has `prot` (a PROT_*
 * word, RT_PROT_* flags allowed) or, with RT_PROT_FORGET, is gone. Releases the lock. */
void rt_fault_prot_end(int token, uint64_t addr, uint64_t len, uint32_t prot, int ok);
/* After mremap: the old range's protection moves to the new one (the old range stays
 * when keep_old, MREMAP_DONTUNMAP). Releases the lock. */
void rt_fault_prot_moved(int token, uint64_t old, uint64_t old_len, uint64_t new_addr,
                         uint64_t new_len, int keep_old, int ok);
/* The program gave a protection key other than the default: arming stops for good. */
void rt_fault_pkeys_used(void);
/* [addr, addr+len) is never armed from now on (a stdio buffer given to setvbuf). */
void rt_fault_never_arm(uint64_t addr, uint64_t len);

/* The calling thread is about to block SIGSEGV: no window is armed until seg_block_done,
 * after which the thread's mask shows it blocked (the scanner reads every thread's
 * SigBlk before it arms). Returns a token for done. */
int rt_fault_segv_block_begin(void);
void rt_fault_segv_block_done(int token);
/* A thread is being created (called before and after pthread_create): it inherits its
 * creator's mask, so the scanner reads every thread's SigBlk again before it arms. */
void rt_fault_thread_event(void);

/* A stdio call that may pass a program buffer to the kernel is in flight: no new window
 * is armed until leave (the buffer's armed pages fault, and are restored, when the call
 * reads them in user mode first). */
int rt_fault_gate_enter(void);
void rt_fault_gate_leave(int token);

/* A thread runs a program signal handler that asked for SIGSEGV blocked (interpose_signal.c
 * keeps it unblocked for the kernel and counts it here); on_segv then treats a fault that
 * is not the sampler's as a blocked SIGSEGV: the default action, as the kernel would. */
extern __thread int rt_segv_logically_blocked __attribute__((tls_model("initial-exec")));

#endif
