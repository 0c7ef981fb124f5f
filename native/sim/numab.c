/*
 * NUMA-balancing tiering mechanics (see numab.h). Model simplifications, stated once:
 *  - the scanner walks the pages of live objects in address order, each object standing for
 *    a VMA (no gaps, no other mappings); fast-tier pages are skipped (toptier, no hint faults
 *    in mode 2) but cost virtual-scan budget (8x the PTE budget, as in task_numa_work);
 *  - the scan period stays at its minimum (mode 2 alone never feeds the period adaptation);
 *  - a hint fault happens at the first sampled access after marking, so its latency is an
 *    upper bound of the real one (the real first touch may precede the sample);
 *  - kswapd runs at the next 1 ms tick after it is woken and demotes instantly.
 */
#include "numab.h"

#include <math.h>

#define NS_PER_MS 1000000ull

static uint64_t pages_of_kb(const sim_t *s, double kb)
{
    return (uint64_t)(kb * 1024.0) >> s->cfg.page_shift;
}

int numab_init(sim_t *s, bool tpp)
{
    numab_state *st = s->state;
    st->tpp = tpp;
    st->scan_delay_ns = (uint64_t)(sim_param(s, "scan_delay_ms") * NS_PER_MS);
    st->period_min_ms = (uint64_t)sim_param(s, "scan_period_min_ms");
    st->period_max_ms = (uint64_t)sim_param(s, "scan_period_max_ms");
    double scan_mb = sim_param(s, "scan_size_mb");
    st->scan_pages = pages_of_kb(s, scan_mb * 1024.0);
    if (st->scan_pages == 0)
        st->scan_pages = 1;
    st->rate_limit = pages_of_kb(s, sim_param(s, "promote_rate_limit_MBps") * 1024.0);
    st->demotion = sim_param(s, "demotion_enabled") != 0;

    /* watermarks (mm/page_alloc.c): min from min_free_kbytes (sqrt(16 * kB), clamped to
     * [128 kB, 256 MiB], capped at 1/4 of the node here so tiny test tiers stay usable);
     * tmp = max(min/4, managed * wsf / 10000); low = min+tmp, high = low+tmp, promo = high+tmp */
    double cap_kb = (double)(s->fast_cap << s->cfg.page_shift) / 1024.0;
    double min_kb = sim_param(s, "min_free_kbytes");
    if (min_kb < 0) {
        min_kb = sqrt(cap_kb * 16.0);
        min_kb = min_kb < 128 ? 128 : (min_kb > 262144 ? 262144 : min_kb);
        if (min_kb > cap_kb / 4)
            min_kb = cap_kb / 4;
    }
    uint64_t wmin = pages_of_kb(s, min_kb);
    double wsf = sim_param(s, "watermark_scale_factor");
    uint64_t tmp = (uint64_t)((double)s->fast_cap * wsf / 10000.0);
    if (tmp < wmin / 4)
        tmp = wmin / 4;
    s->wm_min = wmin;
    s->wm_low = wmin + tmp;
    s->wm_high = s->wm_low + tmp;
    s->wm_promo = s->wm_high + tmp;
    st->wake_free = s->wm_low;
    st->demote_free = s->wm_promo; /* tiering mode: pgdat_balanced() uses WMARK_PROMO */
    if (tpp) {
        double dsf = sim_param(s, "demote_scale_factor");
        uint64_t dwm = (uint64_t)((double)s->fast_cap * dsf / 10000.0);
        if (dwm > st->demote_free)
            st->demote_free = dwm;
        st->wake_free = st->demote_free; /* reclaim starts at the demotion watermark */
    } else {
        st->def_th_ms = (uint64_t)sim_param(s, "hot_threshold_ms");
        st->adjust = sim_param(s, "adjust_threshold") != 0;
        st->free_enough = pages_of_kb(s, sim_param(s, "free_enough_mb") * 1024.0);
        uint64_t sixteenth = s->fast_cap >> 4;
        if (st->free_enough < sixteenth)
            st->free_enough = sixteenth;
    }
    st->next_scan_ns = s->cfg.start_ns + st->scan_delay_ns;
    return 0;
}

int numab_alloc(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset)
{
    numab_state *st = s->state;
    (void)pg, (void)obj, (void)offset;
    /* the fast path allocates on the local node while free stays above WMARK_LOW, otherwise it
     * falls back to the slow node and wakes kswapd for the local one */
    if (sim_fast_free(s) > s->wm_low)
        return SIM_FAST;
    st->kswapd_pending = true;
    return SIM_SLOW;
}

/* numa_promotion_adjust_threshold: every scan_period_max, move the threshold one step towards
 * the candidate rate that the rate limit would allow. */
static void adjust_threshold(sim_t *s, numab_state *st, uint64_t now_ms)
{
    if (now_ms - st->th_start_ms <= st->period_max_ms)
        return;
    st->th_start_ms = now_ms;
    uint64_t ref_cand = st->rate_limit * st->period_max_ms / 1000;
    uint64_t cand = s->counter[SIM_C_PGPROMOTE_CANDIDATE];
    uint64_t diff = cand - st->th_cand;
    uint64_t unit = st->def_th_ms * 2 / 16;
    uint64_t th = st->th_ms ? st->th_ms : st->def_th_ms;
    if (diff * 10 > ref_cand * 11)
        th = th > 2 * unit ? th - unit : unit;
    else if (diff * 10 < ref_cand * 9)
        th = th + unit < 2 * st->def_th_ms ? th + unit : 2 * st->def_th_ms;
    st->th_cand = cand;
    st->th_ms = th;
}

/* numa_promotion_rate_limit: candidates (not successes) per 1 s window. True = limited. */
static bool rate_limited(sim_t *s, numab_state *st, uint64_t now_ms)
{
    uint64_t cand = ++s->counter[SIM_C_PGPROMOTE_CANDIDATE];
    if (!st->rl_started || now_ms - st->rl_start_ms > 1000) {
        st->rl_started = true;
        st->rl_start_ms = now_ms;
        st->rl_cand0 = cand;
    }
    return cand - st->rl_cand0 >= st->rate_limit;
}

/* migrate_misplaced_folio: needs WMARK_HIGH + 1 free pages, else kswapd is woken and the
 * promotion fails. */
static void try_promote(sim_t *s, numab_state *st, sim_page *pg)
{
    if (sim_fast_free(s) < s->wm_high + 1) {
        st->kswapd_pending = true;
        s->counter[SIM_C_PGMIGRATE_FAIL]++;
        return;
    }
    sim_promote(s, pg);
}

void numab_access(sim_t *s, sim_page *pg, uint64_t now, uint64_t weight, bool store)
{
    numab_state *st = s->state;
    (void)weight, (void)store;
    if (!(pg->flags & SIM_PG_PROTNONE))
        return;
    pg->flags &= (uint8_t)~SIM_PG_PROTNONE;
    s->counter[SIM_C_NUMA_HINT_FAULTS]++;
    s->bin->hint_faults++;
    if (pg->tier == SIM_FAST)
        return;
    uint64_t now_ms = sim_ms(s, now);
    if (st->tpp) {
        /* active-LRU filter: the first fault activates, a fault on an active page promotes */
        if (!(pg->flags & SIM_PG_ACTIVE)) {
            pg->flags |= SIM_PG_ACTIVE;
            return;
        }
        if (!rate_limited(s, st, now_ms))
            try_promote(s, st, pg);
        return;
    }
    if (sim_fast_free(s) > s->wm_promo + st->free_enough) {
        st->th_ms = 0; /* plenty of room: promote every faulting page */
        try_promote(s, st, pg);
        return;
    }
    if (st->adjust)
        adjust_threshold(s, st, now_ms);
    uint64_t th = st->th_ms ? st->th_ms : st->def_th_ms;
    uint64_t latency = (now_ms - pg->stamp) & 0xFFFFFFFFu;
    pg->stamp = (uint32_t)now_ms;
    if (latency >= th)
        return;
    if (!rate_limited(s, st, now_ms))
        try_promote(s, st, pg);
}

/* task_numa_work over the live objects in address order, from a cursor (the page key where the
 * last scan stopped). Each object is a VMA, walked in ranges of at most the remaining page
 * budget: every range costs its length in virtual budget (8 x scan_pages); a range in which a
 * PTE was made PROT_NONE also costs its length in page budget (scan_pages). Fast-tier pages
 * (toptier in mode 2) and pages already PROT_NONE are passed without an update. A scan ends
 * when either budget is used up, or at the end of the address space (the cursor returns to 0,
 * as numa_scan_offset does). */
static void scan(sim_t *s, numab_state *st, uint64_t now)
{
    size_t n;
    const uint32_t *order = sim_sorted_objects(s, &n);
    uint32_t now_ms = (uint32_t)sim_ms(s, now);
    int64_t pages = (int64_t)st->scan_pages, virt = 8 * (int64_t)st->scan_pages;
    /* first object starting at or after the cursor, or the one before it if it spans it */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const sim_object *o = &s->objects[order[mid]];
        if (sim_page_key(o->space, o->first_vpn) < st->cursor)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0) {
        const sim_object *o = &s->objects[order[lo - 1]];
        if (sim_page_key(o->space, o->first_vpn + o->npages) > st->cursor)
            lo--;
    }
    for (size_t i = lo; i < n; i++) {
        const sim_object *o = &s->objects[order[i]];
        uint64_t base = sim_page_key(o->space, o->first_vpn);
        uint64_t k = st->cursor > base ? st->cursor - base : 0;
        while (k < o->npages) {
            uint64_t end = k + (uint64_t)pages < o->npages ? k + (uint64_t)pages : o->npages;
            int64_t len = (int64_t)(end - k);
            bool updated = false;
            for (; k < end; k++) {
                uint32_t idx = o->pages[k];
                if (idx == SIM_NIL)
                    continue;
                sim_page *pg = &s->pool[idx];
                if (pg->tier == SIM_FAST || (pg->flags & SIM_PG_PROTNONE))
                    continue;
                if (st->tpp) {
                    /* LRU aging: an active page not referenced since the last pass turns
                     * inactive */
                    if (!(pg->flags & SIM_PG_REFERENCED))
                        pg->flags &= (uint8_t)~SIM_PG_ACTIVE;
                    pg->flags &= (uint8_t)~SIM_PG_REFERENCED;
                }
                pg->flags |= SIM_PG_PROTNONE;
                pg->stamp = now_ms;
                s->counter[SIM_C_NUMA_PTE_UPDATES]++;
                updated = true;
            }
            st->cursor = base + k;
            virt -= len;
            if (updated)
                pages -= len;
            if (pages <= 0 || virt <= 0)
                return;
        }
    }
    st->cursor = 0;
}

static uint64_t scan_period_ms(const sim_t *s, const numab_state *st)
{
    uint64_t rss = s->fast_pages + s->slow_pages;
    uint64_t windows = (rss + st->scan_pages - 1) / st->scan_pages;
    if (windows == 0)
        windows = 1;
    /* MAX_SCAN_WINDOW = 2560 MB/s: the floor that keeps one scan of scan_size_mb */
    uint64_t scan_mb = (st->scan_pages << s->cfg.page_shift) >> 20;
    uint64_t floor_ms = 1000 * scan_mb / 2560;
    uint64_t per_window = st->period_min_ms / windows;
    uint64_t period = floor_ms > per_window ? floor_ms : per_window;
    return period ? period : 1;
}

void numab_tick(sim_t *s, uint64_t now)
{
    numab_state *st = s->state;
    if (sim_fast_free(s) < st->wake_free)
        st->kswapd_pending = true;
    if (st->kswapd_pending) {
        st->kswapd_pending = false;
        s->counter[SIM_C_KSWAPD_WAKE]++;
        if (st->demotion)
            sim_reclaim(s, st->demote_free, NULL);
    }
    if (now >= st->next_scan_ns) {
        scan(s, st, now);
        st->next_scan_ns = now + scan_period_ms(s, st) * NS_PER_MS;
    }
    if (!st->tpp)
        s->counter[SIM_C_HOT_THRESHOLD_MS] = st->th_ms ? st->th_ms : st->def_th_ms;
}
