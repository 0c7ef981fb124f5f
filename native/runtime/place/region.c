/*
 * Code-region markers exported by the runtime: objtier_region_begin(name) and
 * objtier_region_end(name) (programs reach them through native/include/objtier/region.h,
 * which looks them up with dlsym so that a program without the runtime still runs).
 *
 * Each marker writes one REGION record (after the NAME record of a name's first use, ids shared
 * with the phase names) with the ordered access stream's counter, so that the stream's
 * accesses fall between the markers exactly, and reads the counters of OBJTIER_REGION_PMU:
 * the counts since the thread's previous marker go to what was in force, and from now on to
 * the innermost open region (after the last one closes: the thread's phase, or none).
 * Regions change no placement.
 *
 * Invariants
 *   - tls_open[0..tls_depth) are the calling thread's open regions, outermost first;
 *     tls_depth <= MAX_DEPTH (a begin beyond it is not recorded, and its end finds nothing).
 *   - Every END record closes the innermost region then open: records replay as a stack.
 */
#define _GNU_SOURCE
#include "region.h"
#include "phase.h"
#include "region_pmu.h"
#include "rt.h"
#include "sampler.h"
#include "writer.h"

#include <string.h>

#define MAX_DEPTH      64
#define MAX_NAME_BYTES 1024 /* as phase names: longer names are cut */

static RT_TLS uint32_t tls_open[MAX_DEPTH];
static RT_TLS uint32_t tls_depth;

static void write_event(uint32_t name, uint16_t event)
{
    unsigned char blk[sizeof(ot_block_header) + sizeof(ot_region_record)];
    ot_region_record r = {.time_ns = rt_now_ns(),
                          .order = rt_trace_stream_order(),
                          .tid = rt_tid(),
                          .name = name,
                          .event = event,
                          .depth = (uint16_t)tls_depth};
    memcpy(blk + sizeof(ot_block_header), &r, sizeof r);
    rt_write_block(&rt_w, blk, OT_TAG_REGION, sizeof r, sizeof r, 1);
}

__attribute__((visibility("default"))) void objtier_region_begin(const char *name)
{
    if (!name || !rt_active() || rt_guard)
        return;
    rt_guard++;
    uint32_t id = tls_depth < MAX_DEPTH ? rt_phase_name_id(name, strnlen(name, MAX_NAME_BYTES)) : 0;
    if (id) {
        tls_open[tls_depth++] = id;
        write_event(id, OT_REGION_BEGIN);
        rt_region_pmu_boundary(id);
    }
    rt_guard--;
}

__attribute__((visibility("default"))) void objtier_region_end(const char *name)
{
    if (!name || !rt_active() || rt_guard)
        return;
    rt_guard++;
    uint32_t id = rt_phase_name_id(name, strnlen(name, MAX_NAME_BYTES)), at = tls_depth;
    while (id && at > 0 && tls_open[at - 1] != id)
        at--;
    if (id && at > 0) { /* close it and every region opened inside it, innermost first */
        while (tls_depth >= at) {
            uint32_t closed = tls_open[--tls_depth];
            write_event(closed, OT_REGION_END);
        }
        rt_region_pmu_boundary(tls_depth ? tls_open[tls_depth - 1] : rt_phase_current());
    }
    rt_guard--;
}
