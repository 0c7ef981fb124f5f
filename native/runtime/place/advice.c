/* The advice-call token bucket shared by dynamic.c and online.c; see advice.h. */
#define _GNU_SOURCE
#include "advice.h"
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int set;
static double tokens, rate = 1.0;
static uint64_t last_refill;

void rt_advice_init(double r, uint64_t now)
{
    pthread_mutex_lock(&mu);
    if (!set && r > 0) {
        set = 1;
        rate = r;
        tokens = r;
        last_refill = now;
    }
    pthread_mutex_unlock(&mu);
}

int rt_advice_has(uint64_t now, unsigned calls)
{
    pthread_mutex_lock(&mu);
    if (now > last_refill) {
        tokens += rate * (double)(now - last_refill) / 1e9;
        if (tokens > rate)
            tokens = rate;
        last_refill = now;
    }
    int ok = tokens >= (double)calls;
    pthread_mutex_unlock(&mu);
    return ok;
}

void rt_advice_spend(void)
{
    pthread_mutex_lock(&mu);
    tokens -= 1;
    pthread_mutex_unlock(&mu);
}

uint64_t rt_advice_wait_ns(unsigned calls)
{
    pthread_mutex_lock(&mu);
    double need = (double)calls - tokens;
    uint64_t ns = need > 0 ? (uint64_t)(1e9 * need / rate) + 1 : 0;
    pthread_mutex_unlock(&mu);
    return ns;
}

double rt_advice_rate(void)
{
    pthread_mutex_lock(&mu);
    double r = rate;
    pthread_mutex_unlock(&mu);
    return r;
}

int rt_advice_call(long nr, uint64_t a, uint64_t len, long arg, uint64_t *counter, uint64_t *ns,
                   uint64_t *failed)
{
    uint64_t t0 = rt_now_ns();
    long r = arg >= 0 ? syscall(nr, (void *)(uintptr_t)a, len, arg)
                      : syscall(nr, (void *)(uintptr_t)a, len);
    int err = errno;
    *ns += rt_now_ns() - t0;
    (*counter)++;
    rt_advice_spend();
    if (r != 0)
        (*failed)++;
    errno = err;
    return r == 0;
}

void rt_advice_write_counts(const char *path, const char *text, int len, size_t cap)
{
    if (len <= 0 || cap == 0)
        return;
    size_t n = (size_t)len < cap ? (size_t)len : cap - 1;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path,
                          O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        rt_log(1, "cannot write %s: %s", path, strerror(errno));
        return;
    }
    rt_sys_write_all(fd, text, n);
    close(fd);
}

void rt_advice_fork_child(void)
{
    pthread_mutex_init(&mu, NULL);
    set = 0;
}
