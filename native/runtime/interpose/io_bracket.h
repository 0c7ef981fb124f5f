/* The bracket every interposer that hands a program buffer to the kernel puts around the real
 * call (interpose_io.c, interpose_stdio.c): the buffer's armed pages are restored first and
 * the scanner is kept off it (rt_fault_io_begin), and a call that failed with EFAULT on a
 * recently armed range is restored and made again, at most RT_IO_RETRIES times. errno is the
 * real call's. */
#ifndef OBJTIER_IO_BRACKET_H
#define OBJTIER_IO_BRACKET_H
#include "sampler.h"

#include <errno.h>

#define RT_IO_RETRIES 3

/* Declares `ret_t r`, makes `call` on [buf, buf+len) and returns r; `failed` is an expression
 * of r that is true when the call failed (errno then says why). */
#define RT_IO_BRACKET(ret_t, call, buf, len, failed)                                               \
    ret_t r;                                                                                       \
    int slot = rt_fault_io_begin(buf, len);                                                        \
    for (int attempt = 0;; attempt++) {                                                            \
        r = call;                                                                                  \
        if (!(failed) || errno != EFAULT || attempt == RT_IO_RETRIES ||                            \
            !rt_fault_recently_armed(buf, len))                                                    \
            break;                                                                                 \
        rt_fault_touch(buf, len);                                                                  \
    }                                                                                              \
    int saved = errno;                                                                             \
    rt_fault_io_end(slot);                                                                         \
    errno = saved;                                                                                 \
    return r;

#endif
