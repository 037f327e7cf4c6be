/* kiln_tune.c: `kiln tune` (tvmc tune): measure other values of the default
 * schedules' knobs for a model's kernels on this machine, and write the
 * measurements as tuning records for `kiln compile --tuning-records`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/schedule.h"
#include "kiln/tune.h"
#include "kiln_compile.h"
#include "kiln_run.h"

static void tune_usage(FILE *f) {
    fprintf(f,
            "usage: kiln tune MODEL.onnx -o records.json [--target T] [--input-shapes S]\n"
            "                 [--trials N] [--early-stopping N] [--tuner xgb|ga|random|grid]\n"
            "                 [--tuning-records old.json] [--timeout S] [--tasks LIST] [--jobs N]\n"
            "                 [--repeat N] [--seed N] [--log-plot curve.svg] [build options]\n\n"
            "Tune a model's kernels on this machine: each distinct kernel (a task) is built\n"
            "with other values of its schedule's knobs (register tiles, loop orders), each\n"
            "candidate measured in a separate process against the default kernel's outputs,\n"
            "and every measurement appended to the records file as one JSON line. Build with\n"
            "the results: kiln compile MODEL.onnx --tuning-records records.json. MODEL may\n"
            "be an ONNX or a TFLite (.tflite) model.\n\n"
            "  -o, --output FILE      the records file (appended; a run resumes from it)\n"
            "  --trials N             measurements per task (default 64)\n"
            "  --early-stopping N     end a task after N measurements without a better one\n"
            "  --tuner T              xgb (default: simulated annealing on an XGBoost cost model,\n"
            "                         or a nearest-neighbour model where kiln was built without\n"
            "                         XGBoost), ga, random or grid\n"
            "  --tuning-records FILE  start from these records too (same workload and target)\n"
            "  --timeout S            seconds one measurement may take (default 10)\n"
            "  --tasks LIST           tune only these tasks: numbers as listed, or op names\n"
            "  --jobs N               candidates compiled at once (default: the cores)\n"
            "  --repeat N             timed rounds per measurement (default 3)\n"
            "  --seed N               the search's random seed (default 1)\n"
            "  --log-plot FILE        write the best GFLOP/s so far per task as an SVG picture\n"
            "  build options          as kiln compile: --target, --input-shapes, --opt-level,\n"
            "                         --disabled-pass, --cross-compiler, --winograd, --plugin,\n"
            "                         --no-cache, --tflite-kernels\n"
            "  --help                 print this message\n");
}

static void on_log(void *user, int level, const char *line) {
    int tty = *(int *)user;
    if (level == 0 && tty)
        fprintf(stderr, "\r\033[K%s", line);
    else
        fprintf(stderr, "%s%s\n", tty ? "\r\033[K" : "", line);
    fflush(stderr);
}

int kiln_cmd_tune(int argc, char **argv) {
    const char *model = NULL, *shapes = NULL;
    kiln_build_options *o = kiln_build_options_new();
    kiln_tune_options *t = kiln_tune_options_new();
    kiln_graph *g = NULL;
    int rc = 2, used, tty = isatty(2), have_out = 0;
    static const char *const TUNE_KEYS[][2] = {{"-o", "output"},
                                               {"--output", "output"},
                                               {"--trials", "trials"},
                                               {"--early-stopping", "early-stopping"},
                                               {"--tuner", "tuner"},
                                               {"--tuning-records", "tuning-records"},
                                               {"--timeout", "timeout"},
                                               {"--tasks", "tasks"},
                                               {"--jobs", "jobs"},
                                               {"--repeat", "repeat"},
                                               {"--seed", "seed"},
                                               {"--log-plot", "log-plot"},
                                               {"--test-fault", "test-fault"}};
    if (!o || !t) {
        fprintf(stderr, "kiln tune: out of memory\n");
        rc = 1;
        goto done;
    }
    if (kiln_load_plugins("tune", argc, argv)) {
        rc = 1;
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *key = NULL;
        for (size_t k = 0; k < sizeof TUNE_KEYS / sizeof TUNE_KEYS[0] && !key; k++)
            if (!strcmp(a, TUNE_KEYS[k][0]))
                key = TUNE_KEYS[k][1];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            tune_usage(stdout);
            rc = 0;
            goto done;
        } else if (key) {
            if (i + 1 >= argc) {
                rc = kiln_bad_arg("tune", "%s needs a value", a);
                goto done;
            }
            if (kiln_tune_options_set(t, key, argv[++i]) != KILN_OK) {
                rc = kiln_bad_arg("tune", "%s", kiln_last_error());
                goto done;
            }
            have_out |= !strcmp(key, "output");
        } else if ((used = kiln_build_arg("tune", argc, argv, &i, o, &shapes, &rc)) != 0) {
            if (used < 0)
                goto done;
        } else if (a[0] == '-') {
            rc = kiln_bad_arg("tune", "unknown option '%s'", a);
            goto done;
        } else if (model) {
            rc = kiln_bad_arg("tune", "more than one model given ('%s')", a);
            goto done;
        } else {
            model = a;
        }
    }
    if (!model || !have_out) {
        rc = kiln_bad_arg("tune", "%s",
                          model ? "no records file given (-o records.json)" : "no model given");
        goto done;
    }
    rc = 1;
    kiln_tune_options_set_log(t, on_log, &tty);
    if (!(g = kiln_import_model(model, shapes)) || kiln_graph_tune(g, o, t) != KILN_OK) {
        fprintf(stderr, "%skiln tune: %s\n", tty ? "\r\033[K" : "", kiln_last_error());
        goto done;
    }
    rc = 0;
done:
    kiln_tune_options_free(t);
    kiln_build_options_free(o);
    kiln_graph_free(g);
    return rc;
}
