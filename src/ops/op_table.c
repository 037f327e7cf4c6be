/* op_table.c: the op registry, assembled from the families' tables (one
 * file per op family, each op's whole definition in its row: see ops.h).
 * Nothing here names an op; the registry starts from these rows, and
 * plugins add rows of the same kind (plugin.c). */
#include <pthread.h>

#include "ops.h"

typedef struct {
    const kiln_op_def *rows;
    const int *count;
} family;

static const family g_families[] = {
    {ops_elemwise_rows, &ops_elemwise_count},
    {ops_broadcast_rows, &ops_broadcast_count},
    {ops_conv_rows, &ops_conv_count},
    {ops_conv_nchwc_rows, &ops_conv_nchwc_count},
    {ops_conv_int8_rows, &ops_conv_int8_count},
    {ops_winograd_rows, &ops_winograd_count},
    {ops_nn_rows, &ops_nn_count},
    {ops_pool_rows, &ops_pool_count},
    {ops_norm_rows, &ops_norm_count},
    {ops_transform_rows, &ops_transform_count},
    {ops_layout_rows, &ops_layout_count},
    {ops_depth_space_rows, &ops_depth_space_count},
    {ops_index_rows, &ops_index_count},
    {ops_image_rows, &ops_image_count},
    {ops_text_rows, &ops_text_count},
    {ops_linalg_rows, &ops_linalg_count},
    {ops_reduce_rows, &ops_reduce_count},
    {ops_shape_rows, &ops_shape_count},
    {ops_signal_rows, &ops_signal_count},
    {ops_compress_rows, &ops_compress_count},
    {ops_vision_rows, &ops_vision_count},
    {ops_control_rows, &ops_control_count},
    {ops_qnn_rows, &ops_qnn_count},
};

#define NFAMILIES ((int)(sizeof g_families / sizeof g_families[0]))

int ops_builtin_count(void) {
    int n = 0;
    for (int f = 0; f < NFAMILIES; f++)
        n += *g_families[f].count;
    return n;
}

const kiln_op_def *ops_builtin(int i) {
    for (int f = 0; f < NFAMILIES && i >= 0; f++) {
        if (i < *g_families[f].count)
            return &g_families[f].rows[i];
        i -= *g_families[f].count;
    }
    return NULL;
}

/* ---- the registry ---------------------------------------------------------------- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static kiln_op_registry g_registry;

static void registry_init(void) {
    for (int i = 0; i < ops_builtin_count(); i++)
        KILN_ASSERT(op_registry_add(&g_registry, ops_builtin(i)) == KILN_OK);
}

kiln_op_registry *ops_default_registry(void) {
    pthread_once(&g_once, registry_init);
    return &g_registry;
}

kiln_graph *kiln_graph_new(void) {
    return graph_new(ops_default_registry());
}

kiln_graph *kiln_graph_parse(const char *text, const kiln_npz *constants) {
    if (!text) {
        kiln_set_error(KILN_ERR_INVALID, "graph text is NULL");
        return NULL;
    }
    return graph_parse(text, constants, ops_default_registry());
}
