/* options.c: kiln_tune_options, what `kiln tune` and kiln_graph_tune take
 * (kiln/tune.h): each key's value checked as it is set. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/tune.h"
#include "tune_internal.h"

const char *const tune_tuner_names[4] = {"xgb", "ga", "random", "grid"};

kiln_tune_options *kiln_tune_options_new(void) {
    kiln_tune_options *o = kiln_calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->trials = 64;
    o->tuner = TUNER_XGB;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = ncpu > 0 ? (int)ncpu : 1;
    o->repeat = 3;
    o->timeout = 10;
    o->seed = 1;
    return o;
}

void kiln_tune_options_free(kiln_tune_options *o) {
    if (!o)
        return;
    free(o->output);
    free(o->records);
    free(o->tasks);
    free(o->plot);
    free(o);
}

static kiln_status set_str(char **dst, const char *v) {
    char *c = *v ? kiln_strdup(v) : NULL;
    if (*v && !c)
        return KILN_ERR_NOMEM;
    free(*dst);
    *dst = c;
    return KILN_OK;
}

static int parse_int(const char *v, long lo, long hi, long *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi)
        return 0;
    *out = x;
    return 1;
}

kiln_status kiln_tune_options_set(kiln_tune_options *o, const char *key, const char *value) {
    if (!o || !key || !value)
        return kiln_set_error(KILN_ERR_INVALID, "tune option: NULL argument");
    long x;
    if (!strcmp(key, "output"))
        return set_str(&o->output, value);
    if (!strcmp(key, "tuning-records"))
        return set_str(&o->records, value);
    if (!strcmp(key, "tasks"))
        return set_str(&o->tasks, value);
    if (!strcmp(key, "log-plot"))
        return set_str(&o->plot, value);
    struct {
        const char *key;
        int *dst;
        long lo, hi;
    } ints[] = {{"trials", &o->trials, 1, 1000000},
                {"early-stopping", &o->early, 0, 1000000},
                {"jobs", &o->jobs, 1, 256},
                {"repeat", &o->repeat, 1, TUNE_MAX_COSTS}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!strcmp(key, ints[i].key)) {
            if (!parse_int(value, ints[i].lo, ints[i].hi, &x))
                return kiln_set_error(KILN_ERR_INVALID,
                                      "tune option %s: '%s' is not an integer in %ld-%ld", key,
                                      value, ints[i].lo, ints[i].hi);
            *ints[i].dst = (int)x;
            return KILN_OK;
        }
    if (!strcmp(key, "seed")) {
        if (!parse_int(value, 0, 2147483647L, &x))
            return kiln_set_error(KILN_ERR_INVALID, "tune option seed: '%s' is not an integer",
                                  value);
        o->seed = (uint64_t)x;
        return KILN_OK;
    }
    if (!strcmp(key, "timeout")) {
        char *end;
        double t = strtod(value, &end);
        if (!*value || *end || !(t > 0 && t <= 3600))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "tune option timeout: '%s' is not a number of seconds in "
                                  "(0, 3600]",
                                  value);
        o->timeout = t;
        return KILN_OK;
    }
    if (!strcmp(key, "tuner")) {
        for (int i = 0; i < 4; i++)
            if (!strcmp(value, tune_tuner_names[i])) {
                o->tuner = i;
                return KILN_OK;
            }
        return kiln_set_error(KILN_ERR_INVALID,
                              "tune option tuner: '%s' is not xgb, ga, random or grid", value);
    }
    if (!strcmp(key, "test-fault")) {
        int crash = !strncmp(value, "crash:", 6), hang = !strncmp(value, "hang:", 5);
        if ((!crash && !hang) || !parse_int(strchr(value, ':') + 1, 1, 1000000, &x))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "tune option test-fault: '%s' is not crash:N or hang:N", value);
        o->fault = crash ? 1 : 2;
        o->fault_at = (int)x;
        return KILN_OK;
    }
    return kiln_set_error(KILN_ERR_INVALID,
                          "unknown tune option '%s' (known: output, tuning-records, trials, "
                          "early-stopping, tuner, timeout, tasks, jobs, repeat, seed, log-plot)",
                          key);
}

kiln_status kiln_tune_options_set_log(kiln_tune_options *o, kiln_tune_log_fn fn, void *user) {
    if (!o)
        return kiln_set_error(KILN_ERR_INVALID, "tune options: NULL");
    o->log = fn;
    o->log_user = user;
    return KILN_OK;
}
