/* layout_knobs.c: the knobs of AlterOpLayout's hooks (the Winograd tile of
 * a 3x3 convolution) for builds and tuning sessions (driver_internal.h).
 * A call's layout key is its group key as a group of one (kernel_key.c:
 * op, attributes, types, where its inputs come from) hashed again with the
 * knob's name, so that it never equals a kernel's key in the records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/sha256.h"
#include "../graph/graph_internal.h"
#include "driver_internal.h"

/* 0 when the call has no key (a plugin op, a sub-graph attribute) */
static int layout_key(const gnode *call, const char *name, unsigned char key[32]) {
    unsigned char k[32];
    int id = call->id;
    if (!driver_group_key(call->graph, &id, 1, call->in, call->nin, k))
        return 0;
    kiln_sha256 h;
    kiln_sha256_init(&h);
    kiln_sha256_update(&h, "layout ", 7);
    kiln_sha256_update(&h, name, strlen(name));
    kiln_sha256_update(&h, k, 32);
    kiln_sha256_final(&h, key);
    return 1;
}

static int offered(int64_t v, int n, const int64_t *cands) {
    for (int i = 0; i < n; i++)
        if (cands[i] == v)
            return 1;
    return 0;
}

static int64_t knob_value(layout_knobs *base, const gnode *call, const char *name, int64_t def,
                          int n, const int64_t *cands) {
    driver_layout_knobs *k = (driver_layout_knobs *)base;
    unsigned char key[32];
    if (!layout_key(call, name, key))
        return def;
    if (k->mode == DRIVER_LK_FORCE)
        return !strcmp(name, k->force_name) && offered(k->force, n, cands) ? k->force : def;
    if (k->mode == DRIVER_LK_APPLY) {
        const driver_record *r = driver_records_best(k->records, key, NULL);
        int64_t v = r ? te_config_get(&r->cfg, name, def) : def;
        if (r && offered(v, n, cands)) {
            k->applied++;
            return v;
        }
        return def;
    }
    for (int i = 0; i < k->ntasks; i++) /* record: once per key */
        if (!memcmp(k->tasks[i].key, key, 32)) {
            k->tasks[i].count++;
            return def;
        }
    if (k->ntasks == k->cap) {
        int ncap = k->cap ? 2 * k->cap : 16;
        driver_layout_task *nt = realloc(k->tasks, sizeof *nt * (size_t)ncap);
        if (!nt)
            return def;
        k->tasks = nt;
        k->cap = ncap;
    }
    driver_layout_task *t = &k->tasks[k->ntasks++];
    memset(t, 0, sizeof *t);
    memcpy(t->key, key, 32);
    snprintf(t->call, sizeof t->call, "%s", call->name ? call->name : "");
    snprintf(t->op, sizeof t->op, "%s", call->op->name);
    snprintf(t->knob.name, sizeof t->knob.name, "%s", name);
    t->knob.def = def;
    t->knob.cand[t->knob.n++] = def;
    for (int i = 0; i < n && t->knob.n < TE_KNOB_CANDS; i++)
        if (cands[i] != def)
            t->knob.cand[t->knob.n++] = cands[i];
    t->count = 1;
    return def;
}

void driver_layout_knobs_init(driver_layout_knobs *k, int mode, const driver_records *R,
                              const char *force_name, int64_t force) {
    memset(k, 0, sizeof *k);
    k->base.value = knob_value;
    k->mode = mode;
    k->records = R;
    k->force = force;
    snprintf(k->force_name, sizeof k->force_name, "%s", force_name ? force_name : "");
}

void driver_layout_knobs_free(driver_layout_knobs *k) {
    free(k->tasks);
    k->tasks = NULL;
    k->ntasks = k->cap = 0;
}
