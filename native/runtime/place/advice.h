/*
 * The advice-call budget of the swap tier's moving placements (dynamic.c's schedule and
 * online.c's sampled placement), the calls paid from it and their counts file: one token
 * bucket per process, refilled at
 * OBJTIER_ADVICE_RATE calls per second, holding at most one second of calls. Each mlock,
 * munlock or madvise such a placement makes takes one token; what does not fit waits (or is
 * dropped by its caller).
 *
 * Invariant: 0 <= tokens <= rate after every refill; a call may take the last token only
 * (tokens never go below -1 when callers check rt_advice_has first). Every function takes the
 * bucket's own mutex, so the two placements' threads and the program's thread at a phase
 * switch may share it.
 */
#ifndef OBJTIER_ADVICE_H
#define OBJTIER_ADVICE_H

#include <stddef.h>
#include <stdint.h>

/* Sets the rate (calls per second, > 0) and fills the bucket, at time now [ns]. The first
 * caller sets it; later callers keep it. */
void rt_advice_init(double rate, uint64_t now);

/* The tokens accrued up to now, then 1 if at least `calls` are there. */
int rt_advice_has(uint64_t now, unsigned calls);

/* One call made: one token taken. */
void rt_advice_spend(void);

/* ns from now until `calls` tokens are there (0 when they are). */
uint64_t rt_advice_wait_ns(unsigned calls);

double rt_advice_rate(void);

/* One advice system call nr(a, len[, arg]) (arg < 0: none) paid from the bucket: one token
 * taken, *counter counted, the time inside it added to *ns, *failed counted when it fails.
 * 1 on success; on failure 0 with the call's errno. */
int rt_advice_call(long nr, uint64_t a, uint64_t len, long arg, uint64_t *counter, uint64_t *ns,
                   uint64_t *failed);

/* A placement's counts into path: created 0600, truncated, never through a link; one warning
 * when it cannot be written. len is what snprintf returned for text, a buffer of cap bytes:
 * nothing is written when len <= 0, and at most cap - 1 bytes (a truncated text) otherwise. */
void rt_advice_write_counts(const char *path, const char *text, int len, size_t cap);

/* fork() child: the bucket is made anew by the next init. */
void rt_advice_fork_child(void);

#endif
