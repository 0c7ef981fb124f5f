/* cyclic BIG_MIB HOT_MIB ITERS: BIG_MIB swept end to end every iteration (as an iterative
 * solver reads its matrix), HOT_MIB read at random in between. Prints the sum. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
int main(int argc, char **argv)
{
    size_t big = (argc > 1 ? atol(argv[1]) : 24) << 20, small = (argc > 2 ? atol(argv[2]) : 4)
                                                                << 20;
    int iters = argc > 3 ? atoi(argv[3]) : 40;
    uint64_t *a = malloc(big), *h = malloc(small);
    size_t na = big / 8, nh = small / 8;
    for (size_t i = 0; i < na; i++)
        a[i] = i;
    for (size_t i = 0; i < nh; i++)
        h[i] = i;
    uint64_t s = 0, x = 1;
    for (int it = 0; it < iters; it++) {
        for (size_t i = 0; i < na; i += 8)
            s += a[i];
        for (size_t k = 0; k < na / 8; k++) {
            x = x * 6364136223846793005ULL + 1;
            s += h[(x >> 33) % nh];
        }
    }
    printf("sum %llu\n", (unsigned long long)s);
    return 0;
}
