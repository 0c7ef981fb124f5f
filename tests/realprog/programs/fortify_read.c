/*
 * A FORTIFY_SOURCE=3 program that reads a file into large heap buffers through every
 * checked entry point glibc offers: read -> __read_chk, pread -> __pread_chk,
 * fread -> __fread_chk, fread_unlocked -> __fread_unlocked_chk, fgets -> __fgets_chk.
 * Between reads it walks the buffers so a sampler has windows armed when the next read
 * lands. Prints one FNV-1a checksum per entry point and the total; exit status 0, or 1
 * when any read comes back short or fails (with the error on stderr).
 *
 * usage: fortify_read FILE ROUNDS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t fnv(const unsigned char *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static void fail(const char *what)
{
    fprintf(stderr, "fortify_read: %s failed: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t walk(const unsigned char *p, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i += 64)
        s += p[i];
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fortify_read FILE ROUNDS\n");
        return 2;
    }
    int rounds = atoi(argv[2]);
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0)
        fail("open");
    struct stat st;
    if (fstat(fd, &st) != 0)
        fail("fstat");
    size_t n = (size_t)st.st_size;
    /* malloc's alloc_size attribute lets FORTIFY=3 know each buffer's size: every read
     * below goes through a _chk entry point. */
    unsigned char *a = malloc(n), *b = malloc(n), *c = malloc(n), *d = malloc(n);
    size_t step = (size_t)1 << (20 + rounds % 2); /* 1 or 2 MiB, depending on ROUNDS */
    char *line = malloc(step);
    if (!a || !b || !c || !d || !line)
        fail("malloc");
    uint64_t sums[5] = {14695981039346656037ULL, 14695981039346656037ULL, 14695981039346656037ULL,
                        14695981039346656037ULL, 14695981039346656037ULL};
    uint64_t touched = 0;
    for (int r = 0; r < rounds; r++) {
        if (lseek(fd, 0, SEEK_SET) != 0)
            fail("lseek");
        size_t got = 0;
        while (got < n) {
            ssize_t k = read(fd, a + got, n - got);
            if (k <= 0)
                fail("read");
            got += (size_t)k;
        }
        touched += walk(a, n);
        for (size_t off = 0; off < n;) {
            ssize_t k = pread(fd, b + off, n - off, (off_t)off);
            if (k <= 0)
                fail("pread");
            off += (size_t)k;
        }
        touched += walk(b, n);
        FILE *f = fopen(argv[1], "rb");
        if (!f)
            fail("fopen");
        /* step is a run-time value the compiler cannot bound, so FORTIFY keeps the
         * __fread_chk / __fread_unlocked_chk / __fgets_chk calls. */
        for (size_t off = 0; off < n; off += step)
            if (fread(c + off, 1, n - off < step ? n - off : step, f) == 0)
                fail("fread");
        touched += walk(c, n);
        rewind(f);
        for (size_t off = 0; off < n; off += step)
            if (fread_unlocked(d + off, 1, n - off < step ? n - off : step, f) == 0)
                fail("fread_unlocked");
        touched += walk(d, n);
        rewind(f);
        uint64_t h = sums[4];
        while (fgets(line + r % 2, (int)(step / 2), f))
            h = fnv((const unsigned char *)line, strlen(line), h);
        sums[4] = h;
        fclose(f);
        sums[0] = fnv(a, n, sums[0]);
        sums[1] = fnv(b, n, sums[1]);
        sums[2] = fnv(c, n, sums[2]);
        sums[3] = fnv(d, n, sums[3]);
    }
    const char *names[5] = {"read", "pread", "fread", "fread_unlocked", "fgets"};
    for (int i = 0; i < 5; i++)
        printf("%s %016llx\n", names[i], (unsigned long long)sums[i]);
    printf("walked %llu\n", (unsigned long long)touched);
    free(a), free(b), free(c), free(d), free(line);
    close(fd);
    return 0;
}
