/* tflite_load.h: a TFLite model (tensorflow/lite/schema/schema.fbs) read
 * and checked through the verifying FlatBuffer reader (flatbuf.h) into
 * plain structs: the operator codes, the buffers, and the first subgraph's
 * tensors and operators. Every index (a tensor's buffer, an operator's
 * tensors and opcode) is range-checked and every shape checked here, so
 * the importer (tflite_import.c) reads trusted values; an operator's
 * builtin options stay a FlatBuffer table, read field by field (each
 * read checked) by its converter. */
#ifndef KILN_FRONTEND_TFLITE_LOAD_H
#define KILN_FRONTEND_TFLITE_LOAD_H

#include "flatbuf.h"
#include "kiln/runtime.h"

/* TFLite's TensorType values the importer knows. */
enum {
    TFL_FLOAT32 = 0,
    TFL_FLOAT16 = 1,
    TFL_INT32 = 2,
    TFL_UINT8 = 3,
    TFL_INT64 = 4,
    TFL_STRING = 5,
    TFL_BOOL = 6,
    TFL_INT16 = 7,
    TFL_INT8 = 9,
    TFL_FLOAT64 = 10,
    TFL_UINT64 = 12,
    TFL_UINT32 = 15,
    TFL_UINT16 = 16
};

/* Caps that keep a hostile file from asking for much work. */
#define TFL_MAX_TENSORS (1 << 20)
#define TFL_MAX_OPS (1 << 20)
#define TFL_MAX_OP_IO 4096

typedef struct {
    const char *name; /* NUL-terminated copy ("" if none) */
    int type;         /* a TensorType */
    int ndim;
    int64_t dims[KILN_MAX_NDIM];
    int dynamic[KILN_MAX_NDIM]; /* -1 in shape_signature: a dynamic dim */
    uint32_t buffer;            /* index into the model's buffers (0: none) */
    int nq;                     /* quantization: scales (and as many zero points) */
    const float *scale;
    const int64_t *zero_point;
    int qdim; /* quantized_dimension, checked to be < ndim when nq > 1 */
    int is_variable, has_sparsity;
} tfl_tensor;

typedef struct {
    int builtin;        /* the BuiltinOperator (the larger of the two code fields) */
    const char *custom; /* custom_code, or NULL */
    int version;
} tfl_opcode;

typedef struct {
    const tfl_opcode *code;
    int nin, nout;
    const int32_t *in, *out; /* tensor indices checked; -1 in inputs: none */
    fb_table options;        /* builtin_options (has_options) */
    int has_options;
} tfl_op;

typedef struct {
    const uint8_t *data; /* inside the file (NULL: no data) */
    size_t size;
} tfl_buffer;

typedef struct {
    arena *a;
    fb_buf fb;
    uint32_t version;
    int nsubgraphs;
    int ncodes, nbuffers, ntensors, nops, nin, nout;
    tfl_opcode *codes;
    tfl_buffer *buffers;
    tfl_tensor *tensors;
    tfl_op *ops;
    const int32_t *inputs, *outputs;
    const char *description;
} tfl_model;

/* 1 if the bytes look like a TFLite model (the identifier "TFL3"). */
KILN_HIDDEN int tfl_is_tflite(const void *data, size_t len);
/* Read and check the model in data[len] (which must outlive the model:
 * buffers point into it). NULL with an error prefixed by `name`. */
KILN_HIDDEN tfl_model *tfl_model_load(const void *data, size_t len, const char *name);
KILN_HIDDEN void tfl_model_free(tfl_model *m);
/* The name of a BuiltinOperator ("CONV_2D"), or NULL if unknown. */
KILN_HIDDEN const char *tfl_op_name(int builtin);
/* The name of a TensorType ("INT8"), or "UNKNOWN". */
KILN_HIDDEN const char *tfl_type_name(int type);

#endif
