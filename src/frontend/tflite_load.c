/* tflite_load.c: a TFLite model read through the verifying FlatBuffer
 * reader and checked into tflite_load.h's structs. The slots are the field
 * numbers of tensorflow/lite/schema/schema.fbs (a union's type and value
 * take one each). Only the first subgraph is read: it is the model. */
#include "tflite_load.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Field slots of the schema's tables. */
enum { MODEL_VERSION = 0, MODEL_CODES = 1, MODEL_SUBGRAPHS = 2, MODEL_DESC = 3, MODEL_BUFFERS = 4 };
enum { CODE_DEPRECATED = 0, CODE_CUSTOM = 1, CODE_VERSION = 2, CODE_BUILTIN = 3 };
enum { SG_TENSORS = 0, SG_INPUTS = 1, SG_OUTPUTS = 2, SG_OPS = 3 };
enum {
    TENSOR_SHAPE = 0,
    TENSOR_TYPE = 1,
    TENSOR_BUFFER = 2,
    TENSOR_NAME = 3,
    TENSOR_QUANT = 4,
    TENSOR_VARIABLE = 5,
    TENSOR_SPARSITY = 6,
    TENSOR_SIGNATURE = 7
};
enum { QUANT_SCALE = 2, QUANT_ZERO_POINT = 3, QUANT_DETAILS_TYPE = 4, QUANT_DIM = 6 };
enum { OP_OPCODE = 0, OP_INPUTS = 1, OP_OUTPUTS = 2, OP_OPTIONS_TYPE = 3, OP_OPTIONS = 4 };
enum { BUFFER_DATA = 0, BUFFER_OFFSET = 1, BUFFER_SIZE = 2 };

static const char *const op_names[] = {"ADD",
                                       "AVERAGE_POOL_2D",
                                       "CONCATENATION",
                                       "CONV_2D",
                                       "DEPTHWISE_CONV_2D",
                                       "DEPTH_TO_SPACE",
                                       "DEQUANTIZE",
                                       "EMBEDDING_LOOKUP",
                                       "FLOOR",
                                       "FULLY_CONNECTED",
                                       "HASHTABLE_LOOKUP",
                                       "L2_NORMALIZATION",
                                       "L2_POOL_2D",
                                       "LOCAL_RESPONSE_NORMALIZATION",
                                       "LOGISTIC",
                                       "LSH_PROJECTION",
                                       "LSTM",
                                       "MAX_POOL_2D",
                                       "MUL",
                                       "RELU",
                                       "RELU_N1_TO_1",
                                       "RELU6",
                                       "RESHAPE",
                                       "RESIZE_BILINEAR",
                                       "RNN",
                                       "SOFTMAX",
                                       "SPACE_TO_DEPTH",
                                       "SVDF",
                                       "TANH",
                                       "CONCAT_EMBEDDINGS",
                                       "SKIP_GRAM",
                                       "CALL",
                                       "CUSTOM",
                                       "EMBEDDING_LOOKUP_SPARSE",
                                       "PAD",
                                       "UNIDIRECTIONAL_SEQUENCE_RNN",
                                       "GATHER",
                                       "BATCH_TO_SPACE_ND",
                                       "SPACE_TO_BATCH_ND",
                                       "TRANSPOSE",
                                       "MEAN",
                                       "SUB",
                                       "DIV",
                                       "SQUEEZE",
                                       "UNIDIRECTIONAL_SEQUENCE_LSTM",
                                       "STRIDED_SLICE",
                                       "BIDIRECTIONAL_SEQUENCE_RNN",
                                       "EXP",
                                       "TOPK_V2",
                                       "SPLIT",
                                       "LOG_SOFTMAX",
                                       "DELEGATE",
                                       "BIDIRECTIONAL_SEQUENCE_LSTM",
                                       "CAST",
                                       "PRELU",
                                       "MAXIMUM",
                                       "ARG_MAX",
                                       "MINIMUM",
                                       "LESS",
                                       "NEG",
                                       "PADV2",
                                       "GREATER",
                                       "GREATER_EQUAL",
                                       "LESS_EQUAL",
                                       "SELECT",
                                       "SLICE",
                                       "SIN",
                                       "TRANSPOSE_CONV",
                                       "SPARSE_TO_DENSE",
                                       "TILE",
                                       "EXPAND_DIMS",
                                       "EQUAL",
                                       "NOT_EQUAL",
                                       "LOG",
                                       "SUM",
                                       "SQRT",
                                       "RSQRT",
                                       "SHAPE",
                                       "POW",
                                       "ARG_MIN",
                                       "FAKE_QUANT",
                                       "REDUCE_PROD",
                                       "REDUCE_MAX",
                                       "PACK",
                                       "LOGICAL_OR",
                                       "ONE_HOT",
                                       "LOGICAL_AND",
                                       "LOGICAL_NOT",
                                       "UNPACK",
                                       "REDUCE_MIN",
                                       "FLOOR_DIV",
                                       "REDUCE_ANY",
                                       "SQUARE",
                                       "ZEROS_LIKE",
                                       "FILL",
                                       "FLOOR_MOD",
                                       "RANGE",
                                       "RESIZE_NEAREST_NEIGHBOR",
                                       "LEAKY_RELU",
                                       "SQUARED_DIFFERENCE",
                                       "MIRROR_PAD",
                                       "ABS",
                                       "SPLIT_V",
                                       "UNIQUE",
                                       "CEIL",
                                       "REVERSE_V2",
                                       "ADD_N",
                                       "GATHER_ND",
                                       "COS",
                                       "WHERE",
                                       "RANK",
                                       "ELU",
                                       "REVERSE_SEQUENCE",
                                       "MATRIX_DIAG",
                                       "QUANTIZE",
                                       "MATRIX_SET_DIAG",
                                       "ROUND",
                                       "HARD_SWISH",
                                       "IF",
                                       "WHILE",
                                       "NON_MAX_SUPPRESSION_V4",
                                       "NON_MAX_SUPPRESSION_V5",
                                       "SCATTER_ND",
                                       "SELECT_V2",
                                       "DENSIFY",
                                       "SEGMENT_SUM",
                                       "BATCH_MATMUL",
                                       "PLACEHOLDER_FOR_GREATER_OP_CODES",
                                       "CUMSUM",
                                       "CALL_ONCE",
                                       "BROADCAST_TO",
                                       "RFFT2D",
                                       "CONV_3D",
                                       "IMAG",
                                       "REAL",
                                       "COMPLEX_ABS",
                                       "HASHTABLE",
                                       "HASHTABLE_FIND",
                                       "HASHTABLE_IMPORT",
                                       "HASHTABLE_SIZE",
                                       "REDUCE_ALL",
                                       "CONV_3D_TRANSPOSE",
                                       "VAR_HANDLE",
                                       "READ_VARIABLE",
                                       "ASSIGN_VARIABLE",
                                       "BROADCAST_ARGS",
                                       "RANDOM_STANDARD_NORMAL",
                                       "BUCKETIZE",
                                       "RANDOM_UNIFORM",
                                       "MULTINOMIAL",
                                       "GELU",
                                       "DYNAMIC_UPDATE_SLICE",
                                       "RELU_0_TO_1",
                                       "UNSORTED_SEGMENT_PROD",
                                       "UNSORTED_SEGMENT_MAX",
                                       "UNSORTED_SEGMENT_SUM",
                                       "ATAN2",
                                       "UNSORTED_SEGMENT_MIN",
                                       "SIGN",
                                       "BITCAST",
                                       "BITWISE_XOR",
                                       "RIGHT_SHIFT"};

const char *tfl_op_name(int builtin) {
    int n = (int)(sizeof op_names / sizeof op_names[0]);
    return builtin >= 0 && builtin < n ? op_names[builtin] : NULL;
}

const char *tfl_type_name(int type) {
    static const char *const names[] = {"FLOAT32", "FLOAT16",    "INT32",  "UINT8",     "INT64",
                                        "STRING",  "BOOL",       "INT16",  "COMPLEX64", "INT8",
                                        "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE",  "VARIANT",
                                        "UINT32",  "UINT16",     "INT4",   "BFLOAT16"};
    return type >= 0 && type < (int)(sizeof names / sizeof names[0]) ? names[type] : "UNKNOWN";
}

int tfl_is_tflite(const void *data, size_t len) {
    return data && len >= 8 && !memcmp((const char *)data + 4, "TFL3", 4);
}

/* Load state: the model and its name for errors. */
typedef struct {
    tfl_model *m;
    const char *name;
} loader;

static int bad(loader *L, const char *fmt, ...) KILN_PRINTF(2, 3);
static int bad(loader *L, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kiln_set_error(KILN_ERR_IO, "%s: not a valid TFLite model: %s", L->name, msg);
    return -1;
}

/* The error of the FlatBuffer reader, with what was being read. */
static int bad_fb(loader *L, const char *what) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    return bad(L, "%s: %s", what, msg);
}

/* A NUL-terminated copy of string field slot ("" if absent). */
static int copy_str(loader *L, const fb_table *t, int slot, const char **out, const char *what) {
    const char *s;
    size_t n;
    int r = fb_field_str(t, slot, &s, &n);
    if (r < 0)
        return bad_fb(L, what);
    char *c = arena_alloc(L->m->a, r ? n + 1 : 1);
    if (r)
        memcpy(c, s, n);
    *out = c;
    return 0;
}

/* An int32 vector field copied out (count in *n, at most cap). */
static int read_ints(loader *L, const fb_table *t, int slot, int cap, int32_t **out, int *n,
                     const char *what) {
    fb_vec v;
    int r = fb_field_vec(t, slot, 4, &v);
    if (r < 0)
        return bad_fb(L, what);
    if (!r) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    if (v.n > (uint32_t)cap)
        return bad(L, "%s: %u entries, more than %d", what, v.n, cap);
    int32_t *a = arena_alloc(L->m->a, sizeof(int32_t) * (v.n ? v.n : 1));
    for (uint32_t i = 0; i < v.n; i++)
        a[i] = (int32_t)fb_vec_int(&v, i, 1);
    *out = a;
    *n = (int)v.n;
    return 0;
}

/* A vector-of-tables field (absent: empty) with at most max entries: its
 * count, or -1 with an error. */
static int table_vec(loader *L, const fb_table *t, int slot, uint32_t max, const char *what,
                     fb_vec *v) {
    int r = fb_field_vec(t, slot, 4, v);
    if (r < 0)
        return bad_fb(L, what);
    if (r && v->n > max)
        return bad(L, "%u %s, more than %u", v->n, what, max);
    return r ? (int)v->n : 0;
}

/* Table i of v, with "WHAT I" into what[64] for the errors about it. */
static int table_elem(loader *L, const fb_vec *v, int i, const char *kind, char *what,
                      fb_table *t) {
    snprintf(what, 64, "%s %d", kind, i);
    return fb_vec_table(v, (uint32_t)i, t) ? bad_fb(L, what) : 0;
}

static int load_codes(loader *L, const fb_table *root) {
    tfl_model *m = L->m;
    fb_vec v;
    if ((m->ncodes = table_vec(L, root, MODEL_CODES, TFL_MAX_OPS, "operator codes", &v)) < 0)
        return -1;
    m->codes = arena_alloc(m->a, sizeof(tfl_opcode) * (size_t)(m->ncodes + 1));
    for (int i = 0; i < m->ncodes; i++) {
        fb_table t;
        char what[64];
        if (table_elem(L, &v, i, "operator code", what, &t))
            return -1;
        int e = 0;
        int64_t dep = fb_int(&t, CODE_DEPRECATED, 1, 1, 0, &e);
        int64_t code = fb_int(&t, CODE_BUILTIN, 4, 1, 0, &e);
        int64_t ver = fb_int(&t, CODE_VERSION, 4, 1, 1, &e);
        if (e)
            return bad(L, "%s: a field lies outside its table", what);
        if (dep < 0 || code < 0)
            return bad(L, "%s: negative builtin code", what);
        m->codes[i].builtin = (int)(dep > code ? dep : code);
        m->codes[i].version = (int)ver;
        const char *custom = NULL;
        if (copy_str(L, &t, CODE_CUSTOM, &custom, what))
            return -1;
        m->codes[i].custom = *custom ? custom : NULL;
    }
    return 0;
}

static int load_buffers(loader *L, const fb_table *root) {
    tfl_model *m = L->m;
    fb_vec v;
    if ((m->nbuffers = table_vec(L, root, MODEL_BUFFERS, TFL_MAX_TENSORS, "buffers", &v)) < 0)
        return -1;
    m->buffers = arena_alloc(m->a, sizeof(tfl_buffer) * (size_t)(m->nbuffers + 1));
    for (int i = 0; i < m->nbuffers; i++) {
        fb_table t;
        char what[64];
        if (table_elem(L, &v, i, "buffer", what, &t))
            return -1;
        fb_vec d;
        int r = fb_field_vec(&t, BUFFER_DATA, 1, &d);
        if (r < 0)
            return bad_fb(L, what);
        if (r && d.n) {
            m->buffers[i].data = m->fb.data + d.pos;
            m->buffers[i].size = d.n;
            continue;
        }
        /* the form of models over 2 GB: data at offset (from the file's
           start) outside the FlatBuffer; offset 0 or 1 means none */
        int e = 0;
        uint64_t off = (uint64_t)fb_int(&t, BUFFER_OFFSET, 8, 0, 0, &e);
        uint64_t size = (uint64_t)fb_int(&t, BUFFER_SIZE, 8, 0, 0, &e);
        if (e)
            return bad(L, "%s: a field lies outside its table", what);
        if (off > 1) {
            if (off > m->fb.len || size > m->fb.len - off)
                return bad(L, "%s: data at offset %llu, size %llu, past the end of the file", what,
                           (unsigned long long)off, (unsigned long long)size);
            m->buffers[i].data = m->fb.data + off;
            m->buffers[i].size = (size_t)size;
        }
    }
    return 0;
}

static int load_quant(loader *L, tfl_tensor *x, const fb_table *q, const char *what) {
    fb_vec s, z;
    int rs = fb_field_vec(q, QUANT_SCALE, 4, &s), rz = fb_field_vec(q, QUANT_ZERO_POINT, 8, &z);
    if (rs < 0 || rz < 0)
        return bad_fb(L, what);
    int e = 0;
    int64_t dim = fb_int(q, QUANT_DIM, 4, 1, 0, &e);
    int64_t details = fb_int(q, QUANT_DETAILS_TYPE, 1, 0, 0, &e);
    if (e)
        return bad(L, "%s: a quantization field lies outside its table", what);
    if (details)
        return bad(L, "%s: custom quantization details are not supported", what);
    uint32_t ns = rs ? s.n : 0, nz = rz ? z.n : 0;
    if (!ns)
        return 0; /* min/max only: not quantized for inference */
    if (nz && nz != ns)
        return bad(L, "%s: %u scales but %u zero points", what, ns, nz);
    if (ns > 1 && (dim < 0 || dim >= x->ndim || x->dims[dim] != (int64_t)ns))
        return bad(L, "%s: %u scales along quantized_dimension %lld of a %d-D tensor", what, ns,
                   (long long)dim, x->ndim);
    float *sc = arena_alloc(L->m->a, sizeof(float) * ns);
    int64_t *zp = arena_alloc(L->m->a, sizeof(int64_t) * ns);
    for (uint32_t i = 0; i < ns; i++) {
        sc[i] = fb_vec_float(&s, i);
        zp[i] = nz ? fb_vec_int(&z, i, 1) : 0;
        if (!isfinite(sc[i]) || sc[i] <= 0)
            return bad(L, "%s: scale %g is not a positive number", what, (double)sc[i]);
        if (zp[i] < -32768 || zp[i] > 65535)
            return bad(L, "%s: zero point %lld out of range", what, (long long)zp[i]);
    }
    x->nq = (int)ns;
    x->scale = sc;
    x->zero_point = zp;
    x->qdim = (int)dim;
    return 0;
}

static int load_tensor(loader *L, tfl_tensor *x, const fb_table *t, int index) {
    char what[64];
    snprintf(what, sizeof what, "tensor %d", index);
    int32_t *shape, *sig;
    int nd, nsig;
    if (read_ints(L, t, TENSOR_SHAPE, KILN_MAX_NDIM, &shape, &nd, what) ||
        read_ints(L, t, TENSOR_SIGNATURE, KILN_MAX_NDIM, &sig, &nsig, what) ||
        copy_str(L, t, TENSOR_NAME, &x->name, what))
        return -1;
    if (nsig && nsig != nd)
        return bad(L, "%s '%s': shape_signature of rank %d for a shape of rank %d", what, x->name,
                   nsig, nd);
    x->ndim = nd;
    for (int d = 0; d < nd; d++) {
        if (shape[d] < 0)
            return bad(L, "%s '%s': negative dim %d", what, x->name, (int)shape[d]);
        x->dims[d] = shape[d];
        x->dynamic[d] = nsig && sig[d] < 0;
    }
    int e = 0;
    x->type = (int)fb_int(t, TENSOR_TYPE, 1, 1, 0, &e);
    int64_t buf = fb_int(t, TENSOR_BUFFER, 4, 0, 0, &e);
    x->is_variable = (int)fb_int(t, TENSOR_VARIABLE, 1, 0, 0, &e);
    if (e)
        return bad(L, "%s '%s': a field lies outside its table", what, x->name);
    if (buf >= L->m->nbuffers && buf != 0)
        return bad(L, "%s '%s': buffer %lld of %d", what, x->name, (long long)buf, L->m->nbuffers);
    x->buffer = (uint32_t)buf;
    fb_table sp;
    int r = fb_field_table(t, TENSOR_SPARSITY, &sp);
    if (r < 0)
        return bad_fb(L, what);
    x->has_sparsity = r;
    fb_table q;
    r = fb_field_table(t, TENSOR_QUANT, &q);
    if (r < 0)
        return bad_fb(L, what);
    return r ? load_quant(L, x, &q, what) : 0;
}

/* Check a list of tensor indices (-1 allowed where optional). */
static int check_indices(loader *L, const int32_t *ix, int n, int optional, const char *what) {
    for (int i = 0; i < n; i++)
        if (ix[i] >= L->m->ntensors || ix[i] < (optional ? -1 : 0))
            return bad(L, "%s: tensor index %d of %d tensors", what, (int)ix[i], L->m->ntensors);
    return 0;
}

static int load_op(loader *L, tfl_op *o, const fb_table *t, int index) {
    tfl_model *m = L->m;
    char what[64];
    snprintf(what, sizeof what, "operator %d", index);
    int e = 0;
    int64_t code = fb_int(t, OP_OPCODE, 4, 0, 0, &e);
    int64_t otype = fb_int(t, OP_OPTIONS_TYPE, 1, 0, 0, &e);
    if (e)
        return bad(L, "%s: a field lies outside its table", what);
    if (code >= m->ncodes)
        return bad(L, "%s: opcode index %lld of %d operator codes", what, (long long)code,
                   m->ncodes);
    o->code = &m->codes[code];
    int32_t *in, *out;
    if (read_ints(L, t, OP_INPUTS, TFL_MAX_OP_IO, &in, &o->nin, what) ||
        read_ints(L, t, OP_OUTPUTS, TFL_MAX_OP_IO, &out, &o->nout, what) ||
        check_indices(L, in, o->nin, 1, what) || check_indices(L, out, o->nout, 0, what))
        return -1;
    o->in = in;
    o->out = out;
    int r = fb_field_table(t, OP_OPTIONS, &o->options);
    if (r < 0)
        return bad_fb(L, what);
    o->has_options = r && otype != 0;
    return 0;
}

static int load_subgraph(loader *L, const fb_table *root) {
    tfl_model *m = L->m;
    fb_vec sgs;
    int r = fb_field_vec(root, MODEL_SUBGRAPHS, 4, &sgs);
    if (r < 0)
        return bad_fb(L, "subgraphs");
    if (!r || !sgs.n)
        return bad(L, "the model has no subgraph");
    m->nsubgraphs = (int)sgs.n;
    fb_table sg;
    if (fb_vec_table(&sgs, 0, &sg))
        return bad_fb(L, "subgraph 0");
    fb_vec tv, ov;
    if ((m->ntensors = table_vec(L, &sg, SG_TENSORS, TFL_MAX_TENSORS, "tensors", &tv)) < 0 ||
        (m->nops = table_vec(L, &sg, SG_OPS, TFL_MAX_OPS, "operators", &ov)) < 0)
        return -1;
    m->tensors = arena_alloc(m->a, sizeof(tfl_tensor) * (size_t)(m->ntensors + 1));
    for (int i = 0; i < m->ntensors; i++) {
        fb_table t;
        char what[64];
        if (table_elem(L, &tv, i, "tensor", what, &t) || load_tensor(L, &m->tensors[i], &t, i))
            return -1;
    }
    int32_t *ins, *outs;
    if (read_ints(L, &sg, SG_INPUTS, TFL_MAX_OP_IO, &ins, &m->nin, "subgraph inputs") ||
        read_ints(L, &sg, SG_OUTPUTS, TFL_MAX_OP_IO, &outs, &m->nout, "subgraph outputs") ||
        check_indices(L, ins, m->nin, 0, "subgraph inputs") ||
        check_indices(L, outs, m->nout, 0, "subgraph outputs"))
        return -1;
    m->inputs = ins;
    m->outputs = outs;
    m->ops = arena_alloc(m->a, sizeof(tfl_op) * (size_t)(m->nops + 1));
    for (int i = 0; i < m->nops; i++) {
        fb_table t;
        char what[64];
        if (table_elem(L, &ov, i, "operator", what, &t) || load_op(L, &m->ops[i], &t, i))
            return -1;
    }
    return 0;
}

tfl_model *tfl_model_load(const void *data, size_t len, const char *name) {
    loader L = {NULL, name ? name : "<memory>"};
    if (!tfl_is_tflite(data, len)) {
        kiln_set_error(KILN_ERR_IO, "%s: not a TFLite model (no \"TFL3\" identifier at byte 4)",
                       L.name);
        return NULL;
    }
    arena *a = arena_new();
    tfl_model *m = arena_alloc(a, sizeof *m);
    m->a = a;
    m->fb = (fb_buf){data, len};
    L.m = m;
    fb_table root;
    int e = 0;
    if (fb_root(&m->fb, "TFL3", &root)) {
        bad_fb(&L, "header");
        goto fail;
    }
    m->version = (uint32_t)fb_int(&root, MODEL_VERSION, 4, 0, 0, &e);
    if (e) {
        bad(&L, "the model's version field lies outside its table");
        goto fail;
    }
    if (m->version != 3) {
        bad(&L, "schema version %u (kiln reads version 3)", m->version);
        goto fail;
    }
    if (copy_str(&L, &root, MODEL_DESC, &m->description, "description") || load_codes(&L, &root) ||
        load_buffers(&L, &root) || load_subgraph(&L, &root))
        goto fail;
    return m;
fail:
    arena_free(a);
    return NULL;
}

void tfl_model_free(tfl_model *m) {
    if (m)
        arena_free(m->a);
}
