/* Writer: many threads append ALLOC records concurrently while a flusher thread flushes
 * partially filled blocks; the file must hold whole blocks only, valid CRCs, every record
 * exactly once and each thread's records in order. */
#define _GNU_SOURCE
#include "check.h"
#include "rt.h"
#include "writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define THREADS    8
#define PER_THREAD 20000

static rt_writer w;
static _Atomic int stop;

static void *producer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    rt_tbuf *t = rt_tbuf_acquire(&w);
    CHECK(t != NULL);
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        ot_alloc_record r = {.time_ns = i, .seq = i, .addr = 0x1000 + i, .size = 1, .tid = id};
        CHECK(rt_append(&w, t, RT_BUF_ALLOC, &r, 0) == 1);
        if (i % 5000 == 0) {
            ot_sample_record s = {.time_ns = i, .tid = id, .source = OT_SRC_FAULT};
            rt_append(&w, t, RT_BUF_SAMPLE, &s, 1);
        }
    }
    rt_tbuf_release(&w, t);
    return NULL;
}

static void *flusher(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        rt_flush_all(&w, 0);
        usleep(100);
    }
    return NULL;
}

int main(void)
{
    char path[] = "/tmp/objtier-test-writer-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    int afd = open(path, O_WRONLY | O_APPEND);
    CHECK(afd >= 0);
    CHECK(rt_writer_open(&w, afd, 1, 2, 3, 4) == 0);
    const char name[] = "phase";
    ot_name_record nr = {.id = 7, .len = sizeof name - 1};
    CHECK(rt_write_var_record(&w, OT_TAG_NAME, &nr, sizeof nr, name, nr.len, NULL, 0, NULL, 0) ==
          0);

    pthread_t th[THREADS], fl;
    pthread_create(&fl, NULL, flusher, NULL);
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, producer, (void *)(i + 1));
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&stop, 1);
    pthread_join(fl, NULL);
    rt_flush_all(&w, 1);

    /* a thread started after the others reuses a released buffer */
    rt_tbuf *again = rt_tbuf_acquire(&w);
    int reused = 0;
    for (rt_tbuf *t = atomic_load(&w.head); t; t = t->next)
        reused += 1;
    CHECK(reused <= THREADS);
    rt_tbuf_release(&w, again);

    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    unsigned char *data = malloc((size_t)st.st_size);
    CHECK(pread(fd, data, (size_t)st.st_size, 0) == st.st_size);
    const ot_file_header *fh = (const ot_file_header *)data;
    CHECK(memcmp(fh->magic, OT_MAGIC, 8) == 0 && fh->pid == 1 && fh->ppid == 2);
    CHECK(fh->header_bytes == 64 && fh->version_major == OT_VERSION_MAJOR);

    uint64_t next[THREADS + 1] = {0}, allocs = 0, samples = 0, names = 0;
    size_t at = sizeof(ot_file_header);
    while (at < (size_t)st.st_size) {
        ot_block_header bh;
        memcpy(&bh, data + at, sizeof bh);
        CHECK(bh.magic == OT_BLOCK_MAGIC);
        CHECK(bh.payload_bytes % 8 == 0);
        CHECK(at + sizeof bh + bh.payload_bytes <= (size_t)st.st_size);
        const unsigned char *p = data + at + sizeof bh;
        CHECK(crc32(0L, p, bh.payload_bytes) == bh.crc32);
        if (bh.tag == OT_TAG_ALLOC) {
            CHECK(bh.record_size == sizeof(ot_alloc_record));
            CHECK(bh.payload_bytes == bh.record_count * sizeof(ot_alloc_record));
            CHECK(bh.payload_bytes <= OT_BLOCK_TARGET_BYTES);
            for (uint32_t i = 0; i < bh.record_count; i++) {
                ot_alloc_record r;
                memcpy(&r, p + i * sizeof r, sizeof r);
                CHECK(r.tid >= 1 && r.tid <= THREADS);
                CHECK(r.seq == next[r.tid]); /* per-thread order preserved */
                next[r.tid]++;
                allocs++;
            }
        } else if (bh.tag == OT_TAG_SAMPLE) {
            samples += bh.record_count;
        } else if (bh.tag == OT_TAG_NAME) {
            uint32_t len;
            memcpy(&len, p, 4);
            CHECK(len == sizeof nr + nr.len);
            CHECK(memcmp(p + 4 + sizeof nr, "phase", 5) == 0);
            names++;
        }
        at += sizeof bh + bh.payload_bytes;
    }
    CHECK(at == (size_t)st.st_size);
    CHECK(allocs == (uint64_t)THREADS * PER_THREAD);
    CHECK(samples + atomic_load(&w.lost) == THREADS * 4);
    CHECK(names == 1);
    CHECK(atomic_load(&w.records) == allocs + samples + names);
    unlink(path);
    free(data);
    printf("test_writer: %llu records in whole blocks\n", (unsigned long long)allocs);
    return 0;
}
