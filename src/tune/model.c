/* model.c: the tuner's cost models (tune_internal.h). Both rank candidate
 * configs by a predicted score (throughput relative to the task's default;
 * higher is better), trained on the task's measurements.
 *
 * XGBoost, through its C API, where the build found libxgboost
 * (KILN_HAVE_XGBOOST): gradient-boosted trees, retrained from scratch on
 * all points after each batch (a few hundred points: milliseconds). It
 * runs with one thread, because the tuner forks its measuring processes
 * and a forked copy of a thread pool is unsafe.
 *
 * Without it, the nearest-neighbour model: the mean score of the k closest
 * measured points, features scaled to their observed range. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune_internal.h"

#ifdef KILN_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

#define KNN_K 3

struct tune_model {
    int nfeat, xgb;
    int n;
    float *x, *y; /* the training points (nearest neighbour) */
    float *lo, *hi;
#ifdef KILN_HAVE_XGBOOST
    BoosterHandle booster;
#endif
};

int tune_model_has_xgboost(void) {
#ifdef KILN_HAVE_XGBOOST
    return 1;
#else
    return 0;
#endif
}

tune_model *tune_model_new(int nfeat, int want_xgb) {
    tune_model *m = kiln_calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->nfeat = nfeat > 0 ? nfeat : 1;
    m->xgb = want_xgb && tune_model_has_xgboost();
    m->lo = kiln_calloc((size_t)m->nfeat, sizeof(float));
    m->hi = kiln_calloc((size_t)m->nfeat, sizeof(float));
    if (!m->lo || !m->hi) {
        tune_model_free(m);
        return NULL;
    }
    return m;
}

static void forget(tune_model *m) {
    free(m->x);
    free(m->y);
    m->x = m->y = NULL;
    m->n = 0;
#ifdef KILN_HAVE_XGBOOST
    if (m->booster)
        XGBoosterFree(m->booster);
    m->booster = NULL;
#endif
}

void tune_model_free(tune_model *m) {
    if (!m)
        return;
    forget(m);
    free(m->lo);
    free(m->hi);
    free(m);
}

const char *tune_model_name(const tune_model *m) {
    return m->xgb ? "xgboost" : "nearest-neighbour";
}

#ifdef KILN_HAVE_XGBOOST
static int xgb_fit(tune_model *m, int n, const float *x, const float *y) {
    DMatrixHandle d = NULL;
    BoosterHandle b = NULL;
    int ok = XGDMatrixCreateFromMat(x, (bst_ulong)n, (bst_ulong)m->nfeat, NAN, &d) == 0 &&
             XGDMatrixSetFloatInfo(d, "label", y, (bst_ulong)n) == 0 &&
             XGBoosterCreate(&d, 1, &b) == 0;
    const char *params[][2] = {
        {"nthread", "1"},    {"max_depth", "6"},        {"eta", "0.3"},
        {"gamma", "0.0001"}, {"min_child_weight", "1"}, {"objective", "reg:squarederror"},
        {"verbosity", "0"}};
    for (size_t i = 0; ok && i < sizeof params / sizeof params[0]; i++)
        ok = XGBoosterSetParam(b, params[i][0], params[i][1]) == 0;
    for (int it = 0; ok && it < 40; it++)
        ok = XGBoosterUpdateOneIter(b, it, d) == 0;
    if (d)
        XGDMatrixFree(d);
    if (!ok) {
        if (b)
            XGBoosterFree(b);
        return 0;
    }
    m->booster = b;
    return 1;
}
#endif

void tune_model_fit(tune_model *m, int n, const float *x, const float *y) {
    forget(m);
    if (n < 1)
        return;
    size_t nx = (size_t)n * (size_t)m->nfeat;
    m->x = malloc(sizeof(float) * nx);
    m->y = malloc(sizeof(float) * (size_t)n);
    if (!m->x || !m->y) {
        forget(m);
        return;
    }
    memcpy(m->x, x, sizeof(float) * nx);
    memcpy(m->y, y, sizeof(float) * (size_t)n);
    m->n = n;
    for (int f = 0; f < m->nfeat; f++) {
        m->lo[f] = m->hi[f] = x[f];
        for (int i = 1; i < n; i++) {
            float v = x[(size_t)i * (size_t)m->nfeat + (size_t)f];
            m->lo[f] = v < m->lo[f] ? v : m->lo[f];
            m->hi[f] = v > m->hi[f] ? v : m->hi[f];
        }
    }
#ifdef KILN_HAVE_XGBOOST
    if (m->xgb && n >= 4)
        xgb_fit(m, n, x, y);
#endif
}

static float knn(const tune_model *m, const float *p) {
    int best[KNN_K];
    double bd[KNN_K];
    int k = 0;
    for (int i = 0; i < m->n; i++) {
        double d = 0;
        for (int f = 0; f < m->nfeat; f++) {
            double r = m->hi[f] > m->lo[f] ? m->hi[f] - m->lo[f] : 1;
            double t = (p[f] - m->x[(size_t)i * (size_t)m->nfeat + (size_t)f]) / r;
            d += t * t;
        }
        /* insert into the k closest, kept sorted */
        int at = k < KNN_K ? k++ : KNN_K;
        while (at > 0 && bd[at - 1] > d) {
            if (at < KNN_K) {
                bd[at] = bd[at - 1];
                best[at] = best[at - 1];
            }
            at--;
        }
        if (at < KNN_K) {
            bd[at] = d;
            best[at] = i;
        }
    }
    double s = 0, w = 0;
    for (int i = 0; i < k; i++) {
        double wi = 1.0 / (bd[i] + 1e-3);
        s += wi * m->y[best[i]];
        w += wi;
    }
    return w > 0 ? (float)(s / w) : 0.0f;
}

void tune_model_predict(tune_model *m, int n, const float *x, float *out) {
#ifdef KILN_HAVE_XGBOOST
    if (m->booster) {
        DMatrixHandle d = NULL;
        bst_ulong len = 0;
        const float *res = NULL;
        if (XGDMatrixCreateFromMat(x, (bst_ulong)n, (bst_ulong)m->nfeat, NAN, &d) == 0 &&
            XGBoosterPredict(m->booster, d, 0, 0, 0, &len, &res) == 0 && len == (bst_ulong)n) {
            memcpy(out, res, sizeof(float) * (size_t)n);
            XGDMatrixFree(d);
            return;
        }
        if (d)
            XGDMatrixFree(d);
    }
#endif
    for (int i = 0; i < n; i++)
        out[i] = m->n ? knn(m, x + (size_t)i * (size_t)m->nfeat) : 0.0f;
}
