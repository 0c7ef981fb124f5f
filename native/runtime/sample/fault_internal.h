/*
 * Between the fault sampler's scanner (sampler_fault.c) and its record of what the program
 * does to protections and signal masks (fault_protect.c). Not for the interposers: they
 * use fault_guard.h.
 */
#ifndef OBJTIER_FAULT_INTERNAL_H
#define OBJTIER_FAULT_INTERNAL_H

#include <stdint.h>

/* fault_protect.c: the arm lock (one window is armed or restored only under it). The
 * lock counts its holders per thread: a signal handler that interrupts a thread holding
 * it must not wait for it (rt_fault_lock_held_here). fork(): prepare takes the mutex and
 * parent gives it back (the holder count is left alone); rt_fault_protect_fork_child makes
 * it anew. */
void rt_fault_lock(void);
void rt_fault_unlock(void);
int rt_fault_lock_held_here(void);
void rt_fault_lock_fork_prepare(void);
void rt_fault_lock_fork_parent(void);

/* fault_protect.c. Caller holds the lock for every *_locked call. */
/* Protections are recorded from now on; disarm_overlap_locked (the scanner's, called with
 * the lock held) restores the armed window if it overlaps [lo, hi). */
void rt_fault_protect_init(void (*disarm_overlap_locked)(uint64_t lo, uint64_t hi));
int rt_fault_protect_tracking(void);
/* 1 when a window may be armed now: no thread is blocking SIGSEGV or about to, no stdio
 * call is in flight, the protection record is whole. Reads every thread's SigBlk. */
int rt_fault_arming_allowed_locked(void);
/* After arming (or refusing): stdio calls waiting for the arm go on. */
void rt_fault_arming_end(void);
/* The run of equal protection from start (cut at end) and whether it may be armed
 * (exactly PROT_READ|PROT_WRITE, default dflt where the program set nothing). */
uint64_t rt_fault_rw_run_locked(uint64_t start, uint64_t end, uint32_t dflt, int *armable);
/* Why arming was refused the last time (a fixed string for the log), NULL if it was not. */
const char *rt_fault_refusal(void);
void rt_fault_protect_fork_child(void);

#endif
