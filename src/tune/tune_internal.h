/* tune_internal.h: what the tuner's files share (docs/tuning.md).
 *
 *   tune.c     the tuning loop: tasks, search, records, progress, summary;
 *   options.c  kiln_tune_options;
 *   measure.c  the builder and the runner behind their interfaces, and the
 *              local implementations: forked compiler jobs, and a forked
 *              process per measurement with a timeout;
 *   model.c    the cost models: XGBoost where the build found it, else a
 *              nearest-neighbour model;
 *   features.c what the models read of a candidate's lowered loop nest;
 *   plot.c     the best-so-far curves as an SVG picture.
 *
 * The tuner sits above the driver: it lowers kernels through a driver
 * session and compiles them with the code generator's toolchain. */
#ifndef KILN_TUNE_INTERNAL_H
#define KILN_TUNE_INTERNAL_H

#include "../driver/driver_internal.h"
#include "../driver/tune_records.h"
#include "kiln/tune.h"

/* ---- options (options.c) ----------------------------------------------------------- */

enum { TUNER_XGB, TUNER_GA, TUNER_RANDOM, TUNER_GRID };
/* the --tuner names, by the enum's values */
KILN_HIDDEN extern const char *const tune_tuner_names[4];

/* kiln_tune_options (options.c) */
struct kiln_tune_options {
    char *output, *records, *tasks, *plot;
    int trials, early, tuner, jobs, repeat, fault, fault_at;
    double timeout;
    uint64_t seed;
    kiln_tune_log_fn log;
    void *log_user;
};

/* ---- measuring ----------------------------------------------------------------- */

#define TUNE_MAX_COSTS 8

/* One kernel to measure: its shared object and function, and the shapes
 * of its arguments (inputs, then outputs). */
typedef struct {
    const char *so;   /* the built module, or NULL when building failed */
    const char *func; /* its function */
    int nargs, nout;  /* the last nout arguments are outputs */
    const tir_param *params;
    uint64_t consts; /* bit i: argument i is a weight (a constant of the model) */
} tune_kernel;

typedef struct {
    int error;                    /* REC_* */
    int ncosts;                   /* REC_OK: the time of each repeat, seconds a call */
    double costs[TUNE_MAX_COSTS]; /* the mean of `number` calls each */
    char msg[256];                /* with an error: what happened */
} tune_result;

/* The builder: C sources to shared objects, up to `jobs` at once. sos[i]
 * is set (malloc'd, in a folder dirs[i] the caller removes) or NULL with
 * msgs[i] (256 bytes) saying why; a NULL source is skipped and its msgs[i]
 * left as the caller wrote it. */
typedef struct tune_builder {
    void (*build)(struct tune_builder *b, int n, char *const *sources, const char *const *names,
                  char **sos, char **dirs, char (*msgs)[256]);
    codegen_toolchain tc;
    int jobs;
} tune_builder;

/* The runner: measures kernels one at a time. begin_task prepares the
 * reference outputs from the default kernel (its result too); run
 * measures a candidate against them. */
typedef struct tune_runner {
    kiln_status (*begin_task)(struct tune_runner *r, const tune_kernel *ref, tune_result *res);
    void (*run)(struct tune_runner *r, const tune_kernel *k, tune_result *res);
    void (*end_task)(struct tune_runner *r);
    double timeout_s; /* per measurement */
    int repeat;       /* timed repeats (at most TUNE_MAX_COSTS) */
    double min_repeat_ms;
    double warmup_ms;   /* calls before the timed rounds */
    int64_t cold_bytes; /* the weights rotate through copies of at least this many bytes
                           (twice the last-level cache), so that each call reads them from
                           memory as a model's kernels do; 0: one copy, always hot */
    int fault;          /* tests: the fault_at-th run (1-based) crashes (1) or hangs (2) */
    int fault_at;
    int runs; /* runs so far */
    void *state;
} tune_runner;

KILN_HIDDEN void tune_local_builder(tune_builder *b, const codegen_toolchain *tc, int jobs);
KILN_HIDDEN void tune_local_runner(tune_runner *r, double timeout_s, int repeat);

/* ---- cost models ------------------------------------------------------------------ */

typedef struct tune_model tune_model;
/* want_xgb: use XGBoost if this build has it. */
KILN_HIDDEN tune_model *tune_model_new(int nfeat, int want_xgb);
KILN_HIDDEN void tune_model_free(tune_model *m);
/* "xgboost" or "nearest-neighbour" */
KILN_HIDDEN const char *tune_model_name(const tune_model *m);
KILN_HIDDEN int tune_model_has_xgboost(void);
/* Train on n points (rows of nfeat features) with scores y (higher is
 * better), replacing what it knew. */
KILN_HIDDEN void tune_model_fit(tune_model *m, int n, const float *x, const float *y);
/* Predicted scores of n points. */
KILN_HIDDEN void tune_model_predict(tune_model *m, int n, const float *x, float *out);

/* ---- loop-nest features (features.c) ------------------------------------------------ */

#define TUNE_TIR_FEATS 16
/* The features of a lowered kernel for target's caches, for the cost model. */
KILN_HIDDEN void tune_tir_features(const tir_func *f, const kiln_target *target,
                                   float out[TUNE_TIR_FEATS]);

/* ---- the picture ------------------------------------------------------------------- */

typedef struct {
    char label[96];
    int n;
    double *gflops; /* best so far after each measurement */
} tune_curve;
KILN_HIDDEN kiln_status tune_write_svg(const char *path, int n, const tune_curve *curves);

#endif
