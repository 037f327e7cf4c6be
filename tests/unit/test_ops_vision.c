/* test_ops_vision.c: vision.non_max_suppression (ONNX NonMaxSuppression,
 * src/ops/vision.c) in a package, its count bound by nms_dims and
 * bind_dims as the importer builds it, with max_output, iou_threshold and
 * score_threshold graph inputs read when the package runs. Random boxes in
 * both box formats against a greedy reference written here, under the
 * default and the naive schedules, at several thresholds and limits; then
 * what the node tests miss: no boxes at all, max_output 0 (and below 0),
 * every score below the threshold, equal scores (kept by ascending box
 * index), a NaN score, and the relation's errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph_util.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "te_util.h"

/* ---- the reference ------------------------------------------------------------------- */

typedef struct {
    int64_t B, C, N;
    int center, has_thr;
} nms_shape;

/* corners (y1, x1, y2, x2) of box i, min first (center form as ONNX Runtime) */
static void corners(const nms_shape *s, const float *bx, float *c) {
    if (s->center) {
        float hw = bx[2] / 2, hh = bx[3] / 2;
        c[0] = bx[1] - hh;
        c[1] = bx[0] - hw;
        c[2] = bx[1] + hh;
        c[3] = bx[0] + hw;
    } else {
        c[0] = fminf(bx[0], bx[2]);
        c[1] = fminf(bx[1], bx[3]);
        c[2] = fmaxf(bx[0], bx[2]);
        c[3] = fmaxf(bx[1], bx[3]);
    }
}

static int suppresses(const nms_shape *s, const float *a, const float *b, float iou) {
    float p[4], q[4];
    corners(s, a, p);
    corners(s, b, q);
    float y1 = fmaxf(p[0], q[0]), x1 = fmaxf(p[1], q[1]);
    float y2 = fminf(p[2], q[2]), x2 = fminf(p[3], q[3]);
    if (x2 <= x1 || y2 <= y1)
        return 0;
    float inter = (x2 - x1) * (y2 - y1);
    float aa = (p[3] - p[1]) * (p[2] - p[0]), ab = (q[3] - q[1]) * (q[2] - q[0]);
    float uni = aa + ab - inter;
    if (inter <= 0 || aa <= 0 || ab <= 0 || uni <= 0)
        return 0;
    return inter / uni > iou;
}

/* The selected rows into out (3 per row); their count. */
static int64_t reference(const nms_shape *s, const float *boxes, const float *scores, int64_t maxo,
                         float iou, float thr, int64_t *out) {
    int64_t rows = 0;
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t c = 0; c < s->C; c++) {
            const float *sc = scores + (b * s->C + c) * s->N;
            int64_t idx[64], n = 0, kept[64], nk = 0;
            for (int64_t i = 0; i < s->N; i++)
                if (!s->has_thr || sc[i] > thr)
                    idx[n++] = i;
            for (int64_t i = 1; i < n; i++) /* stable: equal scores keep index order */
                for (int64_t j = i; j > 0; j--) {
                    float u = isnan(sc[idx[j - 1]]) ? -INFINITY : sc[idx[j - 1]];
                    float v = isnan(sc[idx[j]]) ? -INFINITY : sc[idx[j]];
                    if (!(v > u))
                        break;
                    int64_t t = idx[j];
                    idx[j] = idx[j - 1];
                    idx[j - 1] = t;
                }
            for (int64_t i = 0; i < n && nk < maxo; i++) {
                int ok = 1;
                for (int64_t k = 0; k < nk && ok; k++)
                    ok = !suppresses(s, boxes + (b * s->N + kept[k]) * 4,
                                     boxes + (b * s->N + idx[i]) * 4, iou);
                if (ok) {
                    kept[nk++] = idx[i];
                    out[rows * 3] = b;
                    out[rows * 3 + 1] = c;
                    out[rows++ * 3 + 2] = idx[i];
                }
            }
        }
    return rows;
}

/* ---- the package ------------------------------------------------------------------- */

/* nms over graph inputs boxes, scores, max_output [1], iou [1] and
 * score_threshold [1], compiled (default or naive schedule) and loaded. */
static kiln_model *make_nms(const nms_shape *s, int naive) {
    kiln_graph *g = kiln_graph_new();
    int64_t bd[3] = {s->B, s->N, 4}, sd[3] = {s->B, s->C, s->N}, one = 1;
    int in[6] = {kiln_graph_var(g, "boxes", KILN_FLOAT32, 3, bd, NULL),
                 kiln_graph_var(g, "scores", KILN_FLOAT32, 3, sd, NULL),
                 kiln_graph_var(g, "max_output", KILN_INT64, 1, &one, NULL),
                 kiln_graph_var(g, "iou", KILN_FLOAT32, 1, &one, NULL),
                 kiln_graph_var(g, "score_threshold", KILN_FLOAT32, 1, &one, NULL),
                 -1};
    char attrs[64];
    snprintf(attrs, sizeof attrs, "center_point_box=%d, has_score_threshold=%d", s->center,
             s->has_thr);
    int cnt = kiln_graph_call(g, "nms_dims", 5, in, attrs, "count");
    in[5] = kiln_graph_call(g, "bind_dims", 1, &cnt, "prefix=\"n\"", "bind");
    int y = kiln_graph_call(g, "vision.non_max_suppression", 6, in, attrs, "nms");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    return gu_compile_load(g, naive, naive ? "nms_naive.tar" : "nms.tar");
}

static kiln_ndarray *array_of(kiln_dtype dt, int nd, const int64_t *dims, const void *v) {
    kiln_ndarray *a = kiln_ndarray_empty(dt, nd, dims);
    memcpy(kiln_ndarray_data(a), v, (size_t)kiln_ndarray_numel(a) * kiln_dtype_size(dt));
    return a;
}

/* Run m on the values; the rows must be the reference's. Returns the count. */
static int64_t run_nms(kiln_model *m, const nms_shape *s, const float *boxes, const float *scores,
                       int64_t maxo, float iou, float thr) {
    int64_t bd[3] = {s->B, s->N, 4}, sd[3] = {s->B, s->C, s->N}, one = 1;
    kiln_ndarray *in[5] = {
        array_of(KILN_FLOAT32, 3, bd, boxes), array_of(KILN_FLOAT32, 3, sd, scores),
        array_of(KILN_INT64, 1, &one, &maxo), array_of(KILN_FLOAT32, 1, &one, &iou),
        array_of(KILN_FLOAT32, 1, &one, &thr)};
    kiln_ndarray *out = NULL;
    int64_t want[3 * 256], n = reference(s, boxes, scores, maxo, iou, thr, want);
    CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, &out, 0), KILN_OK);
    if (out) {
        CHECK_EQ_INT(kiln_ndarray_dim(out, 0), n);
        CHECK_EQ_INT(kiln_ndarray_dim(out, 1), 3);
        const int64_t *v = kiln_ndarray_data(out);
        int bad = 0;
        for (int64_t k = 0; k < n * 3 && kiln_ndarray_dim(out, 0) == n; k++)
            bad += v[k] != want[k];
        if (bad)
            fprintf(stderr, "nms: %d of %lld values differ (max %lld, iou %g, thr %g)\n", bad,
                    (long long)(n * 3), (long long)maxo, iou, thr);
        CHECK_EQ_INT(bad, 0);
    } else {
        fprintf(stderr, "run: %s\n", kiln_last_error());
    }
    kiln_ndarray_free(out);
    for (int i = 0; i < 5; i++)
        kiln_ndarray_free(in[i]);
    return n;
}

/* Random boxes (some flipped, some overlapping a lot) and scores in steps
 * of 1/8, so equal scores are common. */
static void random_inputs(const nms_shape *s, uint64_t *seed, float *boxes, float *scores) {
    for (int64_t i = 0; i < s->B * s->N; i++) {
        float y = (float)tu_uniform(seed) * 4, x = (float)tu_uniform(seed) * 4;
        float h = 0.5f + (float)tu_uniform(seed) * 2, w = 0.5f + (float)tu_uniform(seed) * 2;
        float *b = boxes + i * 4;
        if (s->center) {
            b[0] = x;
            b[1] = y;
            b[2] = w;
            b[3] = h;
        } else if (i % 3 == 1) { /* other corners first */
            b[0] = y + h;
            b[1] = x + w;
            b[2] = y;
            b[3] = x;
        } else {
            b[0] = y;
            b[1] = x;
            b[2] = y + h;
            b[3] = x + w;
        }
    }
    for (int64_t i = 0; i < s->B * s->C * s->N; i++)
        scores[i] = (float)(tu_rand(seed) % 9) / 8;
}

/* ---- the tests ------------------------------------------------------------------------ */

static void test_random(void) {
    for (int variant = 0; variant < 3; variant++) {
        nms_shape s = {2, 3, 9, variant == 1, variant != 2};
        kiln_model *m = make_nms(&s, variant == 2);
        if (!m)
            continue;
        uint64_t seed = 17 + (uint64_t)variant;
        float boxes[2 * 9 * 4], scores[2 * 3 * 9];
        static const float ious[] = {0.1f, 0.3f, 0.5f, 0.9f, 0};
        static const float thrs[] = {0.2f, 0.5f, -1, 0.8f, 0};
        static const int64_t maxos[] = {3, 9, 1, 100, 2};
        for (int r = 0; r < 5; r++) {
            random_inputs(&s, &seed, boxes, scores);
            run_nms(m, &s, boxes, scores, maxos[r], ious[r], thrs[r]);
        }
        kiln_model_free(m);
    }
}

static void test_edge_cases(void) {
    nms_shape s = {1, 2, 6, 0, 1};
    kiln_model *m = make_nms(&s, 0);
    if (!m)
        return;
    float boxes[6 * 4], scores[2 * 6];
    for (int i = 0; i < 6; i++) { /* disjoint unit boxes */
        float b[4] = {(float)i * 2, 0, (float)i * 2 + 1, 1};
        memcpy(boxes + i * 4, b, sizeof b);
    }
    for (int i = 0; i < 12; i++)
        scores[i] = 0.5f;
    /* equal scores: kept by ascending box index, up to the limit */
    CHECK_EQ_INT(run_nms(m, &s, boxes, scores, 4, 0.5f, 0.1f), 8);
    /* max_output 0, and below 0: nothing */
    CHECK_EQ_INT(run_nms(m, &s, boxes, scores, 0, 0.5f, 0.1f), 0);
    CHECK_EQ_INT(run_nms(m, &s, boxes, scores, -3, 0.5f, 0.1f), 0);
    /* every score below (or at) the threshold: nothing */
    CHECK_EQ_INT(run_nms(m, &s, boxes, scores, 10, 0.5f, 0.5f), 0);
    /* the threshold is a value of the run: now all pass */
    CHECK_EQ_INT(run_nms(m, &s, boxes, scores, 10, 0.5f, 0.25f), 12);
    /* identical boxes, equal scores: only the first index survives; an IoU
       threshold of 1 suppresses nothing */
    for (int i = 1; i < 6; i++)
        memcpy(boxes + i * 4, boxes, sizeof(float) * 4);
    CHECK_EQ_INT(run_nms(m, &s, boxes, scores, 10, 0.5f, 0), 2);
    CHECK_EQ_INT(run_nms(m, &s, boxes, scores, 10, 1, 0), 12);
    kiln_model_free(m);
    /* a NaN score (no threshold) sorts last */
    nms_shape t = {1, 1, 6, 0, 0};
    m = make_nms(&t, 0);
    if (!m)
        return;
    for (int i = 0; i < 6; i++) {
        float b[4] = {(float)i * 2, 0, (float)i * 2 + 1, 1};
        memcpy(boxes + i * 4, b, sizeof b);
        scores[i] = (float)i / 8;
    }
    scores[4] = NAN;
    CHECK_EQ_INT(run_nms(m, &t, boxes, scores, 10, 0.5f, 0), 6);
    kiln_model_free(m);
}

static void test_no_boxes(void) {
    for (int k = 0; k < 3; k++) { /* no box, no class, no batch */
        nms_shape s = {k == 2 ? 0 : 2, k == 1 ? 0 : 2, k == 0 ? 0 : 3, 0, 1};
        kiln_model *m = make_nms(&s, 0);
        if (!m)
            continue;
        float boxes[2 * 3 * 4] = {0}, scores[2 * 2 * 3] = {0};
        CHECK_EQ_INT(run_nms(m, &s, boxes, scores, 5, 0.5f, -1), 0);
        kiln_model_free(m);
    }
}

/* The relation's errors. ins: b boxes [2, 5, 4], B boxes [2, 5, 3], s
 * scores [2, 3, 5], S scores [2, 3, 4], m max_output int64 [1], M int32 [1],
 * f a threshold float32 [1], F float32 [2], d float64 [1], c a bind_dims
 * count, x int64 data [1]. */
static void relation(const char *ins, const char *attrs, const char *want) {
    kiln_graph *g = kiln_graph_new();
    int64_t d1[1] = {1}, d2[1] = {2};
    int64_t bd[3] = {2, 5, 4}, Bd[3] = {2, 5, 3}, sd[3] = {2, 3, 5}, Sd[3] = {2, 3, 4};
    int v[11] = {kiln_graph_var(g, "b", KILN_FLOAT32, 3, bd, NULL),
                 kiln_graph_var(g, "B", KILN_FLOAT32, 3, Bd, NULL),
                 kiln_graph_var(g, "s", KILN_FLOAT32, 3, sd, NULL),
                 kiln_graph_var(g, "S", KILN_FLOAT32, 3, Sd, NULL),
                 kiln_graph_var(g, "m", KILN_INT64, 1, d1, NULL),
                 kiln_graph_var(g, "M", KILN_INT32, 1, d1, NULL),
                 kiln_graph_var(g, "f", KILN_FLOAT32, 1, d1, NULL),
                 kiln_graph_var(g, "F", KILN_FLOAT32, 1, d2, NULL),
                 kiln_graph_var(g, "d", KILN_FLOAT64, 1, d1, NULL),
                 -1,
                 kiln_graph_var(g, "x", KILN_INT64, 1, d1, NULL)};
    v[9] = kiln_graph_call(g, "bind_dims", 1, &v[10], "prefix=\"p\"", NULL);
    int in[6], n = 0;
    for (const char *c = ins; *c; c++)
        in[n++] = v[strchr("bBsSmMfFdcx", *c) - "bBsSmMfFdcx"];
    const char *op = n == 5 ? "nms_dims" : "vision.non_max_suppression";
    gu_expect_infer(g, kiln_graph_call(g, op, n, in, attrs, "call"), op, want);
}

static void test_relation_errors(void) {
    relation("bsmff", NULL, NULL);
    relation("bsmffc", "center_point_box=1", NULL);
    relation("Bsmff", NULL, "do not match");
    relation("bSmff", NULL, "do not match");
    relation("bsMff", NULL, "one int64 value");
    relation("bsmFf", NULL, "iou_threshold must be one value");
    relation("bsmfd", NULL, "score_threshold must be one value of the boxes' dtype");
    relation("bsmff", "center_point_box=2", "must be 0 or 1");
    relation("bsmffx", NULL, "constant or a bind_dims vector");
    relation("mbsff", NULL, "3-D");
}

TEST_MAIN({"random", test_random}, {"edge_cases", test_edge_cases}, {"no_boxes", test_no_boxes},
          {"relation_errors", test_relation_errors})
