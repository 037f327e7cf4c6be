/* te_internal.h: tensors, stages and schedules as the lowering sees them.
 * Tensors and schedules live in the context's arena. */
#ifndef KILN_TE_INTERNAL_H
#define KILN_TE_INTERNAL_H

#include "../tir/tir.h"
#include "kiln/schedule.h"

/* The domain [min, min+extent) of an iteration axis (a VAR's ptr). */
typedef struct {
    tir_node min, extent;
} te_dom;

/* VAR aux of te-made variables: size vars are PLAIN; LOOP vars come from
 * split and fuse and have no domain. */
enum { TE_AXIS_PLAIN = 0, TE_AXIS_DATA = 1, TE_AXIS_REDUCE = 2, TE_AXIS_LOOP = 3 };

typedef enum { TE_PLACEHOLDER, TE_COMPUTE } te_kind;

struct kiln_tensor {
    kiln_ctx *ctx;
    te_kind kind;
    const char *name;
    kiln_dtype dtype;
    int ndim;
    tir_node *shape;
    tir_node *axis;       /* compute: one data-axis VAR per dim */
    tir_node body;        /* compute: element in terms of axis (a REDUCE at the top, or none);
                             NULL for a scan declared and not yet defined */
    int scan_axis;        /* a recurrent compute (kiln_scan_declare): the axis along which
                             its body reads its own earlier elements; -1 for others */
    const void *visiting; /* the schedule whose creation is visiting it, or NULL */
};

/* The domain of an axis var, or NULL for a plain var. */
KILN_HIDDEN const te_dom *te_axis_dom(tir_node var);
/* A fresh axis var over [min, min+extent). */
KILN_HIDDEN tir_node te_make_axis(kiln_ctx *ctx, const char *name, int kind, tir_node min,
                                  tir_node extent);
/* A compute tensor with a given body over fresh axes built by the caller. */
KILN_HIDDEN kiln_tensor *te_tensor_new(kiln_ctx *ctx, te_kind kind, const char *name, kiln_dtype dt,
                                       int ndim, const tir_node *shape);
/* 1 if t is a recurrent compute (a scan): its body reads itself. */
static inline int te_is_scan(const kiln_tensor *t) {
    return t && t->scan_axis >= 0;
}
/* Read of t at idx, without checks. */
KILN_HIDDEN tir_node te_read(kiln_tensor *t, int n, const tir_node *idx);

/* ---- schedules ---------------------------------------------------------- */
#define TE_MAX_ITERS 96
#define TE_MAX_RELS 64

typedef struct te_iter {
    tir_node var;
    int is_reduce;
    tir_for_kind kind;
    const char *tag; /* thread tag for bind */
} te_iter;

typedef enum { TE_REL_SPLIT, TE_REL_FUSE } te_rel_kind;

typedef struct {
    te_rel_kind kind;
    int parent, outer, inner; /* split: parent -> outer, inner (iter indices) */
    int fused;                /* fuse: outer, inner -> fused */
    int64_t factor;           /* split factor, or nparts if by_nparts */
    int by_nparts;
} te_rel;

typedef enum { TE_ATTACH_ROOT, TE_ATTACH_INLINE, TE_ATTACH_AT } te_attach;

struct kiln_stage {
    kiln_schedule *sch;
    kiln_tensor *tensor; /* what this stage computes */
    tir_node body;       /* its element, in terms of the root iters' vars */
    int niters;
    te_iter iters[TE_MAX_ITERS]; /* roots first: data axes, then reduce axes */
    int nroot, ndata;
    int nleaves;
    int leaves[TE_MAX_ITERS]; /* iter indices in loop order */
    int nrels;
    te_rel rels[TE_MAX_RELS];
    te_attach attach;
    kiln_stage *attach_stage;
    int attach_iter;
    const char *scope;
    int is_output;
    int touched; /* a primitive other than cache_read/write has been applied */
};

/* ---- tuning knobs (docs/tuning.md) ------------------------------------------
 * A default schedule's choices (a register tile, a loop order) are knobs:
 * the schedule asks for each by name with its analytic default and its
 * legal values (ops_knob). With no knobs attached the default is taken;
 * recording collects the knobs into a space; applying takes a config's
 * value where it has one. */
#define TE_KNOB_NAME 32
#define TE_KNOB_MAX 12   /* knobs per kernel */
#define TE_KNOB_CANDS 64 /* legal values per knob */
typedef struct {
    char name[TE_KNOB_NAME];
    int64_t def;
    int n;
    int64_t cand[TE_KNOB_CANDS];
} te_knob;
typedef struct {
    int n;
    te_knob k[TE_KNOB_MAX];
} te_space;
typedef struct {
    int n;
    char name[TE_KNOB_MAX][TE_KNOB_NAME];
    int64_t v[TE_KNOB_MAX];
} te_config;
typedef struct {
    te_space *space;      /* NULL, or where the knobs asked for are recorded */
    const te_config *cfg; /* NULL, or the values to apply */
    int invalid;          /* set by a schedule when the config's values do not go together */
} te_knobs;

/* The value of knob `name` (see above): cfg's value if it has the name and
 * that value is among cands (else def), recording the knob in space. */
KILN_HIDDEN int64_t te_knob_value(te_knobs *k, const char *name, int64_t def, int n,
                                  const int64_t *cands);
/* The value of `name` in c, or def. */
KILN_HIDDEN int64_t te_config_get(const te_config *c, const char *name, int64_t def);

struct kiln_schedule {
    kiln_ctx *ctx;
    int nstages, cap;
    kiln_stage **stages; /* producers before consumers */
    int noutputs;
    kiln_tensor **outputs;
    te_knobs *knobs; /* NULL: every knob at its default */
};

/* The stage computing t, or NULL (no error) for placeholders. */
KILN_HIDDEN kiln_stage *te_stage_of(kiln_schedule *s, const kiln_tensor *t);
/* Index of the iter whose var is v in st, or -1. */
KILN_HIDDEN int te_iter_index(const kiln_stage *st, tir_node v);
/* 1 if stage c's body reads tensor t. */
KILN_HIDDEN int te_reads(tir_node body, const kiln_tensor *t);

/* ---- lowering (lower.c, bound.c) ------------------------------------------ */
/* Lower to a flat loop-IR function; NULL with an error. Vector code is
 * split into pieces of at most vector_bytes, the target's width (0: kept
 * as scheduled). */
KILN_HIDDEN tir_func *te_lower(kiln_schedule *s, int nargs, kiln_tensor *const *args,
                               const char *name, int vector_bytes);

/* An inclusive integer interval; lo == NULL means unknown. */
typedef struct {
    tir_node lo, hi;
} te_ival;
/* Interval of integer expression e when each vars[i] ranges over ivals[i]
 * (other vars are fixed). Returns 0 if it cannot bound e. */
KILN_HIDDEN int te_eval_interval(tir_node e, int n, const tir_node *vars, const te_ival *ivals,
                                 te_ival *out);

#endif
