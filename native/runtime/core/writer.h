/*
 * Trace writer: per-thread record buffers, 64 KiB blocks, one write(2) per block.
 *
 * Invariants
 *   - A thread buffer (rt_tbuf) holds one pending block per fixed-size tag it writes
 *     (ALLOC, FREE, SAMPLE, SITE_ALLOC, SITE_FREE). Its memory comes from mmap and is never
 *     returned while the writer is open: a finished thread marks it free and the next new
 *     thread reuses it, so the list of buffers only grows to the peak number of live threads.
 *   - A pending block (rt_buf) is touched only by whoever holds its busy flag: the owner
 *     thread while appending, or the flusher / exit path while writing it out. Signal
 *     handlers only try the flag once (never spin) so they cannot deadlock with the
 *     interrupted owner.
 *   - The block header lives in front of the payload in the same buffer so that a block
 *     goes out with a single write(2) to the O_APPEND file.
 */
#ifndef OBJTIER_WRITER_H
#define OBJTIER_WRITER_H

#include <stdatomic.h>
#include <stdint.h>
#include <pthread.h>

#include "objtier/trace_format.h"

enum {
    RT_BUF_ALLOC = 0,
    RT_BUF_FREE = 1,
    RT_BUF_SAMPLE = 2,
    RT_BUF_SITE_ALLOC = 3,
    RT_BUF_SITE_FREE = 4,
    RT_BUF_COUNT = 5
};

typedef struct rt_buf {
    _Atomic int busy;     /* 1 while someone reads or writes this block */
    uint16_t tag;         /* enum ot_tag */
    uint16_t record_size; /* bytes per record */
    uint32_t count;       /* records pending */
    uint32_t capacity;    /* records that fit in OT_BLOCK_TARGET_BYTES */
    unsigned char block[sizeof(ot_block_header) + OT_BLOCK_TARGET_BYTES];
} rt_buf;

enum { RT_TBUF_FREE = 0, RT_TBUF_USED = 1 };

typedef struct rt_tbuf {
    struct rt_tbuf *next; /* list link; written once before the buffer is published */
    _Atomic int state;    /* RT_TBUF_FREE / RT_TBUF_USED */
    rt_buf bufs[RT_BUF_COUNT];
} rt_tbuf;

typedef struct rt_writer {
    int fd;                   /* O_APPEND file, -1 when closed */
    _Atomic(rt_tbuf *) head;  /* all thread buffers, newest first */
    _Atomic uint64_t records; /* records in blocks written so far */
    _Atomic uint64_t lost;    /* records dropped (busy block in a handler, I/O error) */
    _Atomic int io_error;     /* first -errno of a failed write, 0 if none */
    pthread_mutex_t var_lock; /* serializes var_buf users */
    unsigned char *var_buf;   /* scratch for variable-size blocks (header + payload) */
} rt_writer;

/* Scratch size for one variable-size block (header included). */
#define RT_VAR_BLOCK_BYTES (sizeof(ot_block_header) + 16384)

/* Trace files hold addresses and command lines: the directory is made 0700, files are
 * created 0600 with O_EXCL, and nothing is opened through a symbolic link (O_NOFOLLOW on
 * the directory and the file, O_CLOEXEC on both).
 * rt_trace_dir_open: creates `dir` (0700) when missing and opens it; -errno when it is a
 * symbolic link (-ELOOP), not a directory, or not owned by this user (-EPERM).
 * rt_trace_file_create: a new file `name` in it; -EEXIST when one is there.
 * rt_trace_file_reopen: an existing file `name` for reading and appending; -EPERM unless
 * it is a regular file of this user that nobody else may read or write. */
int rt_trace_dir_open(const char *dir);
int rt_trace_file_create(int dirfd, const char *name);
int rt_trace_file_reopen(int dirfd, const char *name);

/* Writes the 64-byte file header and prepares the writer. 0 or -errno. */
int rt_writer_open(rt_writer *w, int fd, uint32_t pid, uint32_t ppid, uint64_t start_mono,
                   uint64_t start_real);

/* A buffer set for a new thread: a free one is reused, else a new one is mapped.
 * Lock-free and async-signal-safe. NULL when out of memory. */
rt_tbuf *rt_tbuf_acquire(rt_writer *w);

/* Flushes t and marks it free for reuse (thread exit). */
void rt_tbuf_release(rt_writer *w, rt_tbuf *t);

/* Appends one fixed-size record. in_signal: try the busy flag once and drop on contention.
 * Returns 1 when stored, 0 when dropped (counted in w->lost). */
int rt_append(rt_writer *w, rt_tbuf *t, int which, const void *record, int in_signal);

/* Writes every pending block. wait: spin for busy blocks (exit path) instead of skipping. */
void rt_flush_all(rt_writer *w, int wait);

/* Writes one block of `count` records already laid out in payload (fixed or length-prefixed,
 * payload_bytes a multiple of 8). The payload must start sizeof(ot_block_header) bytes into
 * `block`, whose first bytes receive the header. 0 or -errno. */
int rt_write_block(rt_writer *w, unsigned char *block, uint16_t tag, uint16_t record_size,
                   uint32_t payload_bytes, uint32_t count);

/* A variable-size block of one record assembled from up to 4 parts (each copied in order;
 * the length prefix and the 8-byte padding are added here). Thread-safe. 0 or -errno. */
int rt_write_var_record(rt_writer *w, uint16_t tag, const void *p0, uint32_t n0, const void *p1,
                        uint32_t n1, const void *p2, uint32_t n2, const void *p3, uint32_t n3);

/* Counters ids first_id .. first_id+n-1 (n <= RT_COUNTERS_MAX): with define, their
 * COUNTER_DEF records (names[i], units[i]) first; then one COUNTERS block of values[i], all
 * at one CLOCK_MONOTONIC time. Thread-safe. */
#define RT_COUNTERS_MAX 16
void rt_write_counters(rt_writer *w, uint32_t first_id, const char *const *names,
                       const char *const *units, const int64_t *values, uint32_t n, int define);

/* Forgets every buffer but `keep` and drops pending records (a forked child). */
void rt_writer_reset_after_fork(rt_writer *w, rt_tbuf *keep);

/* ---- the process's writer ----------------------------------------------------------
 * rt_w writes this process's trace; each thread appends to buffers of its own, taken on
 * first use and given back when the thread exits (records are written only while ACTIVE). */
extern rt_writer rt_w;

/* Registers the thread-exit hand-back of buffers (start-up, before the first record). */
void rt_thread_buffers_init(void);

/* The calling thread's buffers (taken on first use); NULL when none are left. */
rt_tbuf *rt_thread_buffers(int in_signal);

/* A forked child: rt_w keeps only the forking thread's buffers (see
 * rt_writer_reset_after_fork). */
void rt_thread_buffers_after_fork_child(void);

/* Writes one sample into the calling thread's buffer; 1 stored, 0 dropped (not ACTIVE,
 * no buffer, buffer full). Async-signal-safe with in_signal = 1. */
int rt_sample_emit(const ot_sample_record *s, int in_signal);

/* A fatal signal is about to kill the process: write what is pending (signal-safe). */
void rt_flush_before_death(void);

#endif
