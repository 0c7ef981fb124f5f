/* Two small-block sites of about the same bytes: hot rows (read over and over) and cold rows
 * (written once, never read again), allocated interleaved so that with the program's allocator
 * every heap page holds both. argv[1]: rows per site (default 60000); argv[2]: passes over the
 * hot rows (default 400). Prints a checksum that depends on every row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROW 400

typedef struct row {
    struct row *next;
    unsigned char data[ROW - sizeof(struct row *)];
} row;

__attribute__((noinline)) static row *hot_row(unsigned i)
{
    row *r = malloc(sizeof *r);
    if (r)
        memset(r->data, (int)(i & 0xff), sizeof r->data);
    return r;
}

__attribute__((noinline)) static row *cold_row(unsigned i)
{
    row *r = malloc(sizeof *r);
    if (r)
        memset(r->data, (int)((i * 7) & 0xff), sizeof r->data);
    return r;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 60000;
    unsigned passes = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 400;
    row *hot = NULL, *cold = NULL;
    for (unsigned i = 0; i < n; i++) {
        row *h = hot_row(i), *c = cold_row(i);
        if (!h || !c)
            return 2;
        h->next = hot;
        hot = h;
        c->next = cold;
        cold = c;
    }
    unsigned long long sum = 0;
    for (unsigned p = 0; p < passes; p++)
        for (row *r = hot; r; r = r->next)
            sum += r->data[p % sizeof r->data];
    for (row *r = cold; r; r = r->next) /* once, at the end */
        sum += r->data[0] * 3u;
    while (hot) {
        row *next = hot->next;
        free(hot);
        hot = next;
    }
    while (cold) {
        row *next = cold->next;
        free(cold);
        cold = next;
    }
    printf("rows=%u passes=%u sum=%llu\n", n, passes, sum);
    return 0;
}
