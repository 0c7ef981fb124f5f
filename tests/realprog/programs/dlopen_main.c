/*
 * Loads a library with dlopen, calls its allocating function several times, unloads it,
 * and loads it again. Prints each checksum; exit status 0, or 1 with dlerror() on stderr.
 *
 * usage: dlopen_main LIBRARY.so ROUNDS
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: dlopen_main LIBRARY.so ROUNDS\n");
        return 2;
    }
    int rounds = atoi(argv[2]);
    for (int load = 0; load < 2; load++) {
        void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            fprintf(stderr, "dlopen_main: %s\n", dlerror());
            return 1;
        }
        uint64_t (*table)(size_t, uint64_t) =
            (uint64_t(*)(size_t, uint64_t))dlsym(lib, "table_checksum");
        if (!table) {
            fprintf(stderr, "dlopen_main: %s\n", dlerror());
            return 1;
        }
        for (int r = 0; r < rounds; r++)
            printf("load %d round %d checksum %016llx\n", load, r,
                   (unsigned long long)table((size_t)1 << 21, (uint64_t)(load * 1000 + r)));
        dlclose(lib);
    }
    return 0;
}
