/* Minimal assertion helper for the runtime's unit tests: a failed CHECK prints the
 * condition and location and exits with status 1. */
#ifndef OBJTIER_TEST_CHECK_H
#define OBJTIER_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
