/*
 * hemem: HeMem-like (SOSP'21; reference §2). Pages count sampled reads and writes; a page is hot
 * when reads >= read_hot or writes >= write_hot. When any page's count reaches cool_at, all
 * counts halve; the halving is applied lazily (a global epoch, each page catches up when it is
 * next seen). Every policy_period_ms the policy thread promotes queued hot slow pages, demoting
 * cold fast pages when the fast tier is full, within migrate_mb_per_pass.
 * New pages go to the fast tier while it has room.
 */
#include "sim_internal.h"

#define NS_PER_MS 1000000ull

typedef struct hemem_state {
    uint32_t epoch; /* number of global halvings so far */
    uint32_t read_hot, write_hot, cool_at;
    uint64_t period_ns, next_ns, pass_pages;
    sim_queue queue;
} hemem_state;

static const sim_param_def hemem_params[] = {
    {"read_hot", 8},
    {"write_hot", 4},
    {"cool_at", 18},
    {"policy_period_ms", 10},
    {"migrate_mb_per_pass", 10240},
    {NULL, 0},
};

static int hemem_init(sim_t *s)
{
    hemem_state *st = s->state;
    st->read_hot = (uint32_t)s->param[0];
    st->write_hot = (uint32_t)s->param[1];
    st->cool_at = (uint32_t)s->param[2];
    st->period_ns = (uint64_t)(s->param[3] * NS_PER_MS);
    st->pass_pages = ((uint64_t)s->param[4] << 20) >> s->cfg.page_shift;
    st->next_ns = s->cfg.start_ns + st->period_ns;
    return 0;
}

/* apply the halvings this page has missed */
static inline void catch_up(hemem_state *st, sim_page *pg)
{
    uint32_t shift = st->epoch - pg->stamp;
    if (shift) {
        pg->count = shift >= 32 ? 0 : pg->count >> shift;
        pg->count2 = shift >= 16 ? 0 : (uint16_t)(pg->count2 >> shift);
        pg->stamp = st->epoch;
    }
}

static inline bool is_hot(const hemem_state *st, const sim_page *pg)
{
    return pg->count >= st->read_hot || pg->count2 >= st->write_hot;
}

static int hemem_alloc(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset)
{
    hemem_state *st = s->state;
    (void)obj, (void)offset;
    pg->stamp = st->epoch;
    (void)s;
    return SIM_FAST;
}

static void hemem_access(sim_t *s, sim_page *pg, uint64_t now, uint64_t weight, bool store)
{
    hemem_state *st = s->state;
    (void)now, (void)weight;
    catch_up(st, pg);
    uint32_t c;
    if (store) {
        c = pg->count2 < 0xFFFF ? ++pg->count2 : pg->count2;
    } else {
        c = pg->count < 0xFFFFFFFFu ? ++pg->count : pg->count;
    }
    if (c >= st->cool_at) {
        st->epoch++; /* global halving, applied lazily */
        catch_up(st, pg);
    }
    if (pg->tier == SIM_SLOW && is_hot(st, pg) && !(pg->flags & SIM_PG_QUEUED)) {
        if (sim_queue_push(&st->queue, sim_page_index(s, pg), sim_page_key_of(s, pg)) == 0)
            pg->flags |= SIM_PG_QUEUED;
    }
}

static bool keep_hot(sim_t *s, sim_page *pg)
{
    hemem_state *st = s->state;
    catch_up(st, pg);
    return is_hot(st, pg);
}

static void hemem_tick(sim_t *s, uint64_t now)
{
    hemem_state *st = s->state;
    if (now < st->next_ns)
        return;
    st->next_ns = now + st->period_ns;
    uint64_t budget = st->pass_pages;
    uint32_t idx;
    uint64_t key;
    size_t n = sim_queue_len(&st->queue);
    while (budget && n-- && sim_queue_pop(&st->queue, &idx, &key)) {
        sim_page *pg = sim_page_check(s, idx, key);
        if (!pg)
            continue;
        pg->flags &= (uint8_t)~SIM_PG_QUEUED;
        catch_up(st, pg);
        if (pg->tier != SIM_SLOW || !is_hot(st, pg))
            continue;
        if (sim_fast_free(s) == 0) {
            if (sim_reclaim(s, 1, keep_hot) == 0) {
                if (sim_queue_push(&st->queue, idx, key) == 0)
                    pg->flags |= SIM_PG_QUEUED;
                break;
            }
            budget = budget > 1 ? budget - 1 : 0;
        }
        if (sim_promote(s, pg) && budget)
            budget--;
    }
}

static void hemem_fini(sim_t *s)
{
    hemem_state *st = s->state;
    sim_queue_free(&st->queue);
}

const sim_policy_ops sim_policy_hemem = {
    .name = "hemem",
    .params = hemem_params,
    .state_bytes = sizeof(hemem_state),
    .init = hemem_init,
    .on_alloc = hemem_alloc,
    .on_access = hemem_access,
    .on_tick = hemem_tick,
    .fini = hemem_fini,
};
