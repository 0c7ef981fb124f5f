/* Reading a perf ring buffer; see perf_ring.h. */
#include "perf_ring.h"
#include "rt.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

size_t rt_perf_ring_bytes(uint64_t data_pages)
{
    return (size_t)(data_pages + 1) * rt_page_bytes;
}

int rt_perf_open_ring(struct perf_event_attr *a, int cpu, uint64_t data_pages, int *fd, void **ring)
{
    long f = syscall(SYS_perf_event_open, a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (f < 0 && a->inherit_thread) { /* kernels before 5.13 */
        a->inherit_thread = 0;
        f = syscall(SYS_perf_event_open, a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (f < 0)
        return -errno;
    void *r =
        mmap(NULL, rt_perf_ring_bytes(data_pages), PROT_READ | PROT_WRITE, MAP_SHARED, (int)f, 0);
    if (r == MAP_FAILED) {
        int e = errno;
        close((int)f);
        return -e;
    }
    *fd = (int)f;
    *ring = r;
    return 0;
}

void rt_perf_ring_drain(void *ring, uint64_t data_pages, rt_perf_record_fn on_record, void *ctx)
{
    struct perf_event_mmap_page *meta = ring;
    unsigned char *data = (unsigned char *)ring + rt_page_bytes;
    uint64_t size = data_pages * rt_page_bytes;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    unsigned char tmp[512];
    while (tail < head) {
        struct perf_event_header h;
        uint64_t off = tail % size;
        /* a record may wrap around the end of the ring: copy it out in two parts */
        for (uint64_t i = 0; i < sizeof h; i++)
            ((unsigned char *)&h)[i] = data[(off + i) % size];
        if (h.size < sizeof h || tail + h.size > head)
            break;
        const unsigned char *rec;
        if (off + h.size <= size)
            rec = data + off;
        else {
            uint64_t n = h.size < sizeof tmp ? h.size : sizeof tmp, first = size - off;
            if (first > n)
                first = n;
            memcpy(tmp, data + off, first);
            memcpy(tmp + first, data, n - first);
            rec = tmp;
        }
        on_record(ctx, &h, rec);
        tail += h.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}
