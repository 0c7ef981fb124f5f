/* Text-form plan parser; see plan.h. Runs at start-up inside the runtime's constructor:
 * raw system calls for the file, rt_sys_mmap for memory, no stdio streams, no malloc. */
#define _GNU_SOURCE
#include "plan.h"
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_PLAN_BYTES (256u << 20) /* a larger file is refused */
#define MAX_FIELDS     8

static rt_plan_self self; /* rt_plan_set_self; all zero (no section applies) before */
static int have_self;

void rt_plan_set_self(const rt_plan_self *who)
{
    self = *who;
    have_self = 1;
}

/* ---- small helpers ------------------------------------------------------------- */

static int parse_dec(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* RANGES of a "pages" entry: OFF:LEN[,OFF:LEN...], decimal bytes, LEN > 0, sorted and
 * disjoint, summing to fast_bytes; appended to p->ranges (pass 2 only). */
static int parse_ranges(rt_plan *p, const char *s, size_t n, uint64_t fast_bytes, int keep,
                        uint64_t *first, uint64_t *count)
{
    uint64_t end = 0, total = 0, k = 0;
    size_t i = 0;
    *first = p->n_ranges;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] != ':')
            j++;
        size_t c = j + 1;
        while (c < n && s[c] != ',')
            c++;
        uint64_t off, len;
        if (j >= n || parse_dec(s + i, j - i, &off) != 0 ||
            parse_dec(s + j + 1, c - j - 1, &len) != 0 || len == 0 || off < end ||
            off > UINT64_MAX - len)
            return -1;
        if (keep) {
            if ((p->n_ranges + 1) * sizeof(rt_plan_range) > p->map_ranges_bytes)
                return -1;
            p->ranges[p->n_ranges++] = (rt_plan_range){off, len};
        }
        end = off + len;
        total += len;
        k++;
        i = c + 1;
        if (c == n - 1) /* a trailing comma */
            return -1;
    }
    *count = k;
    return k > 0 && total == fast_bytes ? 0 : -1;
}

/* KEY: exactly 16 lowercase hex digits. */
static int parse_key(const char *s, size_t n, uint64_t *out)
{
    if (n != 16)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < 16; i++) {
        int h = hexval(s[i]);
        if (h < 0 || (s[i] >= 'A' && s[i] <= 'F'))
            return -1;
        v = (v << 4) | (uint64_t)h;
    }
    *out = v;
    return 0;
}

/* %XX-decodes a name field into the string arena ("%" alone is the empty name). */
static const char *keep_name(rt_plan *p, const char *s, size_t n, uint32_t *len)
{
    if (n == 1 && s[0] == '%')
        n = 0;
    if (p->strings_used + n + 1 > p->strings_cap)
        return NULL;
    char *d = p->strings + p->strings_used;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' &&
            i + 2 < n) { /* as objtier.plan.unescape: a '%' too near the end is literal */
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0)
                return NULL;
            d[k++] = (char)(hi * 16 + lo);
            i += 2;
        } else
            d[k++] = s[i];
    }
    if (k > RT_PLAN_MAX_NAME)
        return NULL;
    d[k] = 0;
    p->strings_used += k + 1;
    *len = (uint32_t)k;
    return d;
}

uint32_t rt_plan_phase_index(const rt_plan *p, const char *name, size_t len)
{
    for (uint32_t i = 0; i < p->n_phases; i++)
        if (p->phases[i].len == len && memcmp(p->phases[i].name, name, len) == 0)
            return i;
    return RT_PLAN_NONE;
}

static uint32_t add_phase(rt_plan *p, const char *name, uint32_t len)
{
    uint32_t i = rt_plan_phase_index(p, name, len);
    if (i != RT_PLAN_NONE)
        return i;
    if (p->n_phases == RT_PLAN_MAX_PHASES)
        return RT_PLAN_NONE;
    i = p->n_phases++;
    p->phases[i].name = name;
    p->phases[i].len = len;
    p->phases[i].target = i; /* until a `phase` record says otherwise */
    return i;
}

/* Heap sort of entries by (key, line): no allocation, O(n log n). */
static int entry_less(const rt_plan_entry *a, const rt_plan_entry *b)
{
    return a->key < b->key || (a->key == b->key && a->line < b->line);
}

static void sift(rt_plan_entry *e, uint64_t root, uint64_t n)
{
    for (;;) {
        uint64_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && entry_less(&e[child], &e[child + 1]))
            child++;
        if (!entry_less(&e[root], &e[child]))
            return;
        rt_plan_entry t = e[root];
        e[root] = e[child];
        e[child] = t;
        root = child;
    }
}

static void sort_entries(rt_plan_entry *e, uint64_t n)
{
    for (uint64_t i = n / 2; i-- > 0;)
        sift(e, i, n);
    for (uint64_t end = n; end-- > 1;) {
        rt_plan_entry t = e[0];
        e[0] = e[end];
        e[end] = t;
        sift(e, 0, end);
    }
}

/* ---- parsing ------------------------------------------------------------------- */

typedef struct {
    const char *s[MAX_FIELDS];
    size_t n[MAX_FIELDS];
    int count; /* fields; MAX_FIELDS + 1 when there are too many */
} fields;

static void split(const char *line, size_t len, fields *f)
{
    f->count = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || line[i] == ' ') {
            if (f->count == MAX_FIELDS) {
                f->count = MAX_FIELDS + 1;
                return;
            }
            f->s[f->count] = line + start;
            f->n[f->count] = i - start;
            f->count++;
            start = i + 1;
        }
    }
}

static int is_word(const fields *f, int i, const char *w)
{
    size_t n = strlen(w);
    return f->n[i] == n && memcmp(f->s[i], w, n) == 0;
}

/* KEY OCC SIZE_MIN SIZE_MAX at fields at..at+3, the object match of entries and `folio`
 * records: OCC decimal or "*" (RT_PLAN_ANY), SIZE_MIN <= SIZE_MAX. */
static int parse_match(const fields *f, int at, uint64_t *key, uint64_t *occurrence,
                       uint64_t *size_min, uint64_t *size_max)
{
    if (parse_key(f->s[at], f->n[at], key) != 0)
        return -1;
    if (is_word(f, at + 1, "*"))
        *occurrence = RT_PLAN_ANY;
    else if (parse_dec(f->s[at + 1], f->n[at + 1], occurrence) != 0 || *occurrence == RT_PLAN_ANY)
        return -1;
    return parse_dec(f->s[at + 2], f->n[at + 2], size_min) == 0 &&
                   parse_dec(f->s[at + 3], f->n[at + 3], size_max) == 0 && *size_min <= *size_max
               ? 0
               : -1;
}

/* At most 60 bytes of s[0..len) into shown (64 bytes), each byte that is not printable ASCII
 * as '?', so that an error message stays one line of text; "..." when cut. */
static void printable(char shown[64], const char *s, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k < 60; i++)
        shown[k++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (len > 60)
        for (int i = 0; i < 3; i++)
            shown[k++] = '.';
    shown[k] = 0;
}

static void fail_line(char *err, size_t err_len, uint32_t number, const char *line, size_t len)
{
    char shown[64];
    printable(shown, line, len);
    snprintf(err, err_len, "line %u: cannot parse '%s'", number, shown);
}

/* The base name of path[0..n). */
static const char *base_name(const char *path, size_t n, size_t *len)
{
    size_t i = n;
    while (i > 0 && path[i - 1] != '/')
        i--;
    *len = n - i;
    return path + i;
}

/* 1 when the binary named by fields 1 (BUILD_ID, any_id: "-") and 3 (PATH) of a `binary` or
 * `program` record is this process's (rt_plan_self): same build id, or when either side has
 * none, same base name; 0 when not, -1 when PATH is malformed. */
static int is_self(rt_plan *p, const fields *f, int any_id)
{
    uint32_t l = 0;
    size_t used = p->strings_used;
    const char *path = keep_name(p, f->s[3], f->n[3], &l);
    if (!path)
        return -1;
    size_t bl, nb = f->n[1];
    const char *base = base_name(path, l, &bl);
    int same;
    if (!any_id && self.build_id[0])
        same = strlen(self.build_id) == nb && memcmp(self.build_id, f->s[1], nb) == 0;
    else
        same = bl > 0 && strlen(self.exe_base) == bl && memcmp(self.exe_base, base, bl) == 0;
    p->strings_used = used;
    return have_self && same;
}

/* `program BUILD_ID RANK PATH`: starts a section; *mine says whether its folio and entry lines
 * apply to this process (rt_plan_self). BUILD_ID is "-" or 2 to 64 lowercase hex digits, RANK
 * "-" or decimal. Pass 1 counts the sections and notes the first that applies. */
static int parse_program(rt_plan *p, const fields *f, int pass, int *mine)
{
    size_t nb = f->n[1];
    int any_id = is_word(f, 1, "-");
    if (!any_id) {
        if (nb < 2 || nb > 64 || nb % 2)
            return -1;
        for (size_t i = 0; i < nb; i++)
            if (hexval(f->s[1][i]) < 0 || (f->s[1][i] >= 'A' && f->s[1][i] <= 'F'))
                return -1;
    }
    uint64_t rank = RT_PLAN_NO_RANK;
    if (!is_word(f, 2, "-") && (parse_dec(f->s[2], f->n[2], &rank) != 0 || rank == RT_PLAN_NO_RANK))
        return -1;
    int same = is_self(p, f, any_id);
    if (same < 0)
        return -1;
    *mine = same && (rank == RT_PLAN_NO_RANK || rank == self.rank);
    if (pass == 1) {
        if (*mine && p->program_mine == RT_PLAN_NONE)
            p->program_mine = p->n_programs;
        p->n_programs++;
    }
    return 0;
}

/* Pass 1 (phases == 1): header, binary, budget, phase records. Pass 2: entries. */
static int parse_pass(rt_plan *p, const char *text, size_t len, int pass, const char **targets,
                      uint32_t *target_lens, char *err, size_t err_len)
{
    uint32_t number = 0;
    int mine = 1; /* lines before the first `program` record apply to every process */
    for (size_t at = 0; at < len || number == 0;) {
        size_t end = at;
        while (end < len && text[end] != '\n')
            end++;
        const char *line = text + at;
        size_t n = end - at;
        if (n && line[n - 1] == '\r')
            n--;
        at = end + 1;
        number++;
        if (number == 1) {
            if (n != 14 || memcmp(line, "objtier-plan 1", 14) != 0) {
                snprintf(err, err_len,
                         "not an objtier text plan (first line is not 'objtier-plan 1')");
                return -1;
            }
            continue;
        }
        if (n == 0 || line[0] == '#')
            continue;
        fields f;
        split(line, n, &f);
        int ok = 1;
        if (f.count >= 1 && is_word(&f, 0, "binary")) {
            ok = f.count == 4;
            if (ok && pass == 1) {
                uint32_t l = 0;
                size_t used = p->strings_used;
                const char *path = keep_name(p, f.s[3], f.n[3], &l);
                ok = path != NULL;
                if (ok) {
                    size_t c = l < sizeof p->binary_path - 1 ? l : sizeof p->binary_path - 1;
                    memcpy(p->binary_path, path, c);
                    p->binary_path[c] = 0;
                    p->strings_used = used;
                    p->binary_mine = is_self(p, &f, is_word(&f, 1, "-")) == 1;
                }
            }
        } else if (f.count >= 1 && is_word(&f, 0, "program")) {
            ok = f.count == 4 && parse_program(p, &f, pass, &mine) == 0;
        } else if (f.count >= 1 && is_word(&f, 0, "budget")) {
            ok = f.count == 3 && parse_dec(f.s[1], f.n[1], &p->budget_bytes) == 0 &&
                 parse_dec(f.s[2], f.n[2], &p->page_bytes) == 0;
        } else if (f.count >= 1 && is_word(&f, 0, "phase")) {
            ok = f.count == 4;
            if (ok && pass == 1) {
                uint32_t l = 0, tl = 0, pl = 0;
                const char *name = keep_name(p, f.s[1], f.n[1], &l);
                const char *target = keep_name(p, f.s[3], f.n[3], &tl);
                ok = name && target &&
                     (is_word(&f, 2, "-") || keep_name(p, f.s[2], f.n[2], &pl) != NULL);
                uint32_t i = ok ? add_phase(p, name, l) : RT_PLAN_NONE;
                ok = ok && i != RT_PLAN_NONE;
                if (ok) {
                    targets[i] = target;
                    target_lens[i] = tl;
                }
            }
        } else if (f.count >= 1 && is_word(&f, 0, "folio")) {
            rt_plan_folio r;
            ok = f.count == 5 &&
                 parse_match(&f, 1, &r.key, &r.occurrence, &r.size_min, &r.size_max) == 0;
            if (ok && pass == 2 && mine)
                p->folios[p->n_folios++] = r;
        } else if (f.count >= 1 && is_word(&f, 0, "site")) {
            rt_plan_site r = {.tier = RT_PLAN_FAST, .line = number};
            ok = (f.count == 4 || f.count == 5) && parse_key(f.s[1], f.n[1], &r.key) == 0 &&
                 parse_key(f.s[2], f.n[2], &r.frame0) == 0 &&
                 (is_word(&f, 3, "fast") || is_word(&f, 3, "slow") || is_word(&f, 3, "apart")) &&
                 (f.count == 4 ||
                  (is_word(&f, 3, "fast") && parse_dec(f.s[4], f.n[4], &r.lock_bytes) == 0));
            if (ok && is_word(&f, 3, "slow"))
                r.tier = RT_PLAN_SLOW;
            else if (ok && is_word(&f, 3, "apart"))
                r.tier = RT_PLAN_APART;
            if (ok && pass == 2 && mine)
                p->sites[p->n_sites++] = r;
        } else if (f.count == 7 || (f.count == 8 && is_word(&f, 4, "pages"))) {
            rt_plan_entry e;
            memset(&e, 0, sizeof e);
            ok = parse_match(&f, 0, &e.key, &e.occurrence, &e.size_min, &e.size_max) == 0 &&
                 parse_dec(f.s[5], f.n[5], &e.fast_bytes) == 0;
            if (ok && is_word(&f, 4, "fast"))
                e.tier = RT_PLAN_FAST;
            else if (ok && is_word(&f, 4, "slow"))
                e.tier = RT_PLAN_SLOW;
            else if (ok && is_word(&f, 4, "split"))
                e.tier = RT_PLAN_SPLIT;
            else if (ok && is_word(&f, 4, "pages") && f.count == 8)
                e.tier = RT_PLAN_PAGES;
            else
                ok = 0;
            if (ok && e.tier == RT_PLAN_PAGES)
                ok = parse_ranges(p, f.s[7], f.n[7], e.fast_bytes, pass == 2 && mine, &e.range0,
                                  &e.n_ranges) == 0;
            if (ok && pass == 2 && mine) {
                uint32_t l = 0;
                size_t used = p->strings_used;
                const char *name = keep_name(p, f.s[6], f.n[6], &l);
                e.phase = RT_PLAN_NONE;
                if (name) {
                    e.phase = rt_plan_phase_index(p, name, l);
                    if (e.phase == RT_PLAN_NONE)
                        e.phase = add_phase(p, name, l); /* a phase with no `phase` record */
                    else
                        p->strings_used = used;
                }
                ok = e.phase != RT_PLAN_NONE;
                e.line = number;
                if (ok)
                    p->entries[p->n_entries++] = e;
            }
        } else
            ok = 0;
        if (!ok) {
            fail_line(err, err_len, number, line, n);
            return -1;
        }
    }
    return 0;
}

int rt_plan_parse(rt_plan *p, const char *text, size_t len, char *err, size_t err_len)
{
    memset(p, 0, sizeof *p);
    uint64_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    p->map_entries_bytes = (size_t)lines * sizeof(rt_plan_entry);
    p->map_entries = rt_sys_mmap(p->map_entries_bytes);
    p->map_folios_bytes = (size_t)lines * sizeof(rt_plan_folio);
    p->map_folios = rt_sys_mmap(p->map_folios_bytes);
    p->strings_cap = len + 16;
    p->strings = rt_sys_mmap(p->strings_cap);
    if (!p->map_entries || !p->map_folios || !p->strings) {
        snprintf(err, err_len, "out of memory reading the plan");
        rt_plan_free(p);
        return -1;
    }
    p->map_sites_bytes = (size_t)lines * sizeof(rt_plan_site);
    p->map_sites = rt_sys_mmap(p->map_sites_bytes);
    if (!p->map_sites) {
        snprintf(err, err_len, "out of memory reading the plan");
        rt_plan_free(p);
        return -1;
    }
    p->entries = p->map_entries;
    p->folios = p->map_folios;
    p->sites = p->map_sites;
    /* every range takes at least 4 bytes of the file ("0:1,"), so len / 4 + 1 bound them */
    p->map_ranges_bytes = ((size_t)len / 4 + 1) * sizeof(rt_plan_range);
    p->map_ranges = rt_sys_mmap(p->map_ranges_bytes);
    if (!p->map_ranges) {
        snprintf(err, err_len, "out of memory reading the plan");
        rt_plan_free(p);
        return -1;
    }
    p->ranges = p->map_ranges;
    p->program_mine = RT_PLAN_NONE;
    static const char root[] = "*";
    add_phase(p, root, 1); /* phases[0] is the root */
    const char *targets[RT_PLAN_MAX_PHASES] = {0};
    uint32_t target_lens[RT_PLAN_MAX_PHASES] = {0};
    if (parse_pass(p, text, len, 1, targets, target_lens, err, err_len) != 0 ||
        parse_pass(p, text, len, 2, targets, target_lens, err, err_len) != 0) {
        rt_plan_free(p);
        return -1;
    }
    for (uint32_t i = 0; i < p->n_phases; i++) {
        if (!targets[i])
            continue;
        uint32_t t = rt_plan_phase_index(p, targets[i], target_lens[i]);
        if (t == RT_PLAN_NONE) {
            char name[64], target[64]; /* decoded names may hold newlines and other bytes */
            printable(name, p->phases[i].name, p->phases[i].len);
            printable(target, targets[i], target_lens[i]);
            snprintf(err, err_len, "phase '%s' has target '%s', which is not a phase", name,
                     target);
            rt_plan_free(p);
            return -1;
        }
        p->phases[i].target = t;
    }
    sort_entries(p->entries, p->n_entries);
    return 0;
}

int rt_plan_load(rt_plan *p, const char *path, char *err, size_t err_len)
{
    char why[200];
    memset(p, 0, sizeof *p);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(err, err_len, "cannot read plan %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size > MAX_PLAN_BYTES) {
        snprintf(err, err_len, "cannot read plan %s: not a regular file of at most %u MiB", path,
                 MAX_PLAN_BYTES >> 20);
        syscall(SYS_close, fd);
        return -1;
    }
    size_t cap = (size_t)st.st_size + 1;
    char *buf = rt_sys_mmap(cap);
    size_t got = 0;
    while (buf && got < cap - 1) {
        long r = syscall(SYS_read, fd, buf + got, cap - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    syscall(SYS_close, fd);
    if (!buf) {
        snprintf(err, err_len, "cannot read plan %s: out of memory", path);
        return -1;
    }
    int rc = rt_plan_parse(p, buf, got, why, sizeof why);
    rt_sys_munmap(buf, cap);
    if (rc != 0)
        snprintf(err, err_len, "plan %s: %s", path, why);
    return rc;
}

void rt_plan_free(rt_plan *p)
{
    rt_sys_munmap(p->map_entries, p->map_entries_bytes);
    rt_sys_munmap(p->map_ranges, p->map_ranges_bytes);
    rt_sys_munmap(p->map_folios, p->map_folios_bytes);
    rt_sys_munmap(p->map_sites, p->map_sites_bytes);
    rt_sys_munmap(p->strings, p->strings_cap);
    memset(p, 0, sizeof *p);
}

/* First entry with this key (entries sorted by key), or n_entries. */
static uint64_t lower_bound(const rt_plan *p, uint64_t key)
{
    uint64_t lo = 0, hi = p->n_entries;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (p->entries[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t rt_plan_match(const rt_plan *p, uint64_t key, uint64_t occurrence, uint64_t size,
                       uint32_t phase)
{
    uint64_t any = RT_PLAN_NONE;
    for (uint64_t i = lower_bound(p, key); i < p->n_entries && p->entries[i].key == key; i++) {
        const rt_plan_entry *e = &p->entries[i];
        if (e->phase != phase || size < e->size_min || size > e->size_max)
            continue;
        if (e->occurrence == occurrence)
            return i;
        if (e->occurrence == RT_PLAN_ANY && any == RT_PLAN_NONE)
            any = i;
    }
    return any;
}

int rt_plan_large_folio(const rt_plan *p, uint64_t key, uint64_t occurrence, uint64_t size)
{
    for (uint64_t i = 0; i < p->n_folios; i++) {
        const rt_plan_folio *r = &p->folios[i];
        if (r->key == key && size >= r->size_min && size <= r->size_max &&
            (r->occurrence == RT_PLAN_ANY || r->occurrence == occurrence))
            return 1;
    }
    return 0;
}

int rt_plan_has_key(const rt_plan *p, uint64_t key)
{
    uint64_t i = lower_bound(p, key);
    return i < p->n_entries && p->entries[i].key == key;
}
