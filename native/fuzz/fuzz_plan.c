/* libFuzzer target for the runtime's text-plan parser (native/runtime/place/plan.c).
 *
 * Input: the bytes of a plan file. Invariants checked on every input:
 *   - rt_plan_parse returns 0 or -1 and never reads or writes out of bounds (ASan, UBSan);
 *   - on -1 the error is one NUL-terminated line (a decoded name holding a newline once
 *     made it two: tests/fixtures/plan-seeds/phase-name-with-newline.txt);
 *   - on 0 every entry's phase and every phase's target index a phase, every "pages" entry's
 *     ranges lie inside the ranges array, sorted and disjoint, summing to fast_bytes, and
 *     entries are sorted by key; matching every entry's own (key, occurrence, size_min,
 *     phase) finds an entry.
 * Built by native/fuzz/build.sh (clang -fsanitize=fuzzer,address,undefined); not part of the
 * default build. */
#include "plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            __builtin_trap();                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rt_plan plan;
    char err[256];
    memset(err, 0, sizeof err);
    /* a private copy, so the parser cannot lean on bytes past the end being mapped */
    char *text = malloc(size ? size : 1);
    CHECK(text != NULL);
    memcpy(text, data, size);
    int rc = rt_plan_parse(&plan, text, size, err, sizeof err);
    free(text);
    CHECK(rc == 0 || rc == -1);
    if (rc != 0) {
        CHECK(memchr(err, 0, sizeof err) != NULL);
        CHECK(err[0] != 0 && strchr(err, '\n') == NULL);
        return 0;
    }
    CHECK(plan.n_phases >= 1 && plan.n_phases <= RT_PLAN_MAX_PHASES);
    for (uint32_t i = 0; i < plan.n_phases; i++) {
        CHECK(plan.phases[i].target < plan.n_phases);
        CHECK(strlen(plan.phases[i].name) <= plan.phases[i].len);
        CHECK(plan.phases[i].len <= RT_PLAN_MAX_NAME);
    }
    for (uint64_t i = 0; i < plan.n_entries; i++) {
        const rt_plan_entry *e = &plan.entries[i];
        CHECK(e->phase < plan.n_phases);
        CHECK(e->size_min <= e->size_max);
        if (i > 0)
            CHECK(plan.entries[i - 1].key <= e->key);
        if (e->tier == RT_PLAN_PAGES) {
            CHECK(e->n_ranges > 0 && e->range0 + e->n_ranges <= plan.n_ranges);
            uint64_t end = 0, total = 0;
            for (uint64_t r = e->range0; r < e->range0 + e->n_ranges; r++) {
                CHECK(plan.ranges[r].len > 0 && plan.ranges[r].off >= end);
                end = plan.ranges[r].off + plan.ranges[r].len;
                total += plan.ranges[r].len;
            }
            CHECK(total == e->fast_bytes);
        }
        CHECK(rt_plan_has_key(&plan, e->key));
        CHECK(rt_plan_match(&plan, e->key, e->occurrence == RT_PLAN_ANY ? 0 : e->occurrence,
                            e->size_min, e->phase) != RT_PLAN_NONE);
    }
    for (uint64_t i = 0; i < plan.n_folios; i++) {
        const rt_plan_folio *f = &plan.folios[i];
        CHECK(rt_plan_large_folio(&plan, f->key, f->occurrence == RT_PLAN_ANY ? 0 : f->occurrence,
                                  f->size_min));
    }
    rt_plan_free(&plan);
    return 0;
}
