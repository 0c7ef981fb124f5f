/* argv: hot MiB, threads, MiB per thread burst, bursts. A hot array (touched between bursts),
 * then each burst: every thread mallocs its MiB, writes every page, reads it back, frees. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define MIB (1024ul * 1024)
static size_t per_thread;
static int bursts;
static unsigned char *hot;
static size_t hot_n;
__attribute__((noinline)) unsigned char *alloc_hot(size_t n)
{
    unsigned char *p = malloc(n);
    __asm__ volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) unsigned char *alloc_burst(size_t n)
{
    unsigned char *p = malloc(n);
    __asm__ volatile("" ::: "memory");
    return p;
}
static void *worker(void *arg)
{
    unsigned long sum = 0, seed = (unsigned long)arg;
    for (int b = 0; b < bursts; b++) {
        unsigned char *p = alloc_burst(per_thread);
        for (size_t i = 0; i < per_thread; i += 4096)
            p[i] = (unsigned char)(seed + i);
        for (int pass = 0; pass < 4; pass++)
            for (size_t i = 0; i < per_thread; i += 4096)
                sum += p[i];
        free(p);
        for (size_t i = 0; i < hot_n; i += 4096)
            sum += hot[i];
    }
    return (void *)sum;
}
int main(int argc, char **argv)
{
    hot_n = strtoul(argv[1], 0, 0) * MIB;
    int threads = atoi(argv[2]);
    per_thread = strtoul(argv[3], 0, 0) * MIB;
    bursts = atoi(argv[4]);
    hot = alloc_hot(hot_n);
    memset(hot, 1, hot_n);
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], 0, worker, (void *)(long)i);
    unsigned long total = 0;
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (unsigned long)r;
    }
    printf("burst done %lu\n", total % 1000);
    return 0;
}
