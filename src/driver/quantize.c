/* quantize.c: post-training quantization of an ONNX model into a QDQ ONNX
 * model (kiln_onnx_quantize, kiln/onnx.h; `kiln quantize`). The model is
 * compiled with its activations as extra outputs (src/frontend/
 * onnx_quantize.c picks them: the data inputs of Conv, MatMul and Gemm,
 * and of a CNN's residual Adds),
 * run on the calibration data, and each activation's range taken as its
 * minimum and maximum, or as percentiles of its values; the QDQ model then
 * quantizes those activations to uint8 over their ranges and the weights
 * to symmetric int8 per output channel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../frontend/onnx_import.h"
#include "../frontend/onnx_quantize.h"
#include "../runtime/runtime_internal.h"
#include "driver_internal.h"
#include "kiln/onnx.h"

#define HIST_BINS 2048

struct kiln_quantize_options {
    int percentile;  /* 0: min-max ranges */
    double pct;      /* the percentile kept, e.g. 99.999 */
    int per_channel; /* weights per output channel */
    int64_t max;     /* calibration samples used at most (0: all) */
    char *shapes;    /* input shapes, as kiln_onnx_import takes them */
    int64_t batch;   /* samples per run where the batch dim is symbolic */
};

/* The defaults (kiln/onnx.h). */
static void defaults_of(kiln_quantize_options *o) {
    memset(o, 0, sizeof *o);
    o->pct = 99.999;
    o->per_channel = 1;
    o->batch = 8;
}

kiln_quantize_options *kiln_quantize_options_new(void) {
    kiln_quantize_options *o = kiln_calloc(1, sizeof *o);
    if (o)
        defaults_of(o);
    return o;
}

void kiln_quantize_options_free(kiln_quantize_options *o) {
    if (o) {
        free(o->shapes);
        free(o);
    }
}

static int parse_num(const char *v, double lo, double hi, double *out) {
    char *end;
    double d = strtod(v, &end);
    if (!*v || *end || !(d >= lo && d <= hi))
        return 0;
    *out = d;
    return 1;
}

kiln_status kiln_quantize_options_set(kiln_quantize_options *o, const char *key,
                                      const char *value) {
    if (!o || !key || !value)
        return kiln_set_error(KILN_ERR_INVALID, "quantize option: NULL argument");
    double d;
    if (!strcmp(key, "calibration")) {
        if (strcmp(value, "minmax") && strcmp(value, "percentile"))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "quantize option calibration: '%s' is not minmax or percentile",
                                  value);
        o->percentile = !strcmp(value, "percentile");
    } else if (!strcmp(key, "percentile")) {
        if (!parse_num(value, 50, 100, &d))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "quantize option percentile: '%s' is not a number in [50, 100]",
                                  value);
        o->pct = d;
    } else if (!strcmp(key, "per-channel")) {
        if (strcmp(value, "0") && strcmp(value, "1"))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "quantize option per-channel: '%s' is not 0 or 1", value);
        o->per_channel = value[0] == '1';
    } else if (!strcmp(key, "max-samples") || !strcmp(key, "batch")) {
        if (!parse_num(value, 1, 1e9, &d) || d != floor(d))
            return kiln_set_error(KILN_ERR_INVALID,
                                  "quantize option %s: '%s' is not a whole number >= 1", key,
                                  value);
        *(!strcmp(key, "batch") ? &o->batch : &o->max) = (int64_t)d;
    } else if (!strcmp(key, "input-shapes")) {
        if (kiln_onnx_check_input_shapes(value) != KILN_OK)
            return KILN_ERR_INVALID;
        char *s = kiln_strdup(value);
        if (!s)
            return KILN_ERR_NOMEM;
        free(o->shapes);
        o->shapes = s;
    } else {
        return kiln_set_error(KILN_ERR_INVALID,
                              "unknown quantize option '%s' (calibration, percentile, "
                              "per-channel, max-samples, batch, input-shapes)",
                              key);
    }
    return KILN_OK;
}

/* ---- calibration ------------------------------------------------------------------ */

typedef struct {
    int n;
    int *out;   /* the executor's output of each activation */
    char *skip; /* 1: not float32 (an integer matmul operand), left alone */
    float *lo, *hi;
    int64_t *hist; /* n x HIST_BINS over [lo, hi] (the second pass) */
} stats;

/* Run the executor over the calibration samples in batches and call `pass`
 * (0: ranges, 1: histograms) on the outputs. */
static kiln_status run_batches(kiln_executor *e, const kiln_npz *calib, int64_t nsamples,
                               int64_t batch, stats *st, int pass) {
    int nin = kiln_executor_num_inputs(e);
    for (int64_t at = 0; at < nsamples; at += batch) {
        int64_t b = nsamples - at < batch ? nsamples - at : batch;
        for (int i = 0; i < nin; i++) {
            const kiln_ndarray *a = kiln_npz_get(calib, kiln_executor_input_name(e, i));
            int nd = kiln_ndarray_ndim(a);
            int64_t dims[KILN_MAX_NDIM], strides[KILN_MAX_NDIM];
            for (int d = 0; d < nd; d++) {
                dims[d] = kiln_ndarray_dim(a, d);
                strides[d] = kiln_ndarray_stride(a, d);
            }
            dims[0] = b;
            kiln_ndarray *v = kiln_ndarray_view(
                a, nd, dims, strides,
                kiln_ndarray_byte_offset(a) +
                    at * strides[0] * (int64_t)kiln_dtype_size(kiln_ndarray_dtype(a)));
            kiln_status s =
                v ? kiln_executor_set_input(e, kiln_executor_input_name(e, i), v) : KILN_ERR_NOMEM;
            kiln_ndarray_free(v);
            if (s != KILN_OK)
                return s;
        }
        kiln_status s = kiln_executor_run(e);
        if (s != KILN_OK)
            return s;
        for (int k = 0; k < st->n; k++) {
            const kiln_ndarray *o = kiln_executor_output(e, st->out[k]);
            if (!o || kiln_ndarray_dtype(o) != KILN_FLOAT32) {
                st->skip[k] = 1;
                continue;
            }
            const float *x = kiln_ndarray_data(o);
            int64_t cnt = kiln_ndarray_numel(o);
            float lo = st->lo[k], hi = st->hi[k];
            if (pass == 0) {
                for (int64_t j = 0; j < cnt; j++)
                    if (isfinite(x[j])) {
                        lo = fminf(lo, x[j]);
                        hi = fmaxf(hi, x[j]);
                    }
                st->lo[k] = lo;
                st->hi[k] = hi;
            } else if (hi > lo) {
                int64_t *h = st->hist + (size_t)k * HIST_BINS;
                double w = HIST_BINS / ((double)hi - lo);
                for (int64_t j = 0; j < cnt; j++) {
                    if (!isfinite(x[j]))
                        continue;
                    int64_t bin = (int64_t)((x[j] - (double)lo) * w);
                    h[bin < 0 ? 0 : bin >= HIST_BINS ? HIST_BINS - 1 : bin]++;
                }
            }
        }
    }
    return KILN_OK;
}

/* The range of histogram h over [lo, hi] that drops (100 - pct) / 2 % of
 * the values at each end. */
static void percentile_range(const int64_t *h, float *lo, float *hi, double pct) {
    int64_t total = 0;
    for (int b = 0; b < HIST_BINS; b++)
        total += h[b];
    if (!total)
        return;
    double cut = total * (100.0 - pct) / 200.0, width = ((double)*hi - *lo) / HIST_BINS;
    int64_t acc = 0;
    int b0 = 0, b1 = HIST_BINS - 1;
    while (b0 < HIST_BINS - 1 && acc + h[b0] <= cut)
        acc += h[b0++];
    acc = 0;
    while (b1 > b0 && acc + h[b1] <= cut)
        acc += h[b1--];
    float nlo = (float)(*lo + b0 * width), nhi = (float)(*lo + (b1 + 1) * width);
    *lo = nlo;
    *hi = nhi;
}

/* A fresh folder under $TMPDIR (malloc'd), or NULL with an error. */
static char *temp_dir(void) {
    const char *t = getenv("TMPDIR");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/kiln-quantize-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(buf)) {
        kiln_set_error(KILN_ERR_IO, "quantize: cannot make a folder in %s", t ? t : "/tmp");
        return NULL;
    }
    return kiln_strdup(buf);
}

/* The folder of path (malloc'd). */
static char *folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        return kiln_strdup(".");
    size_t n = (size_t)(slash - path); /* "/x": the root */
    char *d = kiln_malloc(n + 2);
    if (d)
        snprintf(d, n + 2, "%.*s", n ? (int)n : 1, n ? path : "/");
    return d;
}

/* Check the calibration data against the executor's inputs: every input
 * there, float or matching dtype, one sample count; *n gets it. */
static kiln_status check_calibration(const char *path, const kiln_executor *e,
                                     const kiln_npz *calib, int64_t *n) {
    *n = -1;
    for (int i = 0; i < kiln_executor_num_inputs(e); i++) {
        const char *name = kiln_executor_input_name(e, i);
        const kiln_ndarray *a = kiln_npz_get(calib, name);
        if (!a)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "%s: the calibration data has no array '%s' (one per model "
                                  "input, samples along dim 0)",
                                  path, name);
        if (kiln_ndarray_dtype(a) != kiln_executor_input_dtype(e, i) ||
            kiln_ndarray_ndim(a) != kiln_executor_input_ndim(e, i) || kiln_ndarray_ndim(a) < 1)
            return kiln_set_error(
                KILN_ERR_INVALID,
                "%s: calibration array '%s' is %s of rank %d; the input is %s "
                "of rank %d",
                path, name, kiln_dtype_name(kiln_ndarray_dtype(a)), kiln_ndarray_ndim(a),
                kiln_dtype_name(kiln_executor_input_dtype(e, i)), kiln_executor_input_ndim(e, i));
        int64_t c = kiln_ndarray_dim(a, 0);
        if (*n >= 0 && c != *n)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "%s: calibration arrays hold %lld and %lld samples", path,
                                  (long long)*n, (long long)c);
        *n = c;
    }
    if (*n < 1)
        return kiln_set_error(KILN_ERR_INVALID, "%s: the calibration data holds no sample", path);
    return KILN_OK;
}

kiln_status kiln_onnx_quantize(const char *model_path, const kiln_npz *calib, const char *out_path,
                               const kiln_quantize_options *opts, char **report) {
    if (!model_path || !calib || !out_path)
        return kiln_set_error(KILN_ERR_INVALID, "quantize: NULL argument");
    kiln_quantize_options defaults;
    defaults_of(&defaults);
    const kiln_quantize_options *o = opts ? opts : &defaults;
    if (report)
        *report = NULL;
    kiln_status st = KILN_OK;
    onnx_model *m = onnx_model_load(model_path), *mc = NULL;
    const char **names = NULL;
    uint8_t *bytes = NULL;
    char *dir = NULL, *tmp = NULL, *pkg = NULL;
    kiln_graph *g = NULL;
    kiln_executor *e = NULL;
    stats s;
    memset(&s, 0, sizeof s);
    size_t len = 0;
    if (!m)
        return KILN_ERR_IO;
    int64_t opset = onnx_model_opset(m, "");
    if (opset < 10) {
        st = kiln_set_error(KILN_ERR_UNSUPPORTED,
                            "%s: imports opset %lld; QuantizeLinear needs opset 10 or later",
                            model_path, (long long)opset);
        goto done;
    }
    if ((s.n = onnx_qdq_activations(m, &names)) < 0) {
        st = KILN_ERR_NOMEM;
        goto done;
    }
    if (s.n == 0) {
        st =
            kiln_set_error(KILN_ERR_INVALID, "%s: no Conv, MatMul or Gemm to quantize", model_path);
        goto done;
    }
    /* the model with the activations as outputs, compiled and loaded */
    if (!(bytes = onnx_pack_with_outputs(m, names, s.n, &len)) || !(dir = folder_of(model_path)) ||
        !(mc = onnx_model_parse(bytes, len, model_path, dir)) ||
        !(g = onnx_import_model(mc, model_path, o->shapes, 0)) || !(tmp = temp_dir()) ||
        !(pkg = kiln_malloc(strlen(tmp) + 16))) {
        st = kiln_last_error()[0] ? KILN_ERR_INVALID : KILN_ERR_NOMEM;
        goto done;
    }
    sprintf(pkg, "%s/calib.tar", tmp);
    if ((st = kiln_graph_compile(g, pkg, NULL)) != KILN_OK || !(e = kiln_executor_load(pkg))) {
        st = st ? st : KILN_ERR_INVALID;
        kiln_error_prefix("%s: compiling it for calibration", model_path);
        goto done;
    }
    int64_t nsamples, batch = o->batch;
    if ((st = check_calibration(model_path, e, calib, &nsamples)) != KILN_OK)
        goto done;
    if (o->max && nsamples > o->max)
        nsamples = o->max;
    /* a static batch dim runs that many samples at once */
    if (kiln_executor_input_dim(e, 0, 0) > 0)
        batch = kiln_executor_input_dim(e, 0, 0);
    if (nsamples % batch) {
        st = kiln_set_error(KILN_ERR_INVALID,
                            "%s: %lld calibration samples do not fill batches of %lld (the "
                            "model's batch dim)",
                            model_path, (long long)nsamples, (long long)batch);
        goto done;
    }
    s.out = kiln_calloc((size_t)s.n, sizeof *s.out);
    s.lo = kiln_calloc((size_t)s.n, sizeof *s.lo);
    s.hi = kiln_calloc((size_t)s.n, sizeof *s.hi);
    s.skip = kiln_calloc((size_t)s.n, 1);
    if (!s.out || !s.lo || !s.hi || !s.skip) {
        st = KILN_ERR_NOMEM;
        goto done;
    }
    for (int k = 0; k < s.n; k++) {
        s.out[k] = -1;
        for (int j = 0; j < kiln_executor_num_outputs(e) && s.out[k] < 0; j++)
            if (!strcmp(kiln_executor_output_name(e, j), names[k]))
                s.out[k] = j;
        if (s.out[k] < 0) {
            st = kiln_set_error(KILN_ERR_INVALID, "%s: activation '%s' did not become an output",
                                model_path, names[k]);
            goto done;
        }
        s.lo[k] = INFINITY;
        s.hi[k] = -INFINITY;
    }
    if ((st = run_batches(e, calib, nsamples, batch, &s, 0)) != KILN_OK)
        goto done;
    if (o->percentile) {
        if (!(s.hist = kiln_calloc((size_t)s.n * HIST_BINS, sizeof *s.hist))) {
            st = KILN_ERR_NOMEM;
            goto done;
        }
        if ((st = run_batches(e, calib, nsamples, batch, &s, 1)) != KILN_OK)
            goto done;
        for (int k = 0; k < s.n; k++)
            if (s.hi[k] > s.lo[k])
                percentile_range(s.hist + (size_t)k * HIST_BINS, &s.lo[k], &s.hi[k], o->pct);
    }
    /* the plan: float activations only, in order (compacted in place) */
    int kept = 0;
    for (int k = 0; k < s.n; k++) {
        if (s.skip[k])
            continue;
        if (!(s.lo[k] <= s.hi[k]))
            s.lo[k] = s.hi[k] = 0; /* never finite: quantized over [0, 0] */
        names[kept] = names[k];
        s.lo[kept] = s.lo[k];
        s.hi[kept++] = s.hi[k];
    }
    free(bytes);
    onnx_qdq_plan plan = {kept, names, s.lo, s.hi, o->per_channel};
    onnx_qdq_counts counts;
    if (!(bytes = onnx_pack_qdq(m, &plan, &counts, &len))) {
        st = KILN_ERR_NOMEM;
        goto done;
    }
    if ((st = kiln_write_file(out_path, bytes, len)) != KILN_OK)
        goto done;
    if (report) {
        char buf[512];
        snprintf(buf, sizeof buf,
                 "quantized %d activations (uint8, %s over %lld samples) and %d weights (int8, "
                 "%s)",
                 counts.activations, o->percentile ? "percentile" : "min-max", (long long)nsamples,
                 counts.weights,
                 counts.per_channel             ? "per channel"
                 : o->per_channel && opset < 13 ? "per tensor: opset < 13"
                                                : "per tensor");
        *report = kiln_strdup(buf);
    }
done:
    kiln_executor_free(e);
    kiln_graph_free(g);
    if (tmp)
        driver_remove_dir(tmp);
    free(tmp);
    free(pkg);
    free(dir);
    free(bytes);
    free((void *)names);
    free(s.out);
    free(s.lo);
    free(s.hi);
    free(s.hist);
    free(s.skip);
    onnx_model_free(mc);
    onnx_model_free(m);
    return st;
}
