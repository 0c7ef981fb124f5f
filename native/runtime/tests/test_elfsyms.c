/* rt_elf_data_symbols on this test's own executable (which defines known arrays) and on
 * corrupt images: truncations and flipped bytes must never read outside the image. */
#define _GNU_SOURCE
#include "check.h"
#include "elfsyms.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Kept by `used` and by the writes in main, so the compiler keeps their symbols. */
__attribute__((used)) static char big_bss[300000];                /* static, .bss */
__attribute__((used)) double big_data[40000] = {1.0};             /* global, .data, 320000 B */
__attribute__((used)) static const char big_rodata[300000] = {1}; /* read-only: not reported */
__attribute__((used)) static char small_bss[1000];                /* below min_size */

typedef struct {
    int saw_bss, saw_data, saw_rodata, saw_small;
    uint64_t bss_size, data_size;
} seen;

static int on_symbol(uint64_t value, uint64_t size, const char *name, void *arg)
{
    (void)value;
    seen *s = arg;
    if (strcmp(name, "big_bss") == 0) {
        s->saw_bss = 1;
        s->bss_size = size;
    } else if (strcmp(name, "big_data") == 0) {
        s->saw_data = 1;
        s->data_size = size;
    } else if (strcmp(name, "big_rodata") == 0) {
        s->saw_rodata = 1;
    } else if (strcmp(name, "small_bss") == 0) {
        s->saw_small = 1;
    }
    return 0;
}

static int count_only(uint64_t value, uint64_t size, const char *name, void *arg)
{
    (void)value;
    (void)size;
    (void)name;
    (*(int *)arg)++;
    return 0;
}

int main(void)
{
    big_bss[1] = 1;
    small_bss[1] = (char)big_rodata[0];
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    struct stat sb;
    CHECK(fstat(fd, &sb) == 0);
    size_t size = (size_t)sb.st_size;
    unsigned char *image = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(image != MAP_FAILED);
    close(fd);

    seen s = {0};
    int n = rt_elf_data_symbols(image, size, 100000, on_symbol, &s);
    CHECK(n >= 2);
    CHECK(s.saw_bss && s.bss_size == sizeof big_bss);
    CHECK(s.saw_data && s.data_size == sizeof big_data);
    CHECK(!s.saw_rodata); /* not in a writable section */
    CHECK(!s.saw_small);  /* below min_size */
    seen all = {0};
    rt_elf_data_symbols(image, size, 1, on_symbol, &all);
    CHECK(all.saw_small && !all.saw_rodata);

    /* not ELF, too short, NULL */
    char junk[4096] = "not an elf file";
    CHECK(rt_elf_data_symbols(junk, sizeof junk, 1, on_symbol, &s) == -1);
    CHECK(rt_elf_data_symbols(image, 10, 1, on_symbol, &s) == -1);
    CHECK(rt_elf_data_symbols(NULL, 0, 1, on_symbol, &s) == -1);

    /* every truncation, and copies with flipped bytes, in a private writable copy: the
     * sanitizer build reports any read outside [copy, copy + len) */
    unsigned char *copy = malloc(size);
    CHECK(copy != NULL);
    for (size_t len = 0; len < size; len += size / 97 + 1) {
        unsigned char *t = malloc(len ? len : 1);
        CHECK(t != NULL);
        memcpy(t, image, len);
        int k = 0;
        (void)rt_elf_data_symbols(t, len, 1, count_only, &k);
        free(t);
    }
    unsigned seed = 12345;
    for (int round = 0; round < 400; round++) {
        memcpy(copy, image, size);
        for (int flips = 0; flips < 8; flips++) {
            seed = seed * 1103515245u + 12345u;
            /* flip bytes in the headers and section table, where offsets live */
            size_t at = (seed >> 8) % (round % 2 ? size : 64 + (size_t)(seed % 4096) % size);
            copy[at % size] ^= (unsigned char)(seed >> 3);
        }
        int k = 0;
        (void)rt_elf_data_symbols(copy, size, 1, count_only, &k);
    }
    free(copy);
    munmap(image, size);
    printf("test_elfsyms: ok\n");
    return 0;
}
