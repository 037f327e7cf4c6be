/* tune.c: kiln_graph_tune, the tuning loop (docs/tuning.md).
 *
 * The graph goes through a driver session: passes and grouping as a build
 * would do them. Each distinct fused-group key is a task; lowering its
 * kernel once with a recording knob set gives the task's space (the knobs
 * its schedule asks for, with their legal values) and its FLOPs. Tasks
 * with more than one point are tuned, the heaviest (FLOPs times the
 * kernels that share the key) first. Per task: the default kernel is
 * built and measured, and its outputs kept as the reference; then batches
 * of candidates are proposed by the search, lowered (a config whose values
 * the schedule refuses together is recorded as invalid, never built),
 * built in parallel, and measured one at a time, each measurement one
 * record line, flushed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../tir/cost.h"
#include "kiln/tune.h"
#include "tune_internal.h"

#define KERNEL_NAME "tune_kernel"

/* ---- the run's state ---------------------------------------------------------------- */

#define MAX_VISITED 100000

typedef struct {
    driver_session *S; /* the session it came from */
    int primary;       /* from the default build's session, not a layout alternative's */
    int needed;        /* a layout choice needs its time */
    int idx;           /* the driver task */
    const driver_task *dt;
    te_space space;
    double npoints;             /* the space's size */
    double flops;               /* one call's */
    double weight;              /* flops times the kernels sharing it */
    int tune;                   /* selected and more than one point */
    double def_cost, best_cost; /* seconds; 0: not measured */
    te_config best;
    int measured; /* measurements counted against the trials, resumed ones too */
    uint64_t *visited;
    int nvisited;
    float *feat, *score; /* the model's training points: knob values, score */
    float *tfeat;        /* and their loop-nest features (NaN: unknown) */
    int npts;
    tune_curve curve;
} task_t;

/* A layout knob (the Winograd tile of a convolution) and, per value, the
 * key of the task that the convolution's group is with that value. */
#define MAX_SESSIONS 8
typedef struct {
    const driver_layout_task *L;
    int nalt;
    int64_t v[MAX_SESSIONS];
    unsigned char key[MAX_SESSIONS][32];
} layout_t;

typedef struct {
    const kiln_tune_options *o;
    driver_session *S[MAX_SESSIONS]; /* S[0] the default build's; the others each force
                                        one layout knob value */
    driver_layout_knobs lk[MAX_SESSIONS];
    int nS;
    layout_t *layouts;
    int nlayouts;
    const char *target;
    driver_records *R;
    FILE *out;
    tune_builder builder;
    tune_runner runner;
    uint64_t rng;
    double t0;
    int ntasks;
    task_t *tasks;
} run_t;

static void say(const run_t *r, int level, const char *fmt, ...) KILN_PRINTF(3, 4);
static void say(const run_t *r, int level, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (r->o->log)
        r->o->log(r->o->log_user, level, line);
    else
        fprintf(stderr, "%s%s", line, level ? "\n" : "\r");
}

static uint64_t rnd(run_t *r) {
    return kiln_xorshift64(&r->rng);
}

static double rnd01(run_t *r) {
    return (double)(rnd(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- configs as index vectors -------------------------------------------------------- */

static void to_config(const te_space *sp, const int *ix, te_config *c) {
    c->n = sp->n;
    for (int k = 0; k < sp->n; k++) {
        snprintf(c->name[k], TE_KNOB_NAME, "%s", sp->k[k].name);
        c->v[k] = sp->k[k].cand[ix[k]];
    }
}

/* The index vector of c in sp; 0 if c has a value sp does not offer. */
static int to_index(const te_space *sp, const te_config *c, int *ix) {
    for (int k = 0; k < sp->n; k++) {
        int64_t v = te_config_get(c, sp->k[k].name, sp->k[k].def);
        ix[k] = -1;
        for (int j = 0; j < sp->k[k].n; j++)
            if (sp->k[k].cand[j] == v)
                ix[k] = j;
        if (ix[k] < 0)
            return 0;
    }
    return 1;
}

static uint64_t code_of(const te_space *sp, const int *ix) {
    uint64_t h = 1469598103934665603ull;
    for (int k = 0; k < sp->n; k++)
        h = (h ^ (uint64_t)(ix[k] + 1)) * 1099511628211ull;
    return h;
}

static int visited(const task_t *t, uint64_t code) {
    for (int i = 0; i < t->nvisited; i++)
        if (t->visited[i] == code)
            return 1;
    return 0;
}

static void visit(task_t *t, uint64_t code) {
    if (t->nvisited < MAX_VISITED && !visited(t, code))
        t->visited[t->nvisited++] = code;
}

static void features(const te_space *sp, const int *ix, float *f) {
    for (int k = 0; k < sp->n; k++)
        f[k] = (float)sp->k[k].cand[ix[k]];
}

/* A training point: score is the speed relative to the default (0 for a
 * failed candidate). */
static void add_point(task_t *t, const int *ix, double score, const float *tf) {
    int nf = t->space.n ? t->space.n : 1;
    float *nfeat = realloc(t->feat, sizeof(float) * (size_t)(t->npts + 1) * (size_t)nf);
    if (nfeat)
        t->feat = nfeat;
    float *ntf =
        nfeat ? realloc(t->tfeat, sizeof(float) * (size_t)(t->npts + 1) * TUNE_TIR_FEATS) : NULL;
    if (ntf)
        t->tfeat = ntf;
    float *nscore = ntf ? realloc(t->score, sizeof(float) * (size_t)(t->npts + 1)) : NULL;
    if (!nscore)
        return;
    t->score = nscore;
    features(&t->space, ix, t->feat + (size_t)t->npts * (size_t)nf);
    for (int i = 0; i < TUNE_TIR_FEATS; i++)
        t->tfeat[(size_t)t->npts * TUNE_TIR_FEATS + (size_t)i] = tf ? tf[i] : NAN;
    t->score[t->npts++] = (float)score;
}

/* A point's knob values and loop-nest features, one row of the full model */
static void full_row(const task_t *t, const float *knobs, const float *tf, float *row) {
    memcpy(row, knobs, sizeof(float) * (size_t)t->space.n);
    memcpy(row + t->space.n, tf, sizeof(float) * TUNE_TIR_FEATS);
}

/* The loop-nest features of t under index vector ix (a lowering, no C);
 * 0 if the config does not lower or the schedule refuses it. */
static int candidate_features(task_t *t, const int *ix, float *tf) {
    te_config cfg;
    to_config(&t->space, ix, &cfg);
    kiln_ctx *ctx = kiln_ctx_new();
    te_knobs kn = {NULL, &cfg, 0};
    tir_func *f = ctx ? driver_session_lower(t->S, t->idx, ctx, &kn, KERNEL_NAME) : NULL;
    int ok = f && !kn.invalid;
    if (ok)
        tune_tir_features(f, driver_session_target(t->S), tf);
    kiln_ctx_free(ctx);
    kiln_clear_error();
    return ok;
}

/* ---- search -------------------------------------------------------------------------- */

static void random_point(run_t *r, const te_space *sp, int *ix) {
    for (int k = 0; k < sp->n; k++)
        ix[k] = (int)(rnd(r) % (uint64_t)sp->k[k].n);
}

/* Up to `want` unvisited points into out (rows of TE_KNOB_MAX); returns
 * how many. Grid walks the space in order; random samples it; ga breeds
 * the best measured points; xgb anneals on the cost model's predictions,
 * a point in ten (and every point until the model has data) random. */
typedef struct {
    int ix[TE_KNOB_MAX];
    float pred;
    uint64_t code;
} cand_t;

static int taken(const cand_t *c, int n, uint64_t code) {
    for (int i = 0; i < n; i++)
        if (c[i].code == code)
            return 1;
    return 0;
}

static int propose_random(run_t *r, task_t *t, int want, cand_t *out, int have) {
    for (int tries = 0; have < want && tries < 200 * want; tries++) {
        cand_t c;
        random_point(r, &t->space, c.ix);
        c.code = code_of(&t->space, c.ix);
        if (!visited(t, c.code) && !taken(out, have, c.code))
            out[have++] = c;
    }
    return have;
}

static int propose_grid(task_t *t, int want, cand_t *out) {
    int have = 0, ix[TE_KNOB_MAX] = {0};
    for (double step = 0; have < want && step < t->npoints && step < 1e7; step++) {
        uint64_t code = code_of(&t->space, ix);
        if (!visited(t, code) && !taken(out, have, code)) {
            memcpy(out[have].ix, ix, sizeof ix);
            out[have++].code = code;
        }
        for (int k = t->space.n - 1; k >= 0; k--) { /* the next point, last knob fastest */
            if (++ix[k] < t->space.k[k].n)
                break;
            ix[k] = 0;
        }
    }
    return have;
}

/* The measured points, best first (index into t->feat rows). */
static int by_score_desc(const void *a, const void *b) {
    const float *x = a, *y = b;
    return (x[0] < y[0]) - (x[0] > y[0]);
}

static int best_points(const task_t *t, int n, int *rows) {
    float(*pairs)[2] = malloc(sizeof *pairs * (size_t)(t->npts ? t->npts : 1));
    if (!pairs)
        return 0;
    for (int i = 0; i < t->npts; i++) {
        pairs[i][0] = t->score[i];
        pairs[i][1] = (float)i;
    }
    qsort(pairs, (size_t)t->npts, sizeof *pairs, by_score_desc);
    int k = 0;
    for (; k < n && k < t->npts && pairs[k][0] > 0; k++)
        rows[k] = (int)pairs[k][1];
    free(pairs);
    return k;
}

static void row_index(const task_t *t, int row, int *ix) {
    te_config c;
    c.n = t->space.n;
    for (int k = 0; k < t->space.n; k++) {
        snprintf(c.name[k], TE_KNOB_NAME, "%s", t->space.k[k].name);
        c.v[k] = (int64_t)t->feat[(size_t)row * (size_t)t->space.n + (size_t)k];
    }
    if (!to_index(&t->space, &c, ix))
        memset(ix, 0, sizeof(int) * (size_t)t->space.n);
}

static int propose_ga(run_t *r, task_t *t, int want, cand_t *out) {
    int rows[16], np = best_points(t, 16, rows), have = 0;
    for (int tries = 0; np >= 2 && have < want && tries < 200 * want; tries++) {
        int a[TE_KNOB_MAX], b[TE_KNOB_MAX];
        row_index(t, rows[rnd(r) % (uint64_t)np], a);
        row_index(t, rows[rnd(r) % (uint64_t)np], b);
        cand_t c;
        for (int k = 0; k < t->space.n; k++) {
            c.ix[k] = rnd(r) & 1 ? a[k] : b[k];
            if (rnd01(r) < 0.15) /* mutation */
                c.ix[k] = (int)(rnd(r) % (uint64_t)t->space.k[k].n);
        }
        c.code = code_of(&t->space, c.ix);
        if (!visited(t, c.code) && !taken(out, have, c.code))
            out[have++] = c;
    }
    return propose_random(r, t, want, out, have);
}

static void neighbour(run_t *r, const te_space *sp, const int *from, int *to) {
    memcpy(to, from, sizeof(int) * (size_t)sp->n);
    int k = (int)(rnd(r) % (uint64_t)sp->n);
    if (sp->k[k].n < 2)
        return;
    if (rnd(r) & 1) { /* an adjacent value, or any */
        int d = rnd(r) & 1 ? 1 : -1;
        to[k] = from[k] + d < 0 || from[k] + d >= sp->k[k].n ? from[k] - d : from[k] + d;
    } else {
        to[k] = (int)(rnd(r) % (uint64_t)sp->k[k].n);
    }
}

static int by_pred_desc(const void *a, const void *b) {
    const cand_t *x = a, *y = b;
    return (x->pred < y->pred) - (x->pred > y->pred);
}

#define SA_CHAINS 64
#define SA_STEPS 60
#define SA_KEEP 256

/* The full model (knob values and loop-nest features) re-ranks the best of
 * the annealing's points: each is lowered (milliseconds, no C compiler) for
 * its features; one the schedule refuses drops out here, unbuilt. */
static int rerank(task_t *t, tune_model *full, cand_t *keep, int nkeep, int want) {
    int n = nkeep < 3 * want ? nkeep : 3 * want, rows = 0, m = 0;
    int nf = t->space.n + TUNE_TIR_FEATS;
    size_t cap = (size_t)(t->npts > n ? t->npts : n) + 1;
    float *x = malloc(sizeof(float) * cap * (size_t)nf), *y = malloc(sizeof(float) * cap);
    float *pred = malloc(sizeof(float) * cap);
    for (int i = 0; x && y && pred && i < t->npts; i++) /* the points with known features */
        if (!isnan(t->tfeat[(size_t)i * TUNE_TIR_FEATS])) {
            full_row(t, t->feat + (size_t)i * (size_t)t->space.n,
                     t->tfeat + (size_t)i * TUNE_TIR_FEATS, x + (size_t)rows * (size_t)nf);
            y[rows++] = t->score[i];
        }
    if (rows < 8) { /* too few to learn from: the knob model's order */
        free(x);
        free(y);
        free(pred);
        return nkeep;
    }
    tune_model_fit(full, rows, x, y);
    for (int i = 0; i < n; i++) {
        float tf[TUNE_TIR_FEATS], kf[TE_KNOB_MAX];
        if (!candidate_features(t, keep[i].ix, tf))
            continue; /* refused by the schedule: never built */
        features(&t->space, keep[i].ix, kf);
        full_row(t, kf, tf, x + (size_t)m * (size_t)nf);
        keep[m++] = keep[i];
    }
    tune_model_predict(full, m, x, pred);
    for (int i = 0; i < m; i++)
        keep[i].pred = pred[i];
    qsort(keep, (size_t)m, sizeof keep[0], by_pred_desc);
    free(x);
    free(y);
    free(pred);
    return m;
}

static int propose_sa(run_t *r, task_t *t, tune_model *m, tune_model *full, int want, cand_t *out) {
    if (t->npts < 8 || !m)
        return propose_random(r, t, want, out, 0);
    tune_model_fit(m, t->npts, t->feat, t->score);
    int nf = t->space.n;
    cand_t chains[SA_CHAINS], keep[SA_KEEP];
    int nkeep = 0, rows[SA_CHAINS], nb = best_points(t, SA_CHAINS / 2, rows);
    float f[TE_KNOB_MAX];
    for (int c = 0; c < SA_CHAINS; c++) {
        if (c < nb)
            row_index(t, rows[c], chains[c].ix);
        else
            random_point(r, &t->space, chains[c].ix);
        features(&t->space, chains[c].ix, f);
        tune_model_predict(m, 1, f, &chains[c].pred);
    }
    for (int step = 0; step < SA_STEPS; step++) {
        double temp = 0.2 * (1.0 - (double)step / SA_STEPS) + 1e-3;
        cand_t next[SA_CHAINS];
        float feats[SA_CHAINS * TE_KNOB_MAX], preds[SA_CHAINS];
        for (int c = 0; c < SA_CHAINS; c++) {
            neighbour(r, &t->space, chains[c].ix, next[c].ix);
            features(&t->space, next[c].ix, feats + c * nf);
        }
        tune_model_predict(m, SA_CHAINS, feats, preds);
        for (int c = 0; c < SA_CHAINS; c++) {
            next[c].pred = preds[c];
            next[c].code = code_of(&t->space, next[c].ix);
            if (preds[c] >= chains[c].pred || rnd01(r) < exp((preds[c] - chains[c].pred) / temp))
                chains[c] = next[c];
            /* the best unvisited points seen, kept sorted */
            if (!visited(t, next[c].code) && !taken(keep, nkeep, next[c].code)) {
                if (nkeep < SA_KEEP)
                    keep[nkeep++] = next[c];
                else if (next[c].pred > keep[SA_KEEP - 1].pred)
                    keep[SA_KEEP - 1] = next[c];
                qsort(keep, (size_t)nkeep, sizeof keep[0], by_pred_desc);
            }
        }
    }
    if (full)
        nkeep = rerank(t, full, keep, nkeep, want);
    int have = 0;
    for (int i = 0; i < nkeep && have < want; i++)
        if (rnd01(r) >= 0.1) /* epsilon-greedy: a tenth of the batch random */
            out[have++] = keep[i];
    return propose_random(r, t, want, out, have);
}

/* ---- building and measuring one batch ---------------------------------------------- */

/* The task's kernel under cfg, rendered to C (malloc'd) in ctx; NULL with
 * *err REC_INVALID_CONFIG or REC_COMPILE_ERROR and msg. */
static char *lower_candidate(task_t *t, const te_config *cfg, int *err, char *msg, size_t cap,
                             float *tf) {
    kiln_ctx *ctx = kiln_ctx_new();
    te_knobs kn = {NULL, cfg, 0};
    char *src = NULL;
    tir_func *f = ctx ? driver_session_lower(t->S, t->idx, ctx, &kn, KERNEL_NAME) : NULL;
    if (!f) {
        *err = REC_COMPILE_ERROR;
        snprintf(msg, cap, "lowering: %s", kiln_last_error());
    } else if (kn.invalid) {
        *err = REC_INVALID_CONFIG;
        snprintf(msg, cap, "the schedule refuses these values together");
    } else if (!(src = codegen_render_c(1, f))) {
        *err = REC_COMPILE_ERROR;
        snprintf(msg, cap, "rendering C: %s", kiln_last_error());
    }
    if (f && !kn.invalid)
        tune_tir_features(f, driver_session_target(t->S), tf);
    kiln_ctx_free(ctx);
    return src;
}

/* rec as a line of the output, flushed, and into the known records */
static void append_record(run_t *r, const driver_record *rec, const char *ops, const char *shape,
                          const double *costs, int ncosts, double build_s) {
    kstr line;
    kstr_init(&line);
    driver_record_write(&line, rec, ops, shape, costs, ncosts, build_s, (double)time(NULL));
    if (r->out) {
        fputs(line.buf, r->out);
        fflush(r->out);
    }
    kstr_free(&line);
    driver_records_add(r->R, rec);
}

static void write_record(run_t *r, const task_t *t, const te_config *cfg, const tune_result *res,
                         double build_s) {
    driver_record rec;
    memset(&rec, 0, sizeof rec);
    rec.target = r->target;
    memcpy(rec.key, t->dt->key, 32);
    rec.cfg = *cfg;
    rec.error = res->error;
    rec.cost = res->error == REC_OK ? driver_cost_median(res->costs, res->ncosts) : -1;
    append_record(r, &rec, t->dt->ops, t->dt->shape, res->costs,
                  res->error == REC_OK ? res->ncosts : 0, build_s);
}

static double result_cost(const tune_result *res) {
    return driver_cost_median(res->costs, res->ncosts);
}

static double gflops(const task_t *t, double cost) {
    return cost > 0 ? t->flops / cost * 1e-9 : 0;
}

/* Free n candidates' sources, shared objects and build folders. */
static void free_built(int n, char **src, char **so, char **dir) {
    for (int i = 0; i < n; i++) {
        free(src[i]);
        free(so[i]);
        if (dir[i])
            driver_remove_dir(dir[i]);
        free(dir[i]);
    }
}

/* Build and measure n candidates of t (index vectors); returns the
 * measurements counted against the trials. */
static int measure_batch(run_t *r, task_t *t, const tir_param *params, int nargs, cand_t *c,
                         int n) {
    char *src[64] = {0}, *so[64] = {0}, *dir[64] = {0}, msgs[64][256];
    const char *names[64];
    te_config cfg[64];
    float tf[64][TUNE_TIR_FEATS];
    int err[64];
    double tb = kiln_now_s();
    for (int i = 0; i < n; i++) {
        to_config(&t->space, c[i].ix, &cfg[i]);
        visit(t, c[i].code);
        err[i] = REC_OK;
        names[i] = KERNEL_NAME;
        for (int k = 0; k < TUNE_TIR_FEATS; k++)
            tf[i][k] = NAN;
        src[i] = lower_candidate(t, &cfg[i], &err[i], msgs[i], sizeof msgs[i], tf[i]);
    }
    r->builder.build(&r->builder, n, src, names, so, dir, msgs);
    double build_s = (kiln_now_s() - tb) / (n ? n : 1);
    int counted = 0;
    for (int i = 0; i < n; i++) {
        tune_result res;
        memset(&res, 0, sizeof res);
        if (err[i] != REC_OK || !so[i]) { /* refused, not lowered, or not compiled */
            res.error = err[i] != REC_OK ? err[i] : REC_COMPILE_ERROR;
            snprintf(res.msg, sizeof res.msg, "%.255s", msgs[i]);
        } else {
            tune_kernel k = {so[i], KERNEL_NAME, nargs, t->dt->nout, params, t->dt->consts};
            r->runner.run(&r->runner, &k, &res);
        }
        write_record(r, t, &cfg[i], &res, build_s);
        if (res.error == REC_INVALID_CONFIG)
            continue; /* never built: not a trial */
        counted++;
        t->measured++;
        double cost = result_cost(&res);
        add_point(t, c[i].ix, res.error == REC_OK && cost > 0 ? t->def_cost / cost : 0, tf[i]);
        if (res.error == REC_OK && cost > 0 && cost < t->best_cost) {
            t->best_cost = cost;
            t->best = cfg[i];
        }
        if (res.error != REC_OK && res.error != REC_WRONG_ANSWER)
            say(r, 1, "  candidate failed (error %d): %s", res.error, res.msg);
        else if (res.error == REC_WRONG_ANSWER)
            say(r, 1, "  candidate rejected, wrong outputs: %s", res.msg);
        double *ng = realloc(t->curve.gflops, sizeof(double) * (size_t)(t->curve.n + 1));
        if (ng) {
            t->curve.gflops = ng;
            ng[t->curve.n++] = gflops(t, t->best_cost);
        }
    }
    free_built(n, src, so, dir);
    return counted;
}

/* ---- confirming the best ------------------------------------------------------------------ */

#define CONFIRM_TOP 3    /* candidates measured again in one pass */
#define CONFIRM_ROUNDS 2 /* times each, in turn with the default */
#define CONFIRM_PASSES 4 /* passes at most */

/* The search keeps the least of dozens of measurements on a noisy machine,
 * so its best errs low: on the 2-core VM a default measured in a slow
 * spell made a task look 1.7x better tuned than it ran in the model. So
 * the configs that beat the default once are measured again, in turn with
 * the default, each measurement a record line, until the records' verdict
 * (driver_records_best: per config, the median of all its lines) rests on
 * configs measured 1 + CONFIRM_ROUNDS times: a pass takes the CONFIRM_TOP
 * cheapest configs measured fewer times whose cost is below the default's,
 * builds them again and measures them CONFIRM_ROUNDS rounds; passes go on
 * while there are such configs (a confirmed best regresses to its mean, and
 * the next-cheapest single measurement may then lead), CONFIRM_PASSES at
 * most. A build from the records takes the same verdict. These
 * measurements count against no trials. Returns the configs measured. */
static int confirm_pass(run_t *r, task_t *t, const te_config *def, const tune_kernel *defk) {
    te_config top[CONFIRM_TOP];
    double topc[CONFIRM_TOP];
    int ntop = 0;
    double dc = driver_records_config_cost(r->R, t->dt->key, def, NULL);
    for (int i = 0; i < r->R->n; i++) {
        const driver_record *rec = &r->R->r[i];
        if (rec->error != REC_OK || memcmp(rec->key, t->dt->key, 32) ||
            driver_config_equal(&rec->cfg, def))
            continue;
        int dup = 0, lines = 0;
        for (int j = 0; j < ntop && !dup; j++)
            dup = driver_config_equal(&top[j], &rec->cfg);
        double c = dup ? -1 : driver_records_config_cost(r->R, t->dt->key, &rec->cfg, &lines);
        if (c <= 0 || lines > CONFIRM_ROUNDS || (dc > 0 && c >= dc) ||
            (ntop == CONFIRM_TOP && c >= topc[ntop - 1]))
            continue;
        int at = ntop < CONFIRM_TOP ? ntop++ : CONFIRM_TOP - 1;
        while (at > 0 && topc[at - 1] > c) { /* insertion: cheapest first */
            top[at] = top[at - 1];
            topc[at] = topc[at - 1];
            at--;
        }
        top[at] = rec->cfg;
        topc[at] = c;
    }
    if (ntop == 0)
        return 0;
    char *src[CONFIRM_TOP] = {0}, *so[CONFIRM_TOP] = {0}, *dir[CONFIRM_TOP] = {0},
         msgs[CONFIRM_TOP][256];
    const char *names[CONFIRM_TOP];
    int err[CONFIRM_TOP];
    for (int i = 0; i < ntop; i++) {
        float tf[TUNE_TIR_FEATS];
        names[i] = KERNEL_NAME;
        err[i] = REC_OK;
        src[i] = lower_candidate(t, &top[i], &err[i], msgs[i], sizeof msgs[i], tf);
    }
    r->builder.build(&r->builder, ntop, src, names, so, dir, msgs);
    for (int q = 0; q < CONFIRM_ROUNDS; q++) {
        tune_result res;
        r->runner.run(&r->runner, defk, &res);
        write_record(r, t, def, &res, 0);
        for (int i = 0; i < ntop; i++) {
            if (so[i]) {
                tune_kernel k = *defk;
                k.so = so[i];
                r->runner.run(&r->runner, &k, &res);
            } else { /* built once, not now: not to be trusted */
                memset(&res, 0, sizeof res);
                res.error = err[i] != REC_OK ? err[i] : REC_COMPILE_ERROR;
            }
            write_record(r, t, &top[i], &res, 0);
        }
    }
    free_built(ntop, src, so, dir);
    return ntop;
}

static void confirm_best(run_t *r, task_t *t, const te_config *def, const tune_kernel *defk) {
    for (int pass = 0; pass < CONFIRM_PASSES && confirm_pass(r, t, def, defk); pass++) {
    }
    double dc = driver_records_config_cost(r->R, t->dt->key, def, NULL), bc = 0;
    const driver_record *best = driver_records_best(r->R, t->dt->key, &bc);
    if (dc > 0)
        t->def_cost = dc;
    if (best && bc > 0) {
        t->best = best->cfg;
        t->best_cost = bc;
    } else { /* the default failed again: nothing is trusted */
        t->best = *def;
        t->best_cost = t->def_cost;
    }
}

/* ---- one task ---------------------------------------------------------------------------- */

static kiln_status tune_task(run_t *r, task_t *t, int number, int total, tune_model *m,
                             tune_model *full) {
    const kiln_tune_options *o = r->o;
    kiln_ctx *ctx = kiln_ctx_new();
    te_config def;
    def.n = 0;
    int ix[TE_KNOB_MAX] = {0};
    to_config(&t->space, ix, &def); /* every knob's first candidate is its default */
    te_knobs kn = {NULL, &def, 0};
    tir_func *f = ctx ? driver_session_lower(t->S, t->idx, ctx, &kn, KERNEL_NAME) : NULL;
    char *src = f ? codegen_render_c(1, f) : NULL, *so = NULL, *dir = NULL, msg[256] = "";
    const char *name = KERNEL_NAME;
    kiln_status st = KILN_OK;
    if (!src) {
        say(r, 1, "[Task %d/%d] skipped: the default kernel does not lower: %s", number, total,
            kiln_last_error());
        kiln_ctx_free(ctx);
        return KILN_OK;
    }
    r->builder.build(&r->builder, 1, &src, &name, &so, &dir, (char(*)[256])msg);
    tune_result res;
    memset(&res, 0, sizeof res);
    tune_kernel k = {so, KERNEL_NAME, f->nparams, t->dt->nout, f->params, t->dt->consts};
    if (!so || r->runner.begin_task(&r->runner, &k, &res) != KILN_OK) {
        say(r, 1, "[Task %d/%d] skipped: the default kernel %s: %s", number, total,
            so ? "fails" : "does not build", so ? kiln_last_error() : msg);
        goto done;
    }
    /* the default measured twice, the faster kept: the first measurement
       of a run came out 1.5x slow on the VM (ResNet-50's first task: 724
       us, then 475), which made every candidate look better than it is */
    tune_result again;
    r->runner.run(&r->runner, &k, &again);
    if (again.error == REC_OK && result_cost(&again) < result_cost(&res))
        res = again;
    t->def_cost = t->best_cost = result_cost(&res);
    t->best = def;
    if (!driver_records_has(r->R, t->dt->key, &def))
        write_record(r, t, &def, &res, 0);
    t->measured++;
    float dtf[TUNE_TIR_FEATS];
    tune_tir_features(f, driver_session_target(t->S), dtf);
    add_point(t, ix, 1.0, dtf);
    visit(t, code_of(&t->space, ix));
    /* resume: what the records hold for this task counts, and is known */
    for (int i = 0; i < r->R->n; i++) {
        const driver_record *rec = &r->R->r[i];
        int rx[TE_KNOB_MAX];
        if (memcmp(rec->key, t->dt->key, 32) || !to_index(&t->space, &rec->cfg, rx) ||
            driver_config_equal(&rec->cfg, &def))
            continue;
        uint64_t code = code_of(&t->space, rx);
        if (visited(t, code))
            continue;
        visit(t, code);
        if (rec->error == REC_INVALID_CONFIG)
            continue;
        t->measured++;
        float rtf[TUNE_TIR_FEATS];
        int known = full && candidate_features(t, rx, rtf);
        add_point(t, rx, rec->error == REC_OK && rec->cost > 0 ? t->def_cost / rec->cost : 0,
                  known ? rtf : NULL);
        if (rec->error == REC_OK && rec->cost > 0 && rec->cost < t->best_cost) {
            t->best_cost = rec->cost;
            t->best = rec->cfg;
        }
    }
    int since_best = 0, batch = o->jobs * 4 > 64 ? 64 : o->jobs * 4, resumed = t->measured;
    double last_best = t->best_cost, tt = kiln_now_s();
    while (t->measured < o->trials && (double)t->nvisited < t->npoints) {
        cand_t c[64];
        int want = o->trials - t->measured < batch ? o->trials - t->measured : batch;
        int n = o->tuner == TUNER_GRID     ? propose_grid(t, want, c)
                : o->tuner == TUNER_RANDOM ? propose_random(r, t, want, c, 0)
                : o->tuner == TUNER_GA     ? propose_ga(r, t, want, c)
                                           : propose_sa(r, t, m, full, want, c);
        if (n == 0)
            break; /* the space is spent */
        int done = measure_batch(r, t, f->params, f->nparams, c, n);
        double cur = 0;
        for (int i = t->npts - done; i < t->npts; i++)
            cur = t->score[i] > cur ? t->score[i] : cur;
        say(r, 0, "[Task %2d/%2d] Current/Best: %7.1f/%7.1f GFLOPS | Progress: (%d/%d) | %.0f s",
            number, total, gflops(t, cur > 0 ? t->def_cost / cur : 0), gflops(t, t->best_cost),
            t->measured, o->trials, kiln_now_s() - tt);
        if (t->best_cost < last_best) {
            last_best = t->best_cost;
            since_best = 0;
        } else {
            since_best += done;
        }
        if (o->early && since_best >= o->early) {
            say(r, 1, "[Task %2d/%2d] early stop: %d measurements without a better one", number,
                total, since_best);
            break;
        }
    }
    if (t->measured > resumed && !driver_config_equal(&t->best, &def))
        confirm_best(r, t, &def, &k); /* a run that measured nothing new confirmed before */
    say(r, 1, "[Task %2d/%2d] %-44.44s default %8.1f us, best %8.1f us (%.2fx) | %d measured",
        number, total, t->dt->ops, t->def_cost * 1e6, t->best_cost * 1e6,
        t->best_cost > 0 ? t->def_cost / t->best_cost : 0, t->measured);
done:
    r->runner.end_task(&r->runner);
    free(src);
    free(so);
    if (dir)
        driver_remove_dir(dir);
    free(dir);
    kiln_ctx_free(ctx);
    return st;
}

/* ---- the run ------------------------------------------------------------------------------ */

/* 1 if task t (1-based number) is in the --tasks list (or there is none). */
static int selected(const char *list, int number, const driver_task *dt) {
    if (!list)
        return 1;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char item[128];
        snprintf(item, sizeof item, "%.*s", (int)(len < 127 ? len : 127), p);
        char *end;
        long v = strtol(item, &end, 10);
        if ((*item && !*end && v == number) || (!(*item && !*end) && strstr(dt->ops, item)))
            return 1;
        p = e ? e + 1 : p + len;
    }
    return 0;
}

static int by_weight_desc(const void *a, const void *b) {
    const task_t *x = a, *y = b;
    return (x->weight < y->weight) - (x->weight > y->weight);
}

static int find_task(const run_t *r, const unsigned char key[32]) {
    for (int i = 0; i < r->ntasks; i++)
        if (!memcmp(r->tasks[i].dt->key, key, 32))
            return i;
    return -1;
}

/* Each session's tasks (a key once, the first session's first), each
 * task's space and FLOPs from one recording lowering. */
static kiln_status make_tasks(run_t *r) {
    int cap = 0;
    for (int s = 0; s < r->nS; s++) {
        const driver_task *dts;
        cap += driver_session_tasks(r->S[s], &dts);
    }
    r->tasks = kiln_calloc((size_t)(cap ? cap : 1), sizeof(task_t));
    if (!r->tasks)
        return KILN_ERR_NOMEM;
    for (int s = 0; s < r->nS; s++) {
        const driver_task *dts;
        int n = driver_session_tasks(r->S[s], &dts);
        for (int i = 0; i < n; i++) {
            if (find_task(r, dts[i].key) >= 0)
                continue;
            task_t *t = &r->tasks[r->ntasks];
            kiln_ctx *ctx = kiln_ctx_new();
            te_knobs kn = {&t->space, NULL, 0};
            tir_func *f = ctx ? driver_session_lower(r->S[s], i, ctx, &kn, KERNEL_NAME) : NULL;
            if (!f) {
                kiln_ctx_free(ctx);
                return KILN_ERR_INVALID; /* a build would fail the same way */
            }
            tir_count fl;
            tir_func_flops(f, &fl);
            t->S = r->S[s];
            t->primary = s == 0;
            t->idx = i;
            t->dt = &dts[i];
            t->flops = fl.known && !fl.expr[0] ? (double)fl.value : 0;
            t->weight = t->flops * dts[i].count;
            t->npoints = 1;
            for (int k = 0; k < t->space.n; k++)
                t->npoints *= t->space.k[k].n;
            /* a kernel with symbolic sizes cannot be measured alone */
            t->tune = t->npoints > 1 && f->nvars == 0;
            t->needed = f->nvars == 0; /* measurable, if a layout choice asks */
            kiln_ctx_free(ctx);
            r->ntasks++;
        }
    }
    qsort(r->tasks, (size_t)r->ntasks, sizeof(task_t), by_weight_desc);
    return KILN_OK;
}

/* The session forcing knob `name` to v, or 0 (the default session) */
static int session_forcing(const run_t *r, const char *name, int64_t v) {
    for (int s = 1; s < r->nS; s++)
        if (r->lk[s].force == v && !strcmp(r->lk[s].force_name, name))
            return s;
    return 0;
}

/* The layout knobs recorded by the default session, and the sessions that
 * force each other value: a session per (knob, value) pair, at most
 * MAX_SESSIONS - 1. */
static kiln_status open_alternatives(run_t *r, kiln_graph *g, const kiln_build_options *build) {
    const driver_layout_knobs *lk0 = &r->lk[0];
    for (int i = 0; i < lk0->ntasks; i++) {
        const te_knob *kn = &lk0->tasks[i].knob;
        for (int j = 1; j < kn->n; j++) {
            if (session_forcing(r, kn->name, kn->cand[j]) || r->nS == MAX_SESSIONS)
                continue;
            driver_layout_knobs_init(&r->lk[r->nS], DRIVER_LK_FORCE, NULL, kn->name, kn->cand[j]);
            if (!(r->S[r->nS] = driver_session_open(g, build, &r->lk[r->nS])))
                return KILN_ERR_INVALID;
            r->nS++;
        }
    }
    return KILN_OK;
}

/* Each layout knob's alternatives: the task of its call's group in the
 * session of each value (marked needed: its time decides). */
static kiln_status link_layouts(run_t *r) {
    const driver_layout_knobs *lk0 = &r->lk[0];
    r->layouts = kiln_calloc((size_t)(lk0->ntasks ? lk0->ntasks : 1), sizeof(layout_t));
    if (!r->layouts)
        return KILN_ERR_NOMEM;
    for (int i = 0; i < lk0->ntasks; i++) {
        const driver_layout_task *L = &lk0->tasks[i];
        layout_t *lt = &r->layouts[r->nlayouts];
        lt->L = L;
        for (int j = 0; j < L->knob.n; j++) {
            int s = j > 0 ? session_forcing(r, L->knob.name, L->knob.cand[j]) : 0;
            if (j > 0 && !s)
                continue; /* no session for it */
            int dt = driver_session_task_of(r->S[s], L->call);
            const driver_task *dts;
            driver_session_tasks(r->S[s], &dts);
            int ti = dt >= 0 ? find_task(r, dts[dt].key) : -1;
            if (ti < 0)
                continue; /* its group has no key or lost the call's name */
            r->tasks[ti].needed |= 2;
            lt->v[lt->nalt] = L->knob.cand[j];
            memcpy(lt->key[lt->nalt++], dts[dt].key, 32);
        }
        if (lt->nalt > 1)
            r->nlayouts++;
    }
    return KILN_OK;
}

/* Per layout knob, a record per value with the best time of its group, so
 * that builds take the fastest (driver_records_best); and a line each.
 * Without the default value's time (a --tasks subset left its group out)
 * nothing is recorded: the default stays, whatever the others measured. */
static void decide_layouts(run_t *r) {
    for (int i = 0; i < r->nlayouts; i++) {
        const layout_t *lt = &r->layouts[i];
        char line[512];
        int len = snprintf(line, sizeof line, "layout %s %s of %.60s:", lt->L->knob.name, lt->L->op,
                           lt->L->call);
        double best = 0;
        int64_t bv = lt->L->knob.def;
        int have_default = 0;
        for (int a = 0; a < lt->nalt; a++) {
            int ti = lt->v[a] == lt->L->knob.def ? find_task(r, lt->key[a]) : -1;
            have_default |= ti >= 0 && r->tasks[ti].best_cost > 0;
        }
        for (int a = 0; a < lt->nalt; a++) {
            int ti = find_task(r, lt->key[a]);
            double cost = ti >= 0 ? r->tasks[ti].best_cost : 0;
            if (len > 0 && len < (int)sizeof line && cost > 0)
                len += snprintf(line + len, sizeof line - (size_t)len, " %lld%s %.1f us",
                                (long long)lt->v[a], a ? "" : " (default)", cost * 1e6);
            else if (len > 0 && len < (int)sizeof line)
                len += snprintf(line + len, sizeof line - (size_t)len, " %lld%s not measured",
                                (long long)lt->v[a], a ? "" : " (default)");
            if (cost <= 0 || !have_default)
                continue;
            if (best == 0 || cost < best) {
                best = cost;
                bv = lt->v[a];
            }
            driver_record rec;
            memset(&rec, 0, sizeof rec);
            rec.target = r->target;
            memcpy(rec.key, lt->L->key, 32);
            rec.cfg.n = 1;
            snprintf(rec.cfg.name[0], TE_KNOB_NAME, "%s", lt->L->knob.name);
            rec.cfg.v[0] = lt->v[a];
            rec.cost = cost;
            if (driver_records_has(r->R, rec.key, &rec.cfg))
                continue;
            char ops[256];
            snprintf(ops, sizeof ops, "layout %s %.160s", lt->L->op, lt->L->call);
            append_record(r, &rec, ops, "", &cost, 1, 0);
        }
        say(r, 1, "%s -> %lld", line, (long long)bv);
    }
}

/* The table per measured task, and the estimated time of the default
 * build's measured kernels: default, and tuned with the layout choices. */
static void summary(run_t *r, int ntuned) {
    double def = 0, best = 0, total_flops = 0;
    for (int i = 0; i < r->ntasks; i++)
        total_flops += r->tasks[i].primary ? r->tasks[i].weight : 0;
    say(r, 1, "%s", "");
    say(r, 1, "%-4s %-44s %6s %6s %10s %10s %7s", "task", "ops", "kernels", "flops%", "default us",
        "best us", "gain");
    for (int i = 0, num = 0; i < r->ntasks; i++) {
        const task_t *t = &r->tasks[i];
        if (!t->tune)
            continue;
        num++;
        if (t->def_cost <= 0)
            continue;
        if (t->primary) {
            def += t->def_cost * t->dt->count;
            best += t->best_cost * t->dt->count;
        }
        say(r, 1, "%-4d %-44.44s %6d %5.1f%% %10.1f %10.1f %6.2fx%s", num, t->dt->ops, t->dt->count,
            total_flops > 0 ? 100 * t->weight / total_flops : 0, t->def_cost * 1e6,
            t->best_cost * 1e6, t->def_cost / t->best_cost, t->primary ? "" : " (alternative)");
    }
    for (int i = 0; i < r->nlayouts; i++) { /* a faster alternative replaces the default's */
        const layout_t *lt = &r->layouts[i];
        int t0 = find_task(r, lt->key[0]);
        double c0 = t0 >= 0 ? r->tasks[t0].best_cost : 0, cmin = c0;
        for (int a = 1; a < lt->nalt; a++) {
            int ta = find_task(r, lt->key[a]);
            double c = ta >= 0 ? r->tasks[ta].best_cost : 0;
            if (c > 0 && c < cmin)
                cmin = c;
        }
        if (c0 > 0)
            best -= (c0 - cmin) * lt->L->count;
    }
    say(r, 1,
        "estimated time of the default build's measured kernels: default %.3f ms, tuned %.3f ms "
        "(%.2fx); %d tasks in %.0f s",
        def * 1e3, best * 1e3, best > 0 ? def / best : 0, ntuned, kiln_now_s() - r->t0);
}

kiln_status kiln_graph_tune(kiln_graph *g, const kiln_build_options *build,
                            const kiln_tune_options *o) {
    if (!g || !o)
        return kiln_set_error(KILN_ERR_INVALID, "tune: NULL argument");
    if (!o->output)
        return kiln_set_error(KILN_ERR_INVALID, "tune: no output records file given");
    run_t r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.t0 = kiln_now_s();
    r.rng = o->seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    kiln_status st = KILN_OK;
    tune_model *model = NULL;
    driver_layout_knobs_init(&r.lk[0], DRIVER_LK_RECORD, NULL, NULL, 0);
    if (!(r.S[0] = driver_session_open(g, build, &r.lk[0]))) {
        driver_layout_knobs_free(&r.lk[0]);
        return KILN_ERR_INVALID;
    }
    r.nS = 1;
    const kiln_target *target = driver_session_target(r.S[0]);
    char rec_target[1200];
    driver_records_target(target, rec_target, sizeof rec_target);
    r.target = rec_target;
    /* what is known already: the output file (resume), then --tuning-records */
    if (!(r.R = driver_records_load(o->output, r.target, 1))) {
        st = KILN_ERR_IO;
        goto done;
    }
    int bad = r.R->bad, other = r.R->other_target;
    if (o->records) {
        driver_records *more = driver_records_load(o->records, r.target, 0);
        if (!more) {
            st = KILN_ERR_IO;
            goto done;
        }
        for (int i = 0; i < more->n && st == KILN_OK; i++)
            st = driver_records_add(r.R, &more->r[i]);
        bad += more->bad;
        other += more->other_target;
        driver_records_free(more);
        if (st != KILN_OK)
            goto done;
    }
    if (bad)
        say(&r, 1, "warning: %d malformed record lines skipped (the first in %s: line %d)", bad,
            r.R->bad ? o->output : o->records, r.R->first_bad);
    if (other)
        say(&r, 1, "note: %d records for other targets ignored (this one: %s)", other, r.target);
    if (r.R->n)
        say(&r, 1, "resuming from %d records for this target", r.R->n);
    if (!(r.out = fopen(o->output, "a"))) {
        st = kiln_set_error(KILN_ERR_IO, "%s: cannot append the tuning records", o->output);
        goto done;
    }
    if ((st = open_alternatives(&r, g, build)) != KILN_OK || (st = make_tasks(&r)) != KILN_OK ||
        (st = link_layouts(&r)) != KILN_OK)
        goto done;
    codegen_toolchain tc = codegen_target_toolchain(target);
    tc.cache = 0; /* thousands of one-off kernels: not for the kernel cache */
    tune_local_builder(&r.builder, &tc, o->jobs);
    tune_local_runner(&r.runner, o->timeout, o->repeat);
    /* weights cold, as in a model: copies past twice the last-level cache
       (Zen 5: a Winograd F(2x2) kernel of ResNet-50's layer 4, 17 MB of
       transformed weights, ran at 327 us with them hot and 505 us in the
       model; the direct convolution 532 and 586 us) */
    int64_t llc = kiln_target_cache_bytes(target, 3);
    r.runner.cold_bytes = 2 * (llc > 0 ? llc : (int64_t)32 << 20);
    r.runner.fault = o->fault;
    r.runner.fault_at = o->fault_at;
    /* the task list: tasks with knobs, and the groups a layout choice
       compares; numbered as listed, heaviest first */
    double total_flops = 0;
    int listed = 0, untuned = 0;
    for (int i = 0; i < r.ntasks; i++)
        total_flops += r.tasks[i].primary ? r.tasks[i].weight : 0;
    say(&r, 1, "kiln tune: %d tasks for %s (%d layout choices); heaviest first:", r.ntasks,
        r.target, r.nlayouts);
    for (int i = 0; i < r.ntasks; i++) {
        task_t *t = &r.tasks[i];
        int list = t->tune || (t->needed & 2 && t->needed & 1);
        if (!list) {
            untuned++;
            continue;
        }
        listed++;
        t->tune = selected(o->tasks, listed, t->dt);
        say(&r, 1, "  %3d %c %-52.52s %-18.18s x%-3d %5.1f%%%s %.0f points", listed,
            t->tune ? ' ' : '-', t->dt->ops, t->dt->shape, t->dt->count,
            total_flops > 0 ? 100 * t->weight / total_flops : 0,
            t->primary ? " of FLOPs," : " (layout alternative),", t->npoints);
        snprintf(t->curve.label, sizeof t->curve.label, "%d %.80s", listed, t->dt->ops);
    }
    say(&r, 1, "  (%d more tasks have no knobs: their default is the only schedule)", untuned);
    if (o->tuner == TUNER_XGB)
        say(&r, 1, "cost model: %s",
            tune_model_has_xgboost() ? "xgboost" : "nearest-neighbour (this build has no XGBoost)");
    else
        say(&r, 1, "search: %s, no cost model", tune_tuner_names[o->tuner]);
    int number = 0, total = 0;
    for (int i = 0; i < r.ntasks; i++)
        total += r.tasks[i].tune;
    for (int i = 0; i < r.ntasks && st == KILN_OK; i++) {
        task_t *t = &r.tasks[i];
        if (!t->tune)
            continue;
        t->visited = kiln_calloc(MAX_VISITED, sizeof(uint64_t));
        if (!t->visited) {
            st = KILN_ERR_NOMEM;
            break;
        }
        model = o->tuner == TUNER_XGB ? tune_model_new(t->space.n, 1) : NULL;
        /* the loop-nest features need trees: with XGBoost only */
        tune_model *full = o->tuner == TUNER_XGB && tune_model_has_xgboost()
                               ? tune_model_new(t->space.n + TUNE_TIR_FEATS, 1)
                               : NULL;
        st = tune_task(&r, t, ++number, total, model, full);
        tune_model_free(model);
        tune_model_free(full);
        model = NULL;
    }
    if (st == KILN_OK) {
        decide_layouts(&r);
        summary(&r, total);
        if (o->plot) {
            tune_curve *cv = kiln_calloc((size_t)(r.ntasks ? r.ntasks : 1), sizeof *cv);
            int nc = 0;
            for (int i = 0; cv && i < r.ntasks; i++)
                if (r.tasks[i].tune && r.tasks[i].curve.n)
                    cv[nc++] = r.tasks[i].curve;
            st = cv ? tune_write_svg(o->plot, nc, cv) : KILN_ERR_NOMEM;
            if (st == KILN_OK)
                say(&r, 1, "wrote %s", o->plot);
            free(cv);
        }
    }
done:
    if (r.out && fclose(r.out) && st == KILN_OK)
        st = kiln_set_error(KILN_ERR_IO, "%s: cannot write the tuning records", o->output);
    for (int i = 0; i < r.ntasks; i++) {
        free(r.tasks[i].visited);
        free(r.tasks[i].feat);
        free(r.tasks[i].score);
        free(r.tasks[i].tfeat);
        free(r.tasks[i].curve.gflops);
    }
    free(r.tasks);
    driver_records_free(r.R);
    for (int i = 0; i < r.nS; i++) {
        driver_session_close(r.S[i]);
        driver_layout_knobs_free(&r.lk[i]);
    }
    free(r.layouts);
    return st;
}
