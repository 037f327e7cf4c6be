/* onnx_util.h: importing ONNX models that must be refused, in tests. */
#ifndef KILN_ONNX_UTIL_H
#define KILN_ONNX_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kiln/onnx.h"

/* CHECK that importing the model at path fails with an error containing
 * each of the n parts (the file, the node, the message, ...); the error is
 * printed when one is missing. */
static inline void ou_expect_import_error(const char *path, int n, const char *const *parts) {
    kiln_graph *g = kiln_onnx_import(path, NULL);
    CHECK(g == NULL);
    kiln_graph_free(g);
    const char *err = kiln_last_error();
    for (int i = 0; i < n; i++)
        if (!strstr(err, parts[i])) {
            fprintf(stderr, "%s: %s\n", path, err);
            break;
        }
    for (int i = 0; i < n; i++)
        CHECK_CONTAINS(err, parts[i]);
    kiln_clear_error();
}

/* The same for tests/data/FOLDER/FILE.onnx (KILN_TEST_DATA), whose one
 * node is named FILE: the error names it and its "OP, opset N" (op) and
 * holds msg. */
static inline void ou_expect_data_error(const char *folder, const char *file, const char *op,
                                        const char *msg) {
    char path[1024], node[256];
    snprintf(path, sizeof path, "%s/%s/%s.onnx", getenv("KILN_TEST_DATA"), folder, file);
    snprintf(node, sizeof node, ": node '%s' (%s): ", file, op);
    const char *parts[2] = {node, msg};
    ou_expect_import_error(path, 2, parts);
}

/* The same for the Debian node test `test` (in KILN_ONNX_TESTDATA; nothing
 * is checked when it is unset) and one message. */
static inline void ou_expect_node_test_error(const char *test, const char *msg) {
    const char *dir = getenv("KILN_ONNX_TESTDATA");
    char path[1024];
    if (!dir)
        return;
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, test);
    ou_expect_import_error(path, 1, &msg);
}

#endif
