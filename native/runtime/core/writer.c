/* Trace writer; see writer.h for the invariants. */
#define _GNU_SOURCE
#include "writer.h"
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const uint16_t buf_tags[RT_BUF_COUNT] = {OT_TAG_ALLOC, OT_TAG_FREE, OT_TAG_SAMPLE,
                                                OT_TAG_SITE_ALLOC, OT_TAG_SITE_FREE};
static const uint16_t buf_sizes[RT_BUF_COUNT] = {
    sizeof(ot_alloc_record), sizeof(ot_free_record), sizeof(ot_sample_record),
    sizeof(ot_site_alloc_record), sizeof(ot_site_free_record)};

int rt_trace_dir_open(const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOTDIR ? -ELOOP : -errno; /* O_NOFOLLOW on a link: ENOTDIR or ELOOP */
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
        close(fd);
        return -EPERM;
    }
    return fd;
}

int rt_trace_file_create(int dirfd, const char *name)
{
    int fd =
        openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    return fd >= 0 ? fd : -errno;
}

int rt_trace_file_reopen(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
        close(fd);
        return -EPERM;
    }
    return fd;
}

int rt_writer_open(rt_writer *w, int fd, uint32_t pid, uint32_t ppid, uint64_t start_mono,
                   uint64_t start_real)
{
    memset(w, 0, sizeof *w);
    w->fd = fd;
    atomic_init(&w->head, NULL);
    pthread_mutex_init(&w->var_lock, NULL);
    w->var_buf = rt_sys_mmap(RT_VAR_BLOCK_BYTES);
    if (!w->var_buf)
        return -ENOMEM;
    ot_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, OT_MAGIC, 8);
    h.version_major = OT_VERSION_MAJOR;
    h.version_minor = OT_VERSION_MINOR;
    h.header_bytes = sizeof h;
    h.endianness = OT_LITTLE_ENDIAN;
    h.pointer_bytes = sizeof(void *);
#if defined(__x86_64__)
    h.arch = 62;
#elif defined(__aarch64__)
    h.arch = 183;
#endif
    h.kind = OT_FILE_PROCESS;
    h.pid = pid;
    h.ppid = ppid;
    h.page_bytes = (uint32_t)rt_page_bytes;
    h.start_mono_ns = start_mono;
    h.start_real_ns = start_real;
    long r = rt_sys_write_all(fd, &h, sizeof h);
    return r < 0 ? (int)r : 0;
}

rt_tbuf *rt_tbuf_acquire(rt_writer *w)
{
    for (rt_tbuf *t = atomic_load_explicit(&w->head, memory_order_acquire); t; t = t->next) {
        int expect = RT_TBUF_FREE;
        if (atomic_load_explicit(&t->state, memory_order_relaxed) == RT_TBUF_FREE &&
            atomic_compare_exchange_strong(&t->state, &expect, RT_TBUF_USED))
            return t;
    }
    rt_tbuf *t = rt_sys_mmap(sizeof *t);
    if (!t)
        return NULL;
    /* mmap memory is zero: count 0, busy 0 */
    for (int i = 0; i < RT_BUF_COUNT; i++) {
        t->bufs[i].tag = buf_tags[i];
        t->bufs[i].record_size = buf_sizes[i];
        t->bufs[i].capacity = OT_BLOCK_TARGET_BYTES / buf_sizes[i];
    }
    atomic_init(&t->state, RT_TBUF_USED);
    rt_tbuf *old = atomic_load_explicit(&w->head, memory_order_relaxed);
    do
        t->next = old;
    while (!atomic_compare_exchange_weak_explicit(&w->head, &old, t, memory_order_release,
                                                  memory_order_relaxed));
    return t;
}

int rt_write_block(rt_writer *w, unsigned char *block, uint16_t tag, uint16_t record_size,
                   uint32_t payload_bytes, uint32_t count)
{
    ot_block_header h;
    h.magic = OT_BLOCK_MAGIC;
    h.tag = tag;
    h.record_size = record_size;
    h.payload_bytes = payload_bytes;
    h.record_count = count;
    h.crc32 = (uint32_t)crc32(0L, block + sizeof h, payload_bytes);
    h.reserved = 0;
    memcpy(block, &h, sizeof h);
    if (w->fd < 0)
        return -EBADF;
    long r = rt_sys_write_all(w->fd, block, sizeof h + payload_bytes);
    if (r < 0) {
        int expect = 0;
        atomic_compare_exchange_strong(&w->io_error, &expect, (int)r);
        atomic_fetch_add_explicit(&w->lost, count, memory_order_relaxed);
        return (int)r;
    }
    atomic_fetch_add_explicit(&w->records, count, memory_order_relaxed);
    return 0;
}

/* Caller holds b->busy. */
static void flush_locked(rt_writer *w, rt_buf *b)
{
    if (b->count == 0)
        return;
    uint32_t n = b->count;
    b->count = 0;
    rt_write_block(w, b->block, b->tag, b->record_size, n * b->record_size, n);
}

static int try_busy(rt_buf *b)
{
    int expect = 0;
    return atomic_compare_exchange_strong_explicit(&b->busy, &expect, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

static void lock_busy(rt_buf *b)
{
    while (!try_busy(b))
        sched_yield();
}

static void unlock_busy(rt_buf *b)
{
    atomic_store_explicit(&b->busy, 0, memory_order_release);
}

int rt_append(rt_writer *w, rt_tbuf *t, int which, const void *record, int in_signal)
{
    rt_buf *b = &t->bufs[which];
    if (in_signal) {
        if (!try_busy(b)) {
            atomic_fetch_add_explicit(&w->lost, 1, memory_order_relaxed);
            return 0;
        }
    } else
        lock_busy(b);
    memcpy(b->block + sizeof(ot_block_header) + (size_t)b->count * b->record_size, record,
           b->record_size);
    if (++b->count == b->capacity)
        flush_locked(w, b);
    unlock_busy(b);
    return 1;
}

void rt_flush_all(rt_writer *w, int wait)
{
    for (rt_tbuf *t = atomic_load_explicit(&w->head, memory_order_acquire); t; t = t->next) {
        for (int i = 0; i < RT_BUF_COUNT; i++) {
            rt_buf *b = &t->bufs[i];
            if (wait)
                lock_busy(b);
            else if (!try_busy(b))
                continue;
            flush_locked(w, b);
            unlock_busy(b);
        }
    }
}

void rt_tbuf_release(rt_writer *w, rt_tbuf *t)
{
    for (int i = 0; i < RT_BUF_COUNT; i++) {
        lock_busy(&t->bufs[i]);
        flush_locked(w, &t->bufs[i]);
        unlock_busy(&t->bufs[i]);
    }
    atomic_store_explicit(&t->state, RT_TBUF_FREE, memory_order_release);
}

int rt_write_var_record(rt_writer *w, uint16_t tag, const void *p0, uint32_t n0, const void *p1,
                        uint32_t n1, const void *p2, uint32_t n2, const void *p3, uint32_t n3)
{
    const void *parts[4] = {p0, p1, p2, p3};
    const uint32_t lens[4] = {n0, n1, n2, n3};
    uint64_t total = 0;
    for (int i = 0; i < 4; i++)
        total += lens[i];
    /* payload = u32 length + record, padded to 8 */
    uint64_t payload = (4 + total + 7) & ~(uint64_t)7;
    if (payload > RT_VAR_BLOCK_BYTES - sizeof(ot_block_header))
        return -E2BIG;
    pthread_mutex_lock(&w->var_lock);
    unsigned char *p = w->var_buf + sizeof(ot_block_header);
    uint32_t len32 = (uint32_t)total;
    memcpy(p, &len32, 4);
    size_t at = 4;
    for (int i = 0; i < 4; i++) {
        if (lens[i]) {
            memcpy(p + at, parts[i], lens[i]);
            at += lens[i];
        }
    }
    memset(p + at, 0, payload - at);
    int r = rt_write_block(w, w->var_buf, tag, 0, (uint32_t)payload, 1);
    pthread_mutex_unlock(&w->var_lock);
    return r;
}

void rt_writer_reset_after_fork(rt_writer *w, rt_tbuf *keep)
{
    for (rt_tbuf *t = atomic_load_explicit(&w->head, memory_order_acquire); t; t = t->next) {
        for (int i = 0; i < RT_BUF_COUNT; i++) {
            t->bufs[i].count = 0;
            atomic_store(&t->bufs[i].busy, 0);
        }
        if (t != keep)
            atomic_store(&t->state, RT_TBUF_FREE);
    }
    pthread_mutex_init(&w->var_lock, NULL);
    atomic_store(&w->records, 0);
    atomic_store(&w->lost, 0);
    atomic_store(&w->io_error, 0);
}

/* ---- the process's writer ------------------------------------------------------------ */

rt_writer rt_w;
static pthread_key_t thread_key;
static RT_TLS rt_tbuf *tls_buf;
static RT_TLS int tls_key_set;

static void thread_exit(void *arg)
{
    rt_tbuf *t = arg;
    rt_guard++;
    if (t && t == tls_buf) {
        tls_buf = NULL;
        tls_key_set = 0;
        if (rt_active())
            rt_tbuf_release(&rt_w, t);
    }
    rt_guard--;
}

void rt_thread_buffers_init(void)
{
    pthread_key_create(&thread_key, thread_exit);
}

rt_tbuf *rt_thread_buffers(int in_signal)
{
    if (RT_LIKELY(tls_buf != NULL)) {
        if (RT_UNLIKELY(!tls_key_set) && !in_signal) {
            tls_key_set = 1;
            pthread_setspecific(thread_key, tls_buf);
        }
        return tls_buf;
    }
    tls_buf = rt_tbuf_acquire(&rt_w);
    if (tls_buf && !in_signal) {
        tls_key_set = 1;
        pthread_setspecific(thread_key, tls_buf);
    }
    return tls_buf;
}

void rt_thread_buffers_after_fork_child(void)
{
    rt_writer_reset_after_fork(&rt_w, tls_buf);
}

int rt_sample_emit(const ot_sample_record *s, int in_signal)
{
    if (!rt_active())
        return 0;
    rt_tbuf *t = rt_thread_buffers(in_signal);
    return t ? rt_append(&rt_w, t, RT_BUF_SAMPLE, s, in_signal) : 0;
}

void rt_flush_before_death(void)
{
    if (rt_active())
        rt_flush_all(&rt_w, 0); /* try-once per block: async-signal-safe */
}

void rt_write_counters(rt_writer *w, uint32_t first_id, const char *const *names,
                       const char *const *units, const int64_t *values, uint32_t n, int define)
{
    if (n > RT_COUNTERS_MAX)
        n = RT_COUNTERS_MAX;
    for (uint32_t i = 0; define && i < n; i++) {
        ot_counter_def_record d = {.id = first_id + i,
                                   .unit_len = (uint16_t)strlen(units[i]),
                                   .name_len = (uint16_t)strlen(names[i])};
        rt_write_var_record(w, OT_TAG_COUNTER_DEF, &d, sizeof d, names[i], d.name_len, units[i],
                            d.unit_len, NULL, 0);
    }
    unsigned char blk[sizeof(ot_block_header) + RT_COUNTERS_MAX * sizeof(ot_counter_record)];
    uint64_t now = rt_now_ns();
    for (uint32_t i = 0; i < n; i++) {
        ot_counter_record r = {.time_ns = now, .id = first_id + i, .value = values[i]};
        memcpy(blk + sizeof(ot_block_header) + i * sizeof r, &r, sizeof r);
    }
    rt_write_block(w, blk, OT_TAG_COUNTERS, sizeof(ot_counter_record),
                   n * (uint32_t)sizeof(ot_counter_record), n);
}
