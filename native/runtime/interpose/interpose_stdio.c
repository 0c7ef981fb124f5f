/*
 * FORTIFY_SOURCE entry points, fread/fwrite and their unlocked forms, and the printing calls,
 * for the fault sampler (interpose_io.c holds the read/write family of system calls).
 *
 *   - Calls that hand a program buffer to the kernel (__read_chk, __pread_chk, __recv_chk,
 *     __fread_chk, fread, fwrite, fread_unlocked, fwrite_unlocked, ...) restore the
 *     buffer's armed pages first and keep the scanner off it until they return
 *     (rt_fault_io_begin), and are retried on an EFAULT that a just-restored window may
 *     have caused, as in interpose_io.c: they never fail or come back short because of the sampler.
 *   - Calls that read their input in user mode before passing it on (fputs, puts, the
 *     printf family: strlen/strnlen first, then a direct write(2) of a long string) run
 *     inside the stdio gate (fault_guard.h): no window is armed while they run, and the
 *     user-mode read restores any page of an older window before the kernel sees it.
 *   - setvbuf/setbuffer: a buffer the program gives stdio is never armed (stdio passes
 *     it to read(2)/write(2) from inside glibc, where no wrapper sees it).
 */
#define _GNU_SOURCE
#include "fault_guard.h"
#include "io_bracket.h"
#include "real.h"
#include "rt.h"
#include "sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* glibc may define these as macros when optimizing */
#undef fread_unlocked
#undef fwrite_unlocked
#undef fputs_unlocked
#undef puts
#undef printf
#undef fprintf

#define REAL(ret, name, args) RT_REAL_LAZY(ret, name, args)

/* A system call on [buf, buf+len), bracketed (io_bracket.h). */
#define SYSCALL_BRACKET(call, buf, len) RT_IO_BRACKET(ssize_t, call, buf, len, r < 0)

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen){
    REAL(ssize_t, __read_chk, (int, void *, size_t, size_t))
        SYSCALL_BRACKET(fn___read_chk(fd, buf, n, buflen), buf, n < buflen ? n : buflen)}

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen){
    REAL(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t))
        SYSCALL_BRACKET(fn___pread_chk(fd, buf, n, off, buflen), buf, n < buflen ? n : buflen)}

ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen){
    REAL(ssize_t, __pread64_chk, (int, void *, size_t, off_t, size_t))
        SYSCALL_BRACKET(fn___pread64_chk(fd, buf, n, off, buflen), buf, n < buflen ? n : buflen)}

ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags){
    REAL(ssize_t, __recv_chk, (int, void *, size_t, size_t, int))
        SYSCALL_BRACKET(fn___recv_chk(fd, buf, n, buflen, flags), buf, n < buflen ? n : buflen)}

ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *a,
                       socklen_t *al)
{
    REAL(ssize_t, __recvfrom_chk,
         (int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *))
    SYSCALL_BRACKET(fn___recvfrom_chk(fd, buf, n, buflen, flags, a, al), buf,
                    n < buflen ? n : buflen)
}

/* ---- stdio: a buffer passed to the kernel by the stream --------------------------- */

enum xfer { READ, WRITE, READ_UNLOCKED, WRITE_UNLOCKED, READ_CHK, READ_UNLOCKED_CHK };

static size_t xfer_once(enum xfer kind, char *at, size_t room, size_t size, size_t k, FILE *f)
{
    switch (kind) {
    case READ: return rt_real.fread(at, size, k, f);
    case WRITE: return rt_real.fwrite(at, size, k, f);
    case READ_UNLOCKED: {
        REAL(size_t, fread_unlocked, (void *, size_t, size_t, FILE *))
        return fn_fread_unlocked(at, size, k, f);
    }
    case WRITE_UNLOCKED: {
        REAL(size_t, fwrite_unlocked, (const void *, size_t, size_t, FILE *))
        return fn_fwrite_unlocked(at, size, k, f);
    }
    case READ_CHK: {
        REAL(size_t, __fread_chk, (void *, size_t, size_t, size_t, FILE *))
        return fn___fread_chk(at, room, size, k, f);
    }
    case READ_UNLOCKED_CHK: {
        REAL(size_t, __fread_unlocked_chk, (void *, size_t, size_t, size_t, FILE *))
        return fn___fread_unlocked_chk(at, room, size, k, f);
    }
    }
    return 0;
}

/* A read(2) or write(2) that failed with EFAULT moved nothing, so the rest of the request
 * can be made again after clearing the stream's error flag. room: the _chk buffer size
 * (SIZE_MAX for the plain calls). */
static size_t stdio_xfer(enum xfer kind, void *buf, size_t room, size_t size, size_t k, FILE *f)
{
    if (size == 0 || k == 0)
        return xfer_once(kind, buf, room, size, k, f);
    uint64_t bytes = k > SIZE_MAX / size ? room : size * k;
    if (bytes > room)
        bytes = room; /* the _chk call fails on its own; only the buffer is bracketed */
    size_t done = 0;
    int slot = rt_fault_io_begin(buf, bytes);
    for (int attempt = 0;; attempt++) {
        char *at = (char *)buf + done * size;
        size_t left_room = room == SIZE_MAX ? room : room - done * size;
        done += xfer_once(kind, at, left_room, size, k - done, f);
        if (done == k || !ferror(f) || errno != EFAULT || attempt == RT_IO_RETRIES ||
            !rt_fault_recently_armed(at, size * (k - done)))
            break;
        clearerr(f);
        rt_fault_touch(at, size * (k - done));
    }
    int saved = errno;
    rt_fault_io_end(slot);
    errno = saved;
    return done;
}

size_t fread(void *buf, size_t size, size_t k, FILE *f)
{
    rt_real_init();
    return stdio_xfer(READ, buf, SIZE_MAX, size, k, f);
}

size_t fwrite(const void *buf, size_t size, size_t k, FILE *f)
{
    rt_real_init();
    return stdio_xfer(WRITE, (void *)buf, SIZE_MAX, size, k, f);
}

size_t fread_unlocked(void *buf, size_t size, size_t k, FILE *f)
{
    return stdio_xfer(READ_UNLOCKED, buf, SIZE_MAX, size, k, f);
}

size_t fwrite_unlocked(const void *buf, size_t size, size_t k, FILE *f)
{
    return stdio_xfer(WRITE_UNLOCKED, (void *)buf, SIZE_MAX, size, k, f);
}

size_t __fread_chk(void *buf, size_t buflen, size_t size, size_t k, FILE *f)
{
    return stdio_xfer(READ_CHK, buf, buflen, size, k, f);
}

size_t __fread_unlocked_chk(void *buf, size_t buflen, size_t size, size_t k, FILE *f)
{
    return stdio_xfer(READ_UNLOCKED_CHK, buf, buflen, size, k, f);
}

/* ---- calls that read their input in user mode first: the stdio gate --------------- */

#define GATED(type, call)                                                                          \
    int g = rt_fault_gate_enter();                                                                 \
    type r = call;                                                                                 \
    int saved = errno;                                                                             \
    rt_fault_gate_leave(g);                                                                        \
    errno = saved;                                                                                 \
    return r;

int fputs(const char *s, FILE *f)
{
    REAL(int, fputs, (const char *, FILE *))
    GATED(int, fn_fputs(s, f))
}

int fputs_unlocked(const char *s, FILE *f)
{
    REAL(int, fputs_unlocked, (const char *, FILE *))
    GATED(int, fn_fputs_unlocked(s, f))
}

int puts(const char *s)
{
    REAL(int, puts, (const char *))
    GATED(int, fn_puts(s))
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    REAL(int, vfprintf, (FILE *, const char *, va_list))
    GATED(int, fn_vfprintf(f, fmt, ap))
}

int vprintf(const char *fmt, va_list ap)
{
    REAL(int, vprintf, (const char *, va_list))
    GATED(int, fn_vprintf(fmt, ap))
}

int vdprintf(int fd, const char *fmt, va_list ap)
{
    REAL(int, vdprintf, (int, const char *, va_list))
    GATED(int, fn_vdprintf(fd, fmt, ap))
}

int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
    REAL(int, __vfprintf_chk, (FILE *, int, const char *, va_list))
    GATED(int, fn___vfprintf_chk(f, flag, fmt, ap))
}

int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
    REAL(int, __vprintf_chk, (int, const char *, va_list))
    GATED(int, fn___vprintf_chk(flag, fmt, ap))
}

int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
    REAL(int, __vdprintf_chk, (int, int, const char *, va_list))
    GATED(int, fn___vdprintf_chk(fd, flag, fmt, ap))
}

#define VARIADIC(vcall, last)                                                                      \
    va_list ap;                                                                                    \
    va_start(ap, last);                                                                            \
    int r = vcall;                                                                                 \
    va_end(ap);                                                                                    \
    return r;

int fprintf(FILE *f, const char *fmt, ...)
{
    VARIADIC(vfprintf(f, fmt, ap), fmt)
}
int printf(const char *fmt, ...)
{
    VARIADIC(vprintf(fmt, ap), fmt)
}
int dprintf(int fd, const char *fmt, ...)
{
    VARIADIC(vdprintf(fd, fmt, ap), fmt)
}
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
    VARIADIC(__vfprintf_chk(f, flag, fmt, ap), fmt)
}
int __printf_chk(int flag, const char *fmt, ...)
{
    VARIADIC(__vprintf_chk(flag, fmt, ap), fmt)
}
int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
    VARIADIC(__vdprintf_chk(fd, flag, fmt, ap), fmt)
}

/* ---- buffers given to stdio --------------------------------------------------------- */

int setvbuf(FILE *f, char *buf, int mode, size_t size)
{
    REAL(int, setvbuf, (FILE *, char *, int, size_t))
    if (buf && mode != _IONBF && size)
        rt_fault_never_arm((uint64_t)(uintptr_t)buf, size);
    return fn_setvbuf(f, buf, mode, size);
}

void setbuffer(FILE *f, char *buf, size_t size)
{
    REAL(void, setbuffer, (FILE *, char *, size_t))
    if (buf && size)
        rt_fault_never_arm((uint64_t)(uintptr_t)buf, size);
    fn_setbuffer(f, buf, size);
}
