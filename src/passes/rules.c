/* rules.c: the rewrites written as rules of the pattern language
 * (rules.h): parsing their texts, running them to a fixed point, and the
 * helpers their callbacks share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime_internal.h"
#include "rules.h"

static int run_rule(kiln_rewrite *rw, void *user) {
    const rule *r = user;
    return r->fn(rw, r);
}

const gnode *rule_pre(const kiln_rewrite *rw, const kiln_pattern *p) {
    int id = kiln_rewrite_pre_node(rw, p);
    return id >= 0 ? kiln_rewrite_pre(rw)->nodes[id] : NULL;
}

int rule_post(kiln_rewrite *rw, const kiln_pattern *p) {
    return kiln_rewrite_post_node(rw, p);
}

const gnode *rule_root(const kiln_rewrite *rw) {
    return kiln_rewrite_pre(rw)->nodes[kiln_rewrite_root(rw)];
}

/* A call in the new graph, typed; -1 on an error. */
int rule_call(kiln_rewrite *rw, const char *op, int nin, const int *in, const char *attrs,
              const char *name) {
    struct kiln_graph *r = kiln_rewrite_post(rw);
    int id = kiln_graph_call(r, op, nin, in, attrs, name);
    return id < 0 || graph_infer_node(r, id) != KILN_OK ? -1 : id;
}

/* Run `rules` (texts parsed here) over g to a fixed point. */
struct kiln_graph *rule_run(struct kiln_graph *g, rule *rules, int n) {
    kiln_pattern_set *sets[8] = {0};
    const kiln_pattern *pats[8] = {0};
    pattern_rewrite_fn fns[8] = {0};
    void *users[8] = {0};
    struct kiln_graph *r = NULL;
    KILN_ASSERT(n >= 0 && n <= 8);
    for (int k = 0; k < n; k++) {
        kiln_pattern_set *s = sets[k] = kiln_pattern_set_new(); /* each rule's %names */
        if (!s || !(rules[k].p = kiln_pattern_parse(s, rules[k].text)))
            goto done;
        for (int i = 0; i < 6; i++) {
            char nm[2] = {(char)('a' + i), 0};
            rules[k].x[i] = kiln_pattern_named(s, nm);
        }
        pats[k] = rules[k].p;
        fns[k] = run_rule;
        users[k] = &rules[k];
    }
    r = pattern_rewrite_all(g, n, pats, fns, users);
done:
    for (int k = 0; k < n; k++)
        kiln_pattern_set_free(sets[k]);
    return r;
}

double rule_at(const kiln_ndarray *a, int64_t i) {
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: return ((const float *)kiln_ndarray_data(a))[i];
    case KILN_FLOAT64: return ((const double *)kiln_ndarray_data(a))[i];
    default: return NAN;
    }
}
