/* The advice-call token bucket shared by dynamic.c and online.c; see advice.h. */
#include "advice.h"

#include <pthread.h>

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

void rt_advice_fork_child(void)
{
    pthread_mutex_init(&mu, NULL);
    set = 0;
}
