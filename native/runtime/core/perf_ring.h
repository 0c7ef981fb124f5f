/*
 * Reading a perf_event_open ring buffer (one metadata page, then a power-of-two number of
 * data pages), shared by the perf sampler and the swap-tier readahead.
 */
#ifndef OBJTIER_PERF_RING_H
#define OBJTIER_PERF_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

/* perf_event_open(a) for this process (pid 0; with a->inherit, its threads too) on cpu,
 * retried without inherit_thread on kernels before 5.13 (which clears it in *a), and its
 * ring of data_pages data pages mmapped. 0 with *fd and *ring set, or -errno with nothing
 * left open. Unmap with rt_perf_ring_bytes(data_pages). */
int rt_perf_open_ring(struct perf_event_attr *a, int cpu, uint64_t data_pages, int *fd,
                      void **ring);

/* The length of the mmap of a ring with data_pages data pages [bytes]. */
size_t rt_perf_ring_bytes(uint64_t data_pages);

/* Called once per record: h its header, rec the whole record (header included), contiguous. */
typedef void (*rt_perf_record_fn)(void *ctx, const struct perf_event_header *h,
                                  const unsigned char *rec);

/* Every complete record between the ring's data_tail and data_head, in order, then data_tail
 * advanced past them. ring: the mmap of 1 + data_pages pages of rt_page_bytes. A record that
 * wraps around the end of the ring is copied out first (its first 512 bytes: the records read
 * here are shorter). Only the thread that owns the ring may call this. */
void rt_perf_ring_drain(void *ring, uint64_t data_pages, rt_perf_record_fn on_record, void *ctx);

#endif
