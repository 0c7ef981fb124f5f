/* A matrix of ROWS rows, each row's values in a block of its own (ROW_DOUBLES doubles, a few
 * hundred bytes: below the object tracker's --min-size, so the matrix is small blocks only),
 * summed row by row SWEEPS times (a cyclic sweep of the whole matrix every pass).
 * Usage: rows ROWS SWEEPS. Prints the sum. */
#include <stdio.h>
#include <stdlib.h>

#define ROW_DOUBLES 48

int main(int argc, char **argv)
{
    long rows = argc > 1 ? atol(argv[1]) : 100000;
    int sweeps = argc > 2 ? atoi(argv[2]) : 20;
    double **row = malloc(rows * sizeof *row);
    if (!row)
        return 1;
    for (long i = 0; i < rows; i++) {
        row[i] = malloc(ROW_DOUBLES * sizeof(double));
        if (!row[i])
            return 1;
        for (int k = 0; k < ROW_DOUBLES; k++)
            row[i][k] = (double)((i + k) % 7);
    }
    double sum = 0;
    for (int s = 0; s < sweeps; s++)
        for (long i = 0; i < rows; i++)
            for (int k = 0; k < ROW_DOUBLES; k++)
                sum += row[i][k] * row[i][(k * 5 + s) % ROW_DOUBLES];
    printf("sum %.0f\n", sum);
    return 0;
}
