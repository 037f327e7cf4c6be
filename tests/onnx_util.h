/* onnx_util.h: importing ONNX models that must be refused, in tests. */
#ifndef KILN_ONNX_UTIL_H
#define KILN_ONNX_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frontend/onnx_load.h"
#include "kiln/onnx.h"

/* The model of one node (IR version 8, the default domain at opset ver)
 * with its graph's initializers, inputs and outputs, packed into a
 * malloc'd buffer of *len bytes. */
static inline uint8_t *ou_pack_model(int ver, Onnx__NodeProto *node, size_t ninit,
                                     Onnx__TensorProto **inits, size_t nin,
                                     Onnx__ValueInfoProto **ins, size_t nout,
                                     Onnx__ValueInfoProto **outs, size_t *len) {
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *ops[1] = {&opset};
    opset.domain = "";
    opset.has_version = 1;
    opset.version = ver;
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "g";
    g.n_node = 1;
    g.node = &node;
    g.n_initializer = ninit;
    g.initializer = inits;
    g.n_input = nin;
    g.input = ins;
    g.n_output = nout;
    g.output = outs;
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    mp.has_ir_version = 1;
    mp.ir_version = 8;
    mp.n_opset_import = 1;
    mp.opset_import = ops;
    mp.graph = &g;
    *len = protobuf_c_message_get_packed_size(&mp.base);
    uint8_t *buf = malloc(*len + 1);
    CHECK(buf != NULL);
    if (buf)
        protobuf_c_message_pack(&mp.base, buf);
    return buf;
}

/* The same written to `file` in the test's tmp folder; returns its path. */
static inline const char *ou_write_model(int ver, Onnx__NodeProto *node, size_t ninit,
                                         Onnx__TensorProto **inits, size_t nin,
                                         Onnx__ValueInfoProto **ins, size_t nout,
                                         Onnx__ValueInfoProto **outs, const char *file) {
    size_t len;
    uint8_t *buf = ou_pack_model(ver, node, ninit, inits, nin, ins, nout, outs, &len);
    if (!buf)
        return NULL;
    const char *path = test_tmp_path(file);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite(buf, 1, len, f);
        fclose(f);
    }
    free(buf);
    return path;
}

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
