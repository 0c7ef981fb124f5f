/* Sampler selection. */
#include "sampler.h"

#include <stddef.h>

const rt_sampler_ops *rt_sampler_for(int kind)
{
    switch (kind) {
    case RT_SAMPLER_FAULT: return &rt_sampler_fault_ops;
    case RT_SAMPLER_PERF: return &rt_sampler_perf_ops;
    case RT_SAMPLER_TRACE: return &rt_sampler_trace_ops;
    case RT_SAMPLER_PAGEOUT: return &rt_sampler_pageout_ops;
    case RT_SAMPLER_WP: return &rt_sampler_wp_ops;
    default: return NULL;
    }
}
