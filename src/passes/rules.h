/* rules.h: graph rewrites as rules of the pattern language (kiln/pattern.h):
 * a pattern in its text form, with named parts %a .. %f, and a callback
 * that checks what a pattern cannot say (values of constants, single use)
 * and builds the replacement. simplify.c (SimplifyInference, SimplifyExpr)
 * and fake_quant.c (FakeQuantizationToInteger) are written in them. */
#ifndef KILN_PASSES_RULES_H
#define KILN_PASSES_RULES_H

#include "pattern_internal.h"

typedef struct rule rule;
typedef int (*rule_fn)(kiln_rewrite *rw, const rule *r);
struct rule {
    const char *text;
    rule_fn fn;
    kiln_pattern *p, *x[6]; /* the pattern and its named parts %a .. %f */
};

/* The node p is bound to in the graph before (NULL: unbound). */
KILN_HIDDEN const gnode *rule_pre(const kiln_rewrite *rw, const kiln_pattern *p);
/* Its copy in the graph being built (-1: unbound). */
KILN_HIDDEN int rule_post(kiln_rewrite *rw, const kiln_pattern *p);
/* The matched node (the pattern's root) in the graph before. */
KILN_HIDDEN const gnode *rule_root(const kiln_rewrite *rw);
/* A call in the new graph, typed; -1 on an error. */
KILN_HIDDEN int rule_call(kiln_rewrite *rw, const char *op, int nin, const int *in,
                          const char *attrs, const char *name);
/* Run `rules` (at most 8; their texts parsed here) over g to a fixed point. */
KILN_HIDDEN struct kiln_graph *rule_run(struct kiln_graph *g, rule *rules, int n);
/* Element i of a float32 or float64 array as a double (NaN for others). */
KILN_HIDDEN double rule_at(const kiln_ndarray *a, int64_t i);

#endif
