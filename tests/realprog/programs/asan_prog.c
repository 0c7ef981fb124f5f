/*
 * Built with -fsanitize=address: allocates large buffers, fills and sums them, and prints
 * the sum. No memory error; exit status 0 when run as it is.
 *
 * usage: asan_prog MIB
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64;
    size_t n = mib << 20;
    unsigned char *a = malloc(n), *b = malloc(n);
    if (!a || !b)
        return 1;
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)(i * 131 + 7);
    memcpy(b, a, n);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i += 8)
        sum += b[i] * (i & 0xff);
    printf("asan sum %llu\n", (unsigned long long)sum);
    free(a);
    free(b);
    return 0;
}
