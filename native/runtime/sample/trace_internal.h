/*
 * Between the parts of the `trace` sampler: the callbacks and the object index
 * (sampler_trace.c, the hot path), the ordered access stream (trace_stream.c) and the records
 * written at exit (trace_emit.c). Nothing outside these three files includes it.
 *
 * Invariants
 *   - A tr_thread belongs to its thread: only the owner reads or writes it while it runs,
 *     except at stop, when trace_stop (callbacks off) flushes the streams of threads that
 *     have not exited and trace_emit.c reads every tree. States are never freed while the
 *     process records; they form one list (tr_thread.next, written once before publication).
 *   - slots[] and neg[] are valid only while gen equals the object index's generation
 *     (sampler_trace.c); the owner drops them when it sees a new value.
 *   - cct.nodes[node] is the thread's current calling-context node; node 0 is the root.
 *   - The stream fields (sbuf .. sclosed) are trace_stream.c's alone; sn <= scap <=
 *     STREAM_CHUNK records fit in sbuf after its block header.
 *   - Every function here is built NOINST: an instrumenting compiler must not make the
 *     callbacks call themselves.
 */
#ifndef OBJTIER_TRACE_INTERNAL_H
#define OBJTIER_TRACE_INTERNAL_H

#include "cache_model.h"
#include "cct.h"
#include "rt.h"
#include "statics.h"

#include <stdint.h>

#define OBJ_SLOTS     4  /* per-thread cache of recent objects */
#define NEG_PAGES     64 /* per-thread direct-mapped cache of object-free pages */
#define STREAM_VALUES 4  /* loaded values kept per kind: pointers, indices */
/* Never instrument the callbacks themselves (should these files be built by an instrumenting
 * compiler): they would call themselves. */
#if defined(__clang__)
#define NOINST __attribute__((no_instrument_function, no_sanitize("coverage")))
#else
#define NOINST __attribute__((no_instrument_function))
#endif

typedef struct tr_slot {
    uint64_t start, len; /* hit when addr - start < len (len 0 = empty slot) */
    uint64_t seq;
    uint32_t node; /* cct node index the counter belongs to */
    uint32_t reserved;
    rt_cct_counter *ctr; /* counter of (node, seq) */
} tr_slot;

typedef struct tr_thread {
    struct tr_thread *next; /* list of all states, written once before publication */
    uint64_t gen;           /* idx_gen the caches below belong to */
    uint32_t node;          /* current cct node (index) */
    uint32_t next_slot;     /* round-robin victim in slots[] */
    int busy;               /* in a slow path: a nested call (signal handler) skips */
    int exited;
    tr_slot slots[OBJ_SLOTS];
    tr_slot outside[3];   /* counters outside every object: stack, TLS, other (OT_SEQ_OUTSIDE_*) */
    rt_thread_memory mem; /* this thread's stack and static TLS */
    uint64_t neg[NEG_PAGES]; /* page numbers that hold no tracked byte; UINT64_MAX = empty */
    rt_llc llc;
    rt_cct cct;
    /* ordered access stream (OBJTIER_TRACE_STREAM) */
    unsigned char *sbuf; /* block header + STREAM_CHUNK records; NULL until first use */
    uint32_t sn, scap;   /* records in sbuf / records claimed for it from the budget */
    int sdone;           /* the budget is spent: record nothing more */
    uint32_t vpos[2];    /* next slot of values[kind] */
    uint64_t nacc;       /* this thread's stream index of the next record */
    /* last loaded values (0 = none): [0] pointers (8-byte loads, at least STREAM_DEP_SPAN),
     * [1] index candidates (4-byte loads, and 8-byte loads below STREAM_IDX_MAX: not a
     * pointer nor a double's bits), kept apart so that a loop of float loads does not push
     * the row pointer it reads through out of [0] */
    uint64_t values[2][STREAM_VALUES];
    uint64_t value_at[2][STREAM_VALUES]; /* their stream indices */
    uint64_t sseen;                      /* windows: accesses not yet added to stream_seen */
    uint64_t swin;                       /* windows: stream_gen of the records claimed in sbuf */
    int sclosed;                         /* windows: window swin had no records left to claim */
} tr_thread;


/* trace_stream.c: the ordered access stream (OBJTIER_TRACE_STREAM, ..._WINDOW). */
/* Sets the budget (ACCESS records in all; 0 = no stream) and the window size (records; 0 =
 * the first `budget` accesses). Called once by trace_init, before any callback counts. */
RT_HIDDEN void tr_stream_init(uint64_t budget, uint64_t window);
/* One ACCESS record for t (the owner) of the access a (size bytes). base: start of the tracked
 * object holding a, 0 when a lies outside every tracked object. */
RT_HIDDEN void tr_stream_record(tr_thread *t, uint64_t a, uint64_t size, int store, uint64_t base);
/* Writes t's buffered ACCESS records as one block. By the owner, or at stop. */
RT_HIDDEN void tr_stream_flush(tr_thread *t);

/* trace_emit.c: CONTEXT, CCT_NODE and ACCESS_COUNT records of every thread in the list from
 * head, written once at stop (callbacks off). */
RT_HIDDEN void tr_emit_all(tr_thread *head);

#endif
