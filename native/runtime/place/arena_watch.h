/*
 * Watched sites: while recording, the arena chunks of the sites named by OBJTIER_ARENA_SITES
 * are registered with the window samplers that scan pages (sampler_scan.h), each site's
 * chunks as one object-like region of seq OT_SITE_REGION_SEQ_BASE + site, and each chunk is
 * written to the trace as a SITE_REGION record (trace_format.h "Watched allocation sites").
 * docs/watched-sites.md.
 *
 * Invariants
 *   - The chunk table is append-only: an entry is written before the count is raised
 *     (release), never changed or removed (arena memory is never returned), so the scanner
 *     reads entries [0, count) without a lock.
 *   - Nothing here changes the program's memory: a watched site's blocks are served from its
 *     arena (arena.c) exactly as a planned site's, with no tier action on its chunks.
 */
#ifndef OBJTIER_ARENA_WATCH_H
#define OBJTIER_ARENA_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"

/* rt_obj.kind of a watched chunk in a scan snapshot (no ot_alloc_kind has this value). */
#define RT_OBJ_SITE_REGION 0xffffu

/* Reads the sites file at path: one site a line, `KEY FRAME0` (16 hex digits each; a line
 * starting with `#` and blank lines are skipped). Fills keys[i], frame0s[i] for up to cap
 * sites and returns how many, or -1 (logged) when the file cannot be read or a line is not
 * a site. */
int rt_sarena_watch_read(const char *path, uint64_t *keys, uint64_t *frame0s, uint32_t cap);

/* Watching on (after the sites were read): the chunk table is made. 0 or -ENOMEM. */
int rt_sarena_watch_init(void);

/* Site s (stable key `key`, context id ctx or 0) got chunk [c, c + len): registered with the
 * scanners and written to the trace. Called with the site's lock held, rt_guard raised. */
void rt_sarena_watch_chunk(uint32_t s, uint64_t key, uint32_t ctx, void *c, size_t len);

/* Copies up to cap watched chunks into out as rt_obj (addr, size = len, seq of the site's
 * region, kind RT_OBJ_SITE_REGION); returns how many. rt_sarena_watch_count: how many there
 * are now. Any thread. */
size_t rt_sarena_watch_snapshot(rt_obj *out, size_t cap);
uint64_t rt_sarena_watch_count(void);

/* Learning (OBJTIER_ARENA_LEARN=N, no sites file): while rt_sarena_learning is 1, each sampled
 * small block (track.c rt_on_site_alloc) adds its estimated bytes to its context's count; once
 * OBJTIER_ARENA_LEARN_BYTES were seen, the N contexts with the most bytes become the watched
 * sites (rt_sarena_watch_begin) and learning stops. Blocks allocated before stay with the
 * program's allocator. */
extern _Atomic int rt_sarena_learning;
int rt_sarena_learn_init(uint32_t n, uint64_t bytes);   /* 0, or -ENOMEM (no learning) */
void rt_sarena_learn(uint32_t ctx, uint64_t est_bytes); /* rt_guard raised by the caller */

/* arena_site.c: the sites to watch from now on (keys and frame0 keys of n sites). */
void rt_sarena_watch_begin(const uint64_t *keys, const uint64_t *frame0s, uint32_t n);

/* Forked child: chunks inherited from the parent belong to the parent's trace; the child's
 * table starts empty (its own new chunks are registered and written to its own trace). */
void rt_sarena_watch_fork_child(void);

#endif
