/* kiln_quantize.c: `kiln quantize`: post-training quantization of a float
 * ONNX model into a QDQ ONNX model (kiln_onnx_quantize, kiln/onnx.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/onnx.h"
#include "kiln/runtime.h"
#include "kiln_compile.h"
#include "kiln_run.h"

static void quantize_usage(FILE *f) {
    fprintf(f, "usage: kiln quantize MODEL.onnx --calibration DATA.npz -o MODEL_INT8.onnx\n"
               "                     [--method minmax|percentile] [--percentile P] [--per-tensor]\n"
               "                     [--max-samples N] [--batch N] [--input-shapes S]\n\n"
               "Quantize a float model after training: run it on the calibration data, take\n"
               "each activation's range, and write a QDQ ONNX model (QuantizeLinear and\n"
               "DequantizeLinear around the inputs of Conv, MatMul and Gemm; uint8 activations,\n"
               "symmetric int8 weights per output channel). ONNX Runtime runs the result too.\n\n"
               "  --calibration FILE  an .npz with one array per model input (its name), the\n"
               "                      samples along dim 0\n"
               "  -o, --output FILE   the quantized model\n"
               "  --method M          minmax (default) or percentile (clip the outliers)\n"
               "  --percentile P      the share of values kept with --method percentile\n"
               "                      (default 99.999)\n"
               "  --per-tensor        one weight scale per tensor instead of per channel\n"
               "  --max-samples N     use at most N calibration samples\n"
               "  --batch N           samples per run where the batch dim is symbolic (8)\n"
               "  --input-shapes S    as kiln compile takes them\n"
               "  --help              print this message\n");
}

int kiln_cmd_quantize(int argc, char **argv) {
    const char *model = NULL, *calib = NULL, *out = NULL;
    kiln_quantize_options *o = kiln_quantize_options_new();
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        const char *key = !strcmp(a, "--method")         ? "calibration"
                          : !strcmp(a, "--percentile")   ? "percentile"
                          : !strcmp(a, "--max-samples")  ? "max-samples"
                          : !strcmp(a, "--batch")        ? "batch"
                          : !strcmp(a, "--input-shapes") ? "input-shapes"
                                                         : NULL;
        int takes =
            key || !strcmp(a, "--calibration") || !strcmp(a, "-o") || !strcmp(a, "--output");
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            quantize_usage(stdout);
            kiln_quantize_options_free(o);
            return 0;
        }
        if (takes && i + 1 >= argc) {
            rc = kiln_bad_arg("quantize", "%s needs a value", a);
        } else if (key) {
            if (kiln_quantize_options_set(o, key, argv[++i]) != KILN_OK) {
                rc = kiln_bad_arg("quantize", "%s", kiln_last_error());
            }
        } else if (!strcmp(a, "--calibration")) {
            calib = argv[++i];
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            out = argv[++i];
        } else if (!strcmp(a, "--per-tensor")) {
            kiln_quantize_options_set(o, "per-channel", "0");
        } else if (a[0] == '-' || model) {
            rc = kiln_bad_arg("quantize", "unexpected argument '%s'", a);
        } else {
            model = a;
        }
    }
    if (!rc && (!model || !calib || !out)) {
        rc = kiln_bad_arg("quantize", "%s",
                          "needs MODEL.onnx, --calibration DATA.npz and -o OUT.onnx");
    }
    kiln_npz *z = NULL;
    if (!rc && !(z = kiln_npz_load(calib))) {
        fprintf(stderr, "kiln quantize: %s\n", kiln_last_error());
        rc = 1;
    }
    char *report = NULL;
    if (!rc && kiln_onnx_quantize(model, z, out, o, &report) != KILN_OK) {
        fprintf(stderr, "kiln quantize: %s\n", kiln_last_error());
        rc = 1;
    }
    if (!rc)
        printf("kiln quantize: %s; wrote %s\n", report ? report : "done", out);
    kiln_free(report);
    kiln_npz_free(z);
    kiln_quantize_options_free(o);
    return rc;
}
