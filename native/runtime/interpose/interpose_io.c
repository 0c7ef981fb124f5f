/*
 * System calls that pass a program buffer to the kernel. The kernel
 * does not raise SIGSEGV for a PROT_NONE page it copies to or from; the call fails with
 * EFAULT instead. So, while the fault sampler has a window armed, the armed pages of
 * the buffer are restored first (counted as touches), and a call that still fails with
 * EFAULT on a recently armed range is restored and retried (at most RT_IO_RETRIES times).
 * With no window armed the cost is one relaxed load. preadv/pwritev (and their 64 and 2
 * forms), recvmsg/sendmsg and getrandom are bracketed the same way (their real functions
 * resolved here, on first use); FORTIFY and stdio entry points (fread, fwrite and the
 * unlocked forms) are in interpose_stdio.c.
 */
#define _GNU_SOURCE
#include "io_bracket.h"
#include "real.h"
#include "rt.h"
#include "sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define WRAP(ret_t, call, buf, len, failed)                                                        \
    rt_real_init();                                                                                \
    RT_IO_BRACKET(ret_t, call, buf, len, failed)

ssize_t read(int fd, void *buf,
             size_t n){WRAP(ssize_t, rt_real.read(fd, buf, n), buf, n, r < 0)} ssize_t
    write(int fd, const void *buf,
          size_t n){WRAP(ssize_t, rt_real.write(fd, buf, n), buf, n, r < 0)} ssize_t
    pread64(int fd, void *buf, size_t n,
            off_t off){WRAP(ssize_t, rt_real.pread64(fd, buf, n, off), buf, n, r < 0)} ssize_t
    pread(int fd, void *buf, size_t n, off_t off) __attribute__((alias("pread64")));
ssize_t pwrite64(int fd, const void *buf, size_t n,
                 off_t off){WRAP(ssize_t, rt_real.pwrite64(fd, buf, n, off), buf, n, r < 0)} ssize_t
    pwrite(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite64")));
ssize_t recv(int fd, void *buf, size_t n,
             int flags){WRAP(ssize_t, rt_real.recv(fd, buf, n, flags), buf, n, r < 0)} ssize_t
    recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a, socklen_t *al){
        WRAP(ssize_t, rt_real.recvfrom(fd, buf, n, flags, a, al), buf, n, r < 0)} ssize_t
    send(int fd, const void *buf, size_t n,
         int flags){WRAP(ssize_t, rt_real.send(fd, buf, n, flags), buf, n, r < 0)} ssize_t
    sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *a, socklen_t al)
{
    WRAP(ssize_t, rt_real.sendto(fd, buf, n, flags, a, al), buf, n, r < 0)
}
static void touch_iov(const struct iovec *iov, int n)
{
    for (int i = 0; i < n; i++)
        rt_fault_touch(iov[i].iov_base, iov[i].iov_len);
}

/* One in-flight slot covering every buffer of the vector. */
static int iov_begin(const struct iovec *iov, int n)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        uint64_t a = (uint64_t)(uintptr_t)iov[i].iov_base, b = a + iov[i].iov_len;
        if (iov[i].iov_len && a < lo)
            lo = a;
        if (iov[i].iov_len && b > hi)
            hi = b;
    }
    if (hi <= lo)
        return -1;
    int slot = rt_fault_io_begin((const void *)(uintptr_t)lo, hi - lo);
    touch_iov(iov, n);
    return slot;
}

static int iov_recent(const struct iovec *iov, int n)
{
    for (int i = 0; i < n; i++)
        if (rt_fault_recently_armed(iov[i].iov_base, iov[i].iov_len))
            return 1;
    return 0;
}

/* readv/writev with the sampler's armed pages restored first, retried on a late EFAULT. */
static ssize_t vector_io(ssize_t (*call)(int, const struct iovec *, int), int fd,
                         const struct iovec *iov, int n)
{
    ssize_t r;
    int slot = iov_begin(iov, n);
    for (int attempt = 0;; attempt++) {
        r = call(fd, iov, n);
        if (r >= 0 || errno != EFAULT || attempt == RT_IO_RETRIES || !iov_recent(iov, n))
            break;
        touch_iov(iov, n);
    }
    int saved = errno;
    rt_fault_io_end(slot);
    errno = saved;
    return r;
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
    rt_real_init();
    return vector_io(rt_real.readv, fd, iov, n);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    rt_real_init();
    return vector_io(rt_real.writev, fd, iov, n);
}

/* ---- more vectors: resolved here on first use -------------------------------------- */

#define REAL(ret, name, args)                                                                      \
    RT_REAL_LAZY(ret, name, args)                                                                  \
    if (!fn_##name) {                                                                              \
        errno = ENOSYS;                                                                            \
        return -1;                                                                                 \
    }

/* A call on the buffers of iov[0..n): restored first, retried on a late EFAULT. */
#define VECTOR_BRACKET(call, iov, n)                                                               \
    ssize_t r;                                                                                     \
    int slot = iov_begin(iov, n);                                                                  \
    for (int attempt = 0;; attempt++) {                                                            \
        r = call;                                                                                  \
        if (r >= 0 || errno != EFAULT || attempt == RT_IO_RETRIES || !iov_recent(iov, n))          \
            break;                                                                                 \
        touch_iov(iov, n);                                                                         \
    }                                                                                              \
    int saved = errno;                                                                             \
    rt_fault_io_end(slot);                                                                         \
    errno = saved;                                                                                 \
    return r;

ssize_t preadv64(int fd, const struct iovec *iov, int n,
                 off_t off){REAL(ssize_t, preadv64, (int, const struct iovec *, int, off_t))
                                VECTOR_BRACKET(fn_preadv64(fd, iov, n, off), iov, n)} ssize_t
    preadv(int fd, const struct iovec *iov, int n, off_t off) __attribute__((alias("preadv64")));

ssize_t pwritev64(int fd, const struct iovec *iov, int n,
                  off_t off){REAL(ssize_t, pwritev64, (int, const struct iovec *, int, off_t))
                                 VECTOR_BRACKET(fn_pwritev64(fd, iov, n, off), iov, n)} ssize_t
    pwritev(int fd, const struct iovec *iov, int n, off_t off) __attribute__((alias("pwritev64")));

ssize_t preadv64v2(int fd, const struct iovec *iov, int n, off_t off, int flags){
    REAL(ssize_t, preadv64v2, (int, const struct iovec *, int, off_t, int))
        VECTOR_BRACKET(fn_preadv64v2(fd, iov, n, off, flags), iov, n)} ssize_t
    preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags)
        __attribute__((alias("preadv64v2")));

ssize_t pwritev64v2(int fd, const struct iovec *iov, int n, off_t off, int flags){
    REAL(ssize_t, pwritev64v2, (int, const struct iovec *, int, off_t, int))
        VECTOR_BRACKET(fn_pwritev64v2(fd, iov, n, off, flags), iov, n)} ssize_t
    pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags)
        __attribute__((alias("pwritev64v2")));

ssize_t recvmsg(int fd, struct msghdr *m, int flags){
    REAL(ssize_t, recvmsg, (int, struct msghdr *, int))
        VECTOR_BRACKET(fn_recvmsg(fd, m, flags), m ? m->msg_iov : NULL, m ? (int)m->msg_iovlen : 0)}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags){
    REAL(ssize_t, sendmsg, (int, const struct msghdr *, int))
        VECTOR_BRACKET(fn_sendmsg(fd, m, flags), m ? m->msg_iov : NULL, m ? (int)m->msg_iovlen : 0)}

ssize_t getrandom(void *buf, size_t n, unsigned int flags)
{
    REAL(ssize_t, getrandom, (void *, size_t, unsigned int))
    ssize_t r;
    int slot = rt_fault_io_begin(buf, n);
    for (int attempt = 0;; attempt++) {
        r = fn_getrandom(buf, n, flags);
        if (r >= 0 || errno != EFAULT || attempt == RT_IO_RETRIES ||
            !rt_fault_recently_armed(buf, n))
            break;
        rt_fault_touch(buf, n);
    }
    int saved = errno;
    rt_fault_io_end(slot);
    errno = saved;
    return r;
}
