/* Settings table: defaults, suffixes, bounds, and one-line errors. */
#define _GNU_SOURCE
#include "check.h"
#include "config.h"

#include <string.h>

static const char *const *env;

static const char *get(const char *name)
{
    for (int i = 0; env[i]; i += 2)
        if (strcmp(env[i], name) == 0)
            return env[i + 1];
    return NULL;
}

int main(void)
{
    rt_config c;
    char err[256];
    const char *none[] = {NULL};
    env = none;
    CHECK(rt_config_load(&c, get, err, sizeof err) == 0);
    /* the default sampler is resolved at start-up (rt_sampler_auto), never fault */
    CHECK(c.sampler == RT_SAMPLER_AUTO && c.rate == 2000 && c.min_size == 131072);
    CHECK(c.stack_depth == 8 && c.follow_forks == 0 && c.window_pages == 1024);
    CHECK(c.flush_ms == 200 && c.log == 0 && c.output[0] == 0);

    const char *set[] = {"OBJTIER_OUTPUT",
                         "/tmp/x",
                         "OBJTIER_SAMPLER",
                         "perf",
                         "OBJTIER_MIN_SIZE",
                         "1M",
                         "OBJTIER_STACK_DEPTH",
                         "32",
                         "OBJTIER_FOLLOW_FORKS",
                         "1",
                         NULL};
    env = set;
    CHECK(rt_config_load(&c, get, err, sizeof err) == 0);
    CHECK(strcmp(c.output, "/tmp/x") == 0 && c.sampler == RT_SAMPLER_PERF);
    CHECK(c.min_size == 1048576 && c.stack_depth == 32 && c.follow_forks == 1);
    char text[1024];
    size_t n = rt_config_text(&c, text, sizeof text);
    text[n] = 0;
    CHECK(strstr(text, "OBJTIER_MIN_SIZE=1048576\n") != NULL);
    CHECK(strstr(text, "OBJTIER_SAMPLER=perf\n") != NULL);

    const char *bad_depth[] = {"OBJTIER_STACK_DEPTH", "33", NULL};
    env = bad_depth;
    CHECK(rt_config_load(&c, get, err, sizeof err) == -1);
    CHECK(strstr(err, "OBJTIER_STACK_DEPTH=33") != NULL && strchr(err, '\n') == NULL);
    const char *bad_sampler[] = {"OBJTIER_SAMPLER", "pebs", NULL};
    env = bad_sampler;
    CHECK(rt_config_load(&c, get, err, sizeof err) == -1);
    CHECK(strstr(err, "pebs") != NULL);
    const char *pageout[] = {"OBJTIER_SAMPLER", "pageout", "OBJTIER_SAMPLER_REASON", "no PMU",
                             NULL};
    env = pageout;
    CHECK(rt_config_load(&c, get, err, sizeof err) == 0 && c.sampler == RT_SAMPLER_PAGEOUT);
    char all[8192];
    all[rt_config_text(&c, all, sizeof all - 1)] = 0;
    CHECK(strstr(all, "OBJTIER_SAMPLER=pageout\n") &&
          strstr(all, "OBJTIER_SAMPLER_REASON=no PMU\n"));
    const char *wp[] = {"OBJTIER_SAMPLER", "wp", NULL};
    env = wp;
    CHECK(rt_config_load(&c, get, err, sizeof err) == 0 && c.sampler == RT_SAMPLER_WP);
    const char *fault[] = {"OBJTIER_SAMPLER", "fault", NULL};
    env = fault;
    CHECK(rt_config_load(&c, get, err, sizeof err) == 0 && c.sampler == RT_SAMPLER_FAULT);
    const char *autos[] = {"OBJTIER_SAMPLER", "auto", NULL};
    env = autos;
    CHECK(rt_config_load(&c, get, err, sizeof err) == 0 && c.sampler == RT_SAMPLER_AUTO);
    const char *bad_rate[] = {"OBJTIER_RATE", "12x", NULL};
    env = bad_rate;
    CHECK(rt_config_load(&c, get, err, sizeof err) == -1);
    printf("test_config: ok\n");
    return 0;
}
