/* A run whose start is not its work: two arrays are initialised (sequential stores), then a
 * longer phase works on them (`work`: repeated passes of loads over both). The first few
 * million accesses of the run are all initialisation; a model of them alone would never see
 * `work`, which is most of the run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N      (1 << 21) /* uint64_t per array: 16 MiB each */
#define PASSES 4

__attribute__((noinline)) static void init(uint64_t *a, uint64_t *b, long n)
{
    for (long i = 0; i < n; i++)
        a[i] = (uint64_t)i * 3, b[i] = (uint64_t)i ^ 0x5555;
}

__attribute__((noinline)) static uint64_t work(const uint64_t *a, const uint64_t *b, long n)
{
    uint64_t s = 0;
    for (int p = 0; p < PASSES; p++)
        for (long i = 0; i < n; i++)
            s += a[i] * b[(i * 7) & (n - 1)];
    return s;
}

int main(void)
{
    uint64_t *a = malloc(sizeof(uint64_t) * N), *b = malloc(sizeof(uint64_t) * N);
    if (!a || !b)
        return 1;
    init(a, b, N);
    printf("%lu\n", (unsigned long)work(a, b, N));
    free(a);
    free(b);
    return 0;
}
