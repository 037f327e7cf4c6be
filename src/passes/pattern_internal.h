/* pattern_internal.h: the pattern objects of kiln/pattern.h, shared by the
 * matcher (pattern.c) and the text form (pattern_text.c). */
#ifndef KILN_PATTERN_INTERNAL_H
#define KILN_PATTERN_INTERNAL_H

#include "kiln/pattern.h"
#include "passes.h"

typedef enum {
    PAT_WILDCARD,
    PAT_CONST,
    PAT_OP,       /* op / pred / class, with args (nargs -1: any) */
    PAT_ALT,      /* args[0] | args[1] */
    PAT_ATTRS,    /* args[0] with attribute values */
    PAT_TYPE,     /* args[0] with dtype and shape */
    PAT_OPTIONAL, /* op(args[0], ...) or args[0] */
    PAT_DOM       /* dom(args[0] parent, args[1] path, args[2] child) */
} pat_kind;

/* The fusion classes of @class patterns, by name. */
#define PAT_CLASS_ANY 100

struct kiln_pattern {
    pat_kind kind;
    int id; /* index in its set: where a match binds it */
    kiln_pattern_set *set;
    const char *op;         /* PAT_OP by name, PAT_OPTIONAL's op */
    kiln_pattern_pred pred; /* PAT_OP by predicate */
    void *user;
    int op_class; /* PAT_OP by class: the largest op_pattern, or -1 */
    int nargs;    /* PAT_OP: -1 any */
    kiln_pattern **args;
    int nattr; /* PAT_ATTRS */
    const gattr *attrs;
    kiln_dtype dtype; /* PAT_TYPE: KILN_DTYPE_COUNT any */
    int ndim;         /* PAT_TYPE: -1 any */
    int64_t dims[KILN_MAX_NDIM];
    const char *name; /* %name, or NULL */
};

struct kiln_pattern_set {
    arena *a;
    struct kiln_graph *scratch; /* holds parsed attribute values */
    int n, cap;
    kiln_pattern **all;
};

/* A new pattern of kind k in s (zeroed but for kind, id, set, op_class -1,
 * ndim -1, dtype any), or NULL. */
KILN_HIDDEN kiln_pattern *pattern_new(kiln_pattern_set *s, pat_kind k);
/* The op_pattern class named by "elemwise", ..., "opaque"; -1 if none. */
KILN_HIDDEN int pattern_class_of(const char *name);
KILN_HIDDEN const char *pattern_class_name(int cls);

#endif
