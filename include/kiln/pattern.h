/* kiln/pattern.h: the graph pattern language (TVM's dataflow patterns,
 * seed note 001). A pattern describes a sub-graph by its shape: an op call
 * with argument patterns, a wildcard, a constant, an alternation, and
 * constraints on a node's attributes and type. match() tests a pattern
 * against a node, rewrite() replaces every match through a callback until
 * no pattern matches any more, and partition() wraps each match in a
 * composite function (the first step of bring-your-own-codegen,
 * kiln/byoc.h).
 *
 * Patterns live in a kiln_pattern_set, which frees them all at once. A
 * pattern object used twice in one pattern binds one node: in
 *     x = wildcard; subtract(x, mean(x))
 * both arguments must be the same node.
 *
 * The text form (kiln_pattern_parse, kiln_pattern_print) writes patterns
 * the way the graph text writes calls:
 *     *                          any node (a wildcard)
 *     const                      a constant
 *     nn.conv2d(P, P)            a call of nn.conv2d with these arguments
 *     nn.conv2d                  a call of nn.conv2d, any arguments
 *     nn.conv2d[groups=1](...)   ... whose attributes have these values
 *                                (the attribute syntax of the graph text)
 *     @elemwise(P)               a call of any op of that fusion class or a
 *                                lighter one: @elemwise, @broadcast,
 *                                @injective, @reduce, @fusable, @opaque (any op)
 *     nn.relu?(P)                nn.relu(P), or P alone (optional)
 *     P | Q                      P, else Q
 *     P : float32[1, _, 56, 56]  P, of that dtype and shape (_ any dim;
 *                                either part may be left out: ": float32",
 *                                ": [_, _]")
 *     %x   %x=P                  a named pattern: the first use defines it
 *                                (a wildcard, or P); every use is one node
 *     dom(PARENT, PATH, CHILD)   CHILD, reached from PARENT only through
 *                                nodes that match PATH: a chain of
 *                                elementwise ops after a producer
 *     (P)                        grouping
 * `|` binds loosest, then `:`. */
#ifndef KILN_PATTERN_H
#define KILN_PATTERN_H

#include "kiln/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_pattern kiln_pattern;
typedef struct kiln_pattern_set kiln_pattern_set;

KILN_API kiln_pattern_set *kiln_pattern_set_new(void);
/* Frees the set and every pattern made in it. */
KILN_API void kiln_pattern_set_free(kiln_pattern_set *s);

/* ---- constructors (NULL with an error on a bad argument) ---------------- */
KILN_API kiln_pattern *kiln_pattern_wildcard(kiln_pattern_set *s);
KILN_API kiln_pattern *kiln_pattern_constant(kiln_pattern_set *s);
/* A call of op `op` with nargs argument patterns; nargs -1: any arguments. */
KILN_API kiln_pattern *kiln_pattern_op(kiln_pattern_set *s, const char *op, int nargs,
                                       kiln_pattern *const *args);
/* A call whose op (and attributes) `pred` accepts: pred(graph, node, user)
 * returns 1 to accept. nargs as for kiln_pattern_op. */
typedef int (*kiln_pattern_pred)(const kiln_graph *g, int node, void *user);
KILN_API kiln_pattern *kiln_pattern_op_where(kiln_pattern_set *s, kiln_pattern_pred pred,
                                             void *user, int nargs, kiln_pattern *const *args);
/* A call of any op whose fusion class (kiln/plugin.h's kiln_op_pattern) is
 * at most `max_class`. */
KILN_API kiln_pattern *kiln_pattern_op_class(kiln_pattern_set *s, int max_class, int nargs,
                                             kiln_pattern *const *args);
/* a, else b. */
KILN_API kiln_pattern *kiln_pattern_alt(kiln_pattern_set *s, kiln_pattern *a, kiln_pattern *b);
/* p, where the call's attributes have the values in `attrs` (graph text
 * syntax: "groups=1, data_layout=\"NCHW\""); an attribute the call does
 * not set compares with its schema default. */
KILN_API kiln_pattern *kiln_pattern_attrs(kiln_pattern_set *s, kiln_pattern *p, const char *attrs);
/* p, of dtype `dtype` (KILN_DTYPE_COUNT: any) and, with ndim >= 0, of
 * that rank with dims[i] (< 0: any) where dims is not NULL. */
KILN_API kiln_pattern *kiln_pattern_type(kiln_pattern_set *s, kiln_pattern *p, kiln_dtype dtype,
                                         int ndim, const int64_t *dims);
/* op(p), or p alone. */
KILN_API kiln_pattern *kiln_pattern_optional(kiln_pattern_set *s, const char *op, kiln_pattern *p);
/* child, whose inputs lead back to parent through nodes matching path only. */
KILN_API kiln_pattern *kiln_pattern_dominator(kiln_pattern_set *s, kiln_pattern *parent,
                                              kiln_pattern *path, kiln_pattern *child);

/* ---- text -------------------------------------------------------------------- */
/* Parse the text form (above); named patterns stay in the set, so a later
 * parse may use them. NULL with an error giving line:column. */
KILN_API kiln_pattern *kiln_pattern_parse(kiln_pattern_set *s, const char *text);
/* The text form, malloc'd (parsing it gives the same pattern). */
KILN_API char *kiln_pattern_print(const kiln_pattern *p);
/* The named pattern %name of the set, or NULL. */
KILN_API kiln_pattern *kiln_pattern_named(kiln_pattern_set *s, const char *name);

/* ---- matching ------------------------------------------------------------------ */
typedef struct kiln_match kiln_match;
/* Whether p matches node `node` of g (types inferred): a new match (free it
 * with kiln_match_free) or NULL when it does not (no error set). */
KILN_API kiln_match *kiln_pattern_match(const kiln_pattern *p, const kiln_graph *g, int node);
/* The node of the match's graph that p (a part of the matched pattern) is
 * bound to, or -1 (p not part of it, or an optional's or alternative's
 * branch that did not match). */
KILN_API int kiln_match_node(const kiln_match *m, const kiln_pattern *p);
KILN_API void kiln_match_free(kiln_match *m);

/* ---- rewriting --------------------------------------------------------------- */
/* What a rewrite callback sees: the graph before (pre) and the graph being
 * built (post), with every node the match bound already in post. */
typedef struct kiln_rewrite kiln_rewrite;
KILN_API const kiln_graph *kiln_rewrite_pre(const kiln_rewrite *rw);
KILN_API kiln_graph *kiln_rewrite_post(kiln_rewrite *rw);
/* The matched node (the pattern's root) in pre. */
KILN_API int kiln_rewrite_root(const kiln_rewrite *rw);
/* The node p is bound to, in pre (-1: unbound) and in post (its copy). */
KILN_API int kiln_rewrite_pre_node(const kiln_rewrite *rw, const kiln_pattern *p);
KILN_API int kiln_rewrite_post_node(const kiln_rewrite *rw, const kiln_pattern *p);
/* The copy in post of node `pre_node` of pre, for any node before the root
 * (the root's inputs included: TVM's `post` is the root over these), or -1. */
KILN_API int kiln_rewrite_post_of(const kiln_rewrite *rw, int pre_node);
/* How many nodes of pre that the outputs need read node `node` (a graph
 * output counts once; dead code does not count): a callback that would
 * leave an inner node computed twice checks it. */
KILN_API int kiln_rewrite_uses(const kiln_rewrite *rw, int node);
/* The callback: add the replacement to post and return its id, or
 * KILN_REWRITE_SKIP to keep the match as it is, or -1 on an error. */
#define KILN_REWRITE_SKIP (-2)
typedef int (*kiln_rewrite_fn)(kiln_rewrite *rw, void *user);
/* A new graph in which every node p matches is replaced by what cb makes
 * of it, repeated until no match is rewritten (at most 100 rounds: a
 * rewrite that never settles is an error); nodes left unused are removed.
 * NULL with an error. */
KILN_API kiln_graph *kiln_graph_rewrite(const kiln_graph *g, const kiln_pattern *p,
                                        kiln_rewrite_fn cb, void *user);

/* One round only (TVM's rewrite_once): each node of g is offered to cb once,
 * and what cb makes is not matched again, so a rewrite may wrap what it
 * matched (relu(x) -> clip(relu(x))). NULL with an error. */
KILN_API kiln_graph *kiln_graph_rewrite_once(const kiln_graph *g, const kiln_pattern *p,
                                             kiln_rewrite_fn cb, void *user);

/* Each match of p, largest first from the graph's outputs and never
 * overlapping another, whose inner nodes are used only inside it, becomes
 * one call of op "composite" (Relay's function with a Composite
 * attribute): its arguments the nodes the match reads (wildcards and
 * constants), its body the matched nodes, with attributes `attrs` (graph
 * text syntax, at least Composite="NAME"). check (may be NULL) vets each
 * match (its root node in g): 0 leaves it alone. NULL with an error. */
KILN_API kiln_graph *kiln_graph_partition(const kiln_graph *g, const kiln_pattern *p,
                                          const char *attrs, kiln_pattern_pred check, void *user);

#ifdef __cplusplus
}
#endif
#endif
