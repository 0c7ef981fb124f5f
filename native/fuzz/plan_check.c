/* A callable form of the runtime's plan parser for differential tests (ctypes): parses a
 * text plan and releases it. Built as a shared library by the tests (tests/fuzz/
 * test_plan_differential.py) from plan.c and sys.c; not part of the default build. */
#include "plan.h"

#include <stddef.h>
#include <stdint.h>

/* 0 when native/runtime/place/plan.c accepts text[0..len), else -1 with its one-line reason in
 * err; *entries gets the number of entries it kept. */
int objtier_plan_check(const char *text, size_t len, char *err, size_t err_len, uint64_t *entries)
{
    rt_plan plan;
    int rc = rt_plan_parse(&plan, text, len, err, err_len);
    *entries = rc == 0 ? plan.n_entries : 0;
    if (rc == 0)
        rt_plan_free(&plan);
    return rc;
}
