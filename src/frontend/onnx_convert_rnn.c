/* onnx_convert_rnn.c: converters of the recurrent networks (RNN, GRU and
 * LSTM, opsets 7 and 14) and of Einsum (12).
 *
 * The sequence length is static at compile time, so a recurrent node is
 * unrolled into existing ops, exactly: for each direction, X * W^T for all
 * steps at once (nn.dense) plus the biases, then per step H * R^T
 * (nn.dense), the gate slices (strided_slice), the activations and the
 * elementwise updates of ONNX's equations. A node unrolls to at most
 * RNN_MAX_STEPS steps (sequence length times directions), so a hostile model
 * cannot blow up compile time.
 *
 * sequence_lens (a run-time input) masks the steps: at step t a batch entry
 * with t >= its length keeps its state and outputs 0 (ONNX's Y); the reverse
 * direction runs forward over X with each entry's first length steps
 * reversed (reverse_sequence) and reverses Y back.
 *
 * Einsum is a chain of pairwise contractions, each a transpose, reshape and
 * nn.batch_matmul, with sums over the indices one operand alone has and
 * diagonals (an index twice in one operand) taken as a strided slice of the
 * two axes flattened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_convert.h"

#define RNN_MAX_STEPS 4096

/* Return -1 when a call fails: a converter must stop at its first failed
 * call, as a later call that succeeds clears the error. */
#define TRY(id)                                                                                    \
    do {                                                                                           \
        if ((id) < 0)                                                                              \
            return -1;                                                                             \
    } while (0)

/* ---- activations --------------------------------------------------------------- */

/* ONNX's activation functions of recurrent nets: name, kiln op (NULL:
 * composed here), and whether it takes alpha and beta, with their
 * defaults (ONNX Runtime's). */
typedef struct {
    const char *name, *op;
    int n_params;
    double alpha, beta;
} rnn_act_def;

static const rnn_act_def g_acts[] = {
    {"Relu", "nn.relu", 0, 0, 0},
    {"Tanh", "tanh", 0, 0, 0},
    {"Sigmoid", "sigmoid", 0, 0, 0},
    {"Softsign", "nn.softsign", 0, 0, 0},
    {"Softplus", "nn.softplus", 0, 0, 0},
    {"Affine", NULL, 2, 1.0, 0.0},
    {"LeakyRelu", "nn.leaky_relu", 1, 0.01, 0},
    {"ThresholdedRelu", "nn.thresholded_relu", 1, 1.0, 0},
    {"ScaledTanh", NULL, 2, 1.0, 1.0},
    {"HardSigmoid", NULL, 2, 0.2, 0.5},
    {"Elu", "nn.elu", 1, 1.0, 0},
};

typedef struct {
    const rnn_act_def *def;
    double alpha, beta;
} rnn_act;

static int apply_act(imp *I, const Onnx__NodeProto *n, const rnn_act *a, int x) {
    if (x < 0)
        return -1;
    const char *nm = a->def->name;
    if (!strcmp(nm, "Affine")) {
        int ax = cvt_binary_of(I, n, "multiply", x, cvt_float_const_like(I, n, x, a->alpha));
        return cvt_binary_of(I, n, "add", ax, cvt_float_const_like(I, n, x, a->beta));
    }
    if (!strcmp(nm, "ScaledTanh")) {
        int bx = cvt_binary_of(I, n, "multiply", x, cvt_float_const_like(I, n, x, a->beta));
        return cvt_binary_of(I, n, "multiply", cvt_unary_of(I, n, "tanh", bx),
                             cvt_float_const_like(I, n, x, a->alpha));
    }
    if (!strcmp(nm, "HardSigmoid"))
        return cvt_hard_sigmoid_of(I, n, x, a->alpha, a->beta);
    if (a->def->n_params) {
        char attrs[64];
        snprintf(attrs, sizeof attrs, "alpha=%.17g", a->alpha);
        return imp_call(I, n, a->def->op, 1, &x, attrs);
    }
    return cvt_unary_of(I, n, a->def->op, x);
}

/* The node's activations: per direction `per` of them (defaults def[]),
 * the attribute giving all directions' in order; alpha and beta are taken
 * in order by the functions that have them. 0, or -1 with an error. */
static int parse_acts(imp *I, const Onnx__NodeProto *n, int ndir, int per, const char *const *def,
                      rnn_act *out) {
    const Onnx__AttributeProto *names =
        imp_attr(I, n, "activations", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    const Onnx__AttributeProto *al =
        imp_attr(I, n, "activation_alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    const Onnx__AttributeProto *be =
        imp_attr(I, n, "activation_beta", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    int total = ndir * per;
    if (names && (int)names->n_strings != total)
        return imp_fail(I, n,
                        "attribute 'activations' has %d names, %d expected (%d per direction)",
                        (int)names->n_strings, total, per);
    size_t ia = 0, ib = 0;
    for (int k = 0; k < total; k++) {
        char nm[32];
        if (names) {
            const ProtobufCBinaryData *s = &names->strings[k];
            snprintf(nm, sizeof nm, "%.*s", (int)(s->len < 31 ? s->len : 31),
                     (const char *)s->data);
        } else {
            snprintf(nm, sizeof nm, "%s", def[k % per]);
        }
        out[k].def = NULL;
        for (size_t j = 0; j < sizeof g_acts / sizeof g_acts[0]; j++)
            if (!strcmp(nm, g_acts[j].name))
                out[k].def = &g_acts[j];
        if (!out[k].def)
            return imp_fail(I, n, "activation '%s' is not supported", nm);
        out[k].alpha = out[k].def->alpha;
        out[k].beta = out[k].def->beta;
        if (out[k].def->n_params >= 1 && al && ia < al->n_floats)
            out[k].alpha = al->floats[ia++];
        if (out[k].def->n_params >= 2 && be && ib < be->n_floats)
            out[k].beta = be->floats[ib++];
    }
    return 0;
}

/* ---- recurrent networks --------------------------------------------------------- */

enum { K_RNN, K_GRU, K_LSTM };

typedef struct {
    int kind, gates;     /* K_*; weights per gate: 1, 3 or 4 */
    int64_t S, B, In, H; /* steps, batch, input and hidden size */
    int ndir, layout, lbr, input_forget;
    double clip; /* < 0: none */
    rnn_act act[6];
    int nact; /* per direction */
} rnn_cfg;

/* x[begin:end] on axis (other axes whole). */
static int slice_axis(imp *I, const Onnx__NodeProto *n, int x, int axis, int64_t begin,
                      int64_t end) {
    if (x < 0)
        return -1;
    char attrs[128];
    snprintf(attrs, sizeof attrs, "begin=[%lld], end=[%lld], axes=[%d]", (long long)begin,
             (long long)end, axis);
    return imp_call(I, n, "strided_slice", 1, &x, attrs);
}

/* Slice d of a [ndir, ...] tensor as rows x cols (cols 0: 1-D of rows). */
static int dir_slice(imp *I, const Onnx__NodeProto *n, int x, int d, int64_t rows, int64_t cols) {
    int64_t dims[2] = {rows, cols};
    return cvt_reshape_to(I, n, slice_axis(I, n, x, 0, d, d + 1), cols ? 2 : 1, dims);
}

/* Gate g (of width H) of a [B, gates*H] tensor. */
static int gate(imp *I, const Onnx__NodeProto *n, const rnn_cfg *c, int x, int g) {
    return slice_axis(I, n, x, 1, g * c->H, (g + 1) * c->H);
}

static int add_of(imp *I, const Onnx__NodeProto *n, int a, int b) {
    return cvt_binary_of(I, n, "add", a, b);
}

static int mul_of(imp *I, const Onnx__NodeProto *n, int a, int b) {
    return cvt_binary_of(I, n, "multiply", a, b);
}

/* Activation k of the direction on a pre-activation, clipped first if the
 * node has a clip. */
static int activate(imp *I, const Onnx__NodeProto *n, const rnn_cfg *c, int d, int k, int x) {
    if (x >= 0 && c->clip >= 0) {
        char attrs[96];
        snprintf(attrs, sizeof attrs, "a_min=%.17g, a_max=%.17g", -c->clip, c->clip);
        x = imp_call(I, n, "clip", 1, &x, attrs);
    }
    return apply_act(I, n, &c->act[d * c->nact + k], x);
}

/* One direction's per-step weights. */
typedef struct {
    int xw;     /* [S, B, gates*H]: X * W^T + the biases folded into it */
    int r, rh;  /* R [gates*H, H] (GRU without linear_before_reset: z and r rows), Rh */
    int rbh;    /* GRU linear_before_reset: Rb of gate h, [H], or -1 */
    int p[3];   /* LSTM peepholes i, o, f ([H]) or -1 */
    int h0, c0; /* [B, H] */
} rnn_dir;

/* The input [S*B, In] (x2d) times W[d]^T plus biases as [S, B, gates*H]. */
static int dir_weights(imp *I, const Onnx__NodeProto *n, const rnn_cfg *c, int d, int x2d,
                       const int *in, rnn_dir *w) {
    int64_t G = c->gates * c->H;
    int wd, rd, xw;
    TRY(wd = dir_slice(I, n, in[1], d, G, c->In));
    TRY(rd = dir_slice(I, n, in[2], d, G, c->H));
    int dense_in[2] = {x2d, wd};
    TRY(xw = imp_call(I, n, "nn.dense", 2, dense_in, NULL));
    w->rbh = -1;
    if (in[3] >= 0) {
        int b, wb, rb;
        TRY(b = dir_slice(I, n, in[3], d, 2 * G, 0));
        TRY(wb = slice_axis(I, n, b, 0, 0, G));
        TRY(rb = slice_axis(I, n, b, 0, G, 2 * G));
        if (c->kind == K_GRU && c->lbr) {
            /* Rb of gate h stays with the recurrent term */
            int parts[2];
            TRY(w->rbh = slice_axis(I, n, rb, 0, 2 * c->H, G));
            TRY(parts[0] = slice_axis(I, n, rb, 0, 0, 2 * c->H));
            TRY(parts[1] = cvt_filled(I, n, cvt_float_const_like(I, n, rb, 0), 1, &c->H));
            TRY(rb = imp_call(I, n, "concatenate", 2, parts, "axis=0"));
        }
        TRY(xw = add_of(I, n, xw, add_of(I, n, wb, rb)));
    }
    int64_t dims[3] = {c->S, c->B, G};
    TRY(w->xw = cvt_reshape_to(I, n, xw, 3, dims));
    w->r = rd;
    w->rh = -1;
    if (c->kind == K_GRU && !c->lbr) {
        TRY(w->r = slice_axis(I, n, rd, 0, 0, 2 * c->H));
        TRY(w->rh = slice_axis(I, n, rd, 0, 2 * c->H, G));
    }
    for (int k = 0; k < 3; k++)
        w->p[k] = -1;
    if (c->kind == K_LSTM && in[7] >= 0) {
        int p;
        TRY(p = dir_slice(I, n, in[7], d, 3 * c->H, 0));
        for (int k = 0; k < 3; k++)
            TRY(w->p[k] = slice_axis(I, n, p, 0, k * c->H, (k + 1) * c->H));
    }
    int64_t bh[2] = {c->B, c->H};
    w->c0 = -1;
    for (int k = 0; k < (c->kind == K_LSTM ? 2 : 1); k++) {
        int init = in[5 + k], *dst = k ? &w->c0 : &w->h0;
        TRY(*dst = init >= 0 ? dir_slice(I, n, init, d, c->B, c->H)
                             : cvt_filled(I, n, cvt_float_const_like(I, n, in[0], 0), 2, bh));
    }
    return 0;
}

static int dense2(imp *I, const Onnx__NodeProto *n, int x, int w) {
    int in[2] = {x, w};
    return x < 0 || w < 0 ? -1 : imp_call(I, n, "nn.dense", 2, in, NULL);
}

/* The pre-activation of gate g: xt's and hr's slices summed. */
static int gate_pre(imp *I, const Onnx__NodeProto *n, const rnn_cfg *c, int xt, int hr, int g) {
    int a;
    TRY(a = gate(I, n, c, xt, g));
    return add_of(I, n, a, gate(I, n, c, hr, g));
}

/* One step of direction d: the new h (and c) from the step's xw row xt
 * [B, gates*H] and the state h, c. */
static int step(imp *I, const Onnx__NodeProto *n, const rnn_cfg *c, int d, const rnn_dir *w, int xt,
                int h, int cst, int *h_new, int *c_new) {
    int hr, one;
    TRY(hr = dense2(I, n, h, w->r));
    TRY(one = cvt_float_const_like(I, n, xt, 1));
    if (c->kind == K_RNN)
        return *h_new = activate(I, n, c, d, 0, add_of(I, n, xt, hr));
    if (c->kind == K_GRU) {
        int z, r, rec, ht, keep, not_z;
        TRY(z = activate(I, n, c, d, 0, gate_pre(I, n, c, xt, hr, 0)));
        TRY(r = activate(I, n, c, d, 0, gate_pre(I, n, c, xt, hr, 1)));
        if (c->lbr) {
            TRY(rec = gate(I, n, c, hr, 2));
            if (w->rbh >= 0)
                TRY(rec = add_of(I, n, rec, w->rbh));
            TRY(rec = mul_of(I, n, r, rec));
        } else {
            TRY(rec = dense2(I, n, mul_of(I, n, r, h), w->rh));
        }
        TRY(ht = activate(I, n, c, d, 1, add_of(I, n, gate(I, n, c, xt, 2), rec)));
        TRY(keep = mul_of(I, n, z, h));
        TRY(not_z = cvt_binary_of(I, n, "subtract", one, z));
        return *h_new = add_of(I, n, mul_of(I, n, not_z, ht), keep);
    }
    /* LSTM: gates i, o, f, c; peepholes i, o, f */
    int pre[4], it, ft, ct, kept, ot;
    for (int g = 0; g < 4; g++)
        TRY(pre[g] = gate_pre(I, n, c, xt, hr, g));
    if (w->p[0] >= 0) {
        TRY(pre[0] = add_of(I, n, pre[0], mul_of(I, n, w->p[0], cst)));
        TRY(pre[2] = add_of(I, n, pre[2], mul_of(I, n, w->p[2], cst)));
    }
    TRY(it = activate(I, n, c, d, 0, pre[0]));
    TRY(ft = c->input_forget ? cvt_binary_of(I, n, "subtract", one, it)
                             : activate(I, n, c, d, 0, pre[2]));
    TRY(ct = activate(I, n, c, d, 1, pre[3]));
    TRY(kept = mul_of(I, n, ft, cst));
    TRY(*c_new = add_of(I, n, kept, mul_of(I, n, it, ct)));
    if (w->p[1] >= 0)
        TRY(pre[1] = add_of(I, n, pre[1], mul_of(I, n, w->p[1], *c_new)));
    TRY(ot = activate(I, n, c, d, 0, pre[1]));
    return *h_new = mul_of(I, n, ot, activate(I, n, c, d, 2, *c_new));
}

/* where(mask, a, b). */
static int select3(imp *I, const Onnx__NodeProto *n, int mask, int a, int b) {
    int in[3] = {mask, a, b};
    return mask < 0 || a < 0 || b < 0 ? -1 : imp_call(I, n, "where", 3, in, NULL);
}

/* The steps of direction d from the state *h, *cs (left the last state):
 * ys[t] (when ys) is step t's Y as [1, 1, B, H]. lens is sequence_lens as
 * int64 [B, 1] (or -1), zero a 0 of X's dtype. */
static int unroll(imp *I, const Onnx__NodeProto *n, const rnn_cfg *c, int d, int reverse,
                  const rnn_dir *w, int lens, int zero, int *ys, int *h, int *cs) {
    int64_t bg[2] = {c->B, c->gates * c->H}, y4[4] = {1, 1, c->B, c->H};
    for (int64_t s = 0; s < c->S; s++) {
        /* without lengths the reverse direction walks the time axis back */
        int64_t t = reverse && lens < 0 ? c->S - 1 - s : s;
        int xt, hn = -1, cn = -1, yt;
        TRY(xt = cvt_reshape_to(I, n, slice_axis(I, n, w->xw, 0, t, t + 1), 2, bg));
        TRY(step(I, n, c, d, w, xt, *h, *cs, &hn, &cn));
        yt = hn;
        if (lens >= 0) {
            /* past its length an entry keeps its state and outputs 0 */
            int live;
            TRY(live = cvt_binary_of(I, n, "less", imp_scalar_const(I, n, KILN_INT64, (double)s),
                                     lens));
            TRY(yt = select3(I, n, live, hn, zero));
            TRY(hn = select3(I, n, live, hn, *h));
            if (c->kind == K_LSTM)
                TRY(cn = select3(I, n, live, cn, *cs));
        }
        *h = hn;
        *cs = cn;
        if (ys)
            TRY(ys[t] = cvt_reshape_to(I, n, yt, 4, y4));
    }
    return 0;
}

/* Direction d: Y's [S, 1, B, H] part (if y), the last h and c as
 * [1, B, H]. x2d is X as [S*B, In] (reversed per entry when the direction
 * is reverse with lengths). */
static int run_dir(imp *I, const Onnx__NodeProto *n, const rnn_cfg *c, int d, int reverse, int x2d,
                   const int *in, int *y, int *h_last, int *c_last) {
    rnn_dir w;
    TRY(dir_weights(I, n, c, d, x2d, in, &w));
    int lens = -1, h = w.h0, cs = w.c0, zero = -1;
    if (in[4] >= 0) {
        int64_t b1[2] = {c->B, 1};
        TRY(lens = cvt_cast_to(I, n, cvt_reshape_to(I, n, in[4], 2, b1), KILN_INT64));
        TRY(zero = cvt_float_const_like(I, n, in[0], 0));
    }
    int *ys = y ? calloc((size_t)c->S, sizeof *ys) : NULL;
    if (y && !ys)
        return imp_fail(I, n, "out of memory");
    int rc = unroll(I, n, c, d, reverse, &w, lens, zero, ys, &h, &cs);
    if (rc >= 0 && y)
        rc = *y = imp_call(I, n, "concatenate", (int)c->S, ys, "axis=0");
    free(ys);
    TRY(rc);
    if (y && reverse && lens >= 0) {
        /* back in time order: each entry's first length steps reversed */
        int64_t sbh[3] = {c->S, c->B, c->H}, s1bh[4] = {c->S, 1, c->B, c->H};
        int rin[2] = {-1, in[4]};
        TRY(rin[0] = cvt_reshape_to(I, n, *y, 3, sbh));
        TRY(*y = cvt_reshape_to(
                I, n, imp_call(I, n, "reverse_sequence", 2, rin, "batch_axis=1, time_axis=0"), 4,
                s1bh));
    }
    int64_t one_bh[3] = {1, c->B, c->H};
    *c_last = -1;
    TRY(*h_last = cvt_reshape_to(I, n, h, 3, one_bh));
    if (c->kind == K_LSTM)
        TRY(*c_last = cvt_reshape_to(I, n, cs, 3, one_bh));
    return 0;
}

/* Type of input i, which must be a tensor of rank nd with concrete dims
 * (dims out); -1 with an error. */
static int input_dims(imp *I, const Onnx__NodeProto *n, int id, int i, int nd, int64_t *dims) {
    const gtensor_type *t = imp_type(I, id);
    if (!t || t->ndim != nd || !cvt_concrete(t))
        return imp_fail(I, n, "input %d ('%s') must be a %d-D tensor of known dims", i, n->input[i],
                        nd);
    for (int k = 0; k < nd; k++)
        dims[k] = t->dims[k].v;
    return 0;
}

/* Check optional input i against dims[nd] (after the layout's swap). */
static int check_input(imp *I, const Onnx__NodeProto *n, const int *in, int i, int nd,
                       const int64_t *want) {
    if (in[i] < 0)
        return 0;
    int64_t got[3] = {0, 0, 0};
    if (input_dims(I, n, in[i], i, nd, got) < 0)
        return -1;
    for (int k = 0; k < nd; k++)
        if (got[k] != want[k])
            return imp_fail(I, n, "input %d ('%s') has dim %d of %lld, %lld expected", i,
                            n->input[i], k, (long long)got[k], (long long)want[k]);
    return 0;
}

static int rnn_config(imp *I, const Onnx__NodeProto *n, int *in, rnn_cfg *c) {
    memset(c, 0, sizeof *c);
    c->kind = !strcmp(n->op_type, "GRU") ? K_GRU : !strcmp(n->op_type, "LSTM") ? K_LSTM : K_RNN;
    c->gates = c->kind == K_RNN ? 1 : c->kind == K_GRU ? 3 : 4;
    c->layout = (int)imp_attr_int(I, n, "layout", 0);
    if (c->layout != 0 && c->layout != 1)
        return imp_fail(I, n, "attribute 'layout' must be 0 or 1, not %d", c->layout);
    c->lbr = imp_attr_int(I, n, "linear_before_reset", 0) != 0;
    c->input_forget = imp_attr_int(I, n, "input_forget", 0) != 0;
    char dir[32];
    const char *dv = imp_attr_str(I, n, "direction", "forward", dir, sizeof dir);
    int reverse_only = !strcmp(dv, "reverse");
    if (strcmp(dv, "forward") && !reverse_only && strcmp(dv, "bidirectional"))
        return imp_fail(
            I, n, "attribute 'direction' = '%s' is not forward, reverse or bidirectional", dv);
    c->ndir = !strcmp(dv, "bidirectional") ? 2 : 1;
    const Onnx__AttributeProto *cl =
        imp_attr(I, n, "clip", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    c->clip = -1;
    if (cl) {
        if (!(cl->f > 0) || cl->f > 3.4e38f)
            return imp_fail(I, n, "attribute 'clip' must be positive and finite, not %g",
                            (double)cl->f);
        c->clip = cl->f;
    }
    int64_t xd[3] = {0}, wd[3] = {0}, rd[3] = {0};
    if (input_dims(I, n, in[0], 0, 3, xd) < 0 || input_dims(I, n, in[1], 1, 3, wd) < 0 ||
        input_dims(I, n, in[2], 2, 3, rd) < 0)
        return -1;
    const gtensor_type *xt = imp_type(I, in[0]);
    if (xt->dtype != KILN_FLOAT32 && xt->dtype != KILN_FLOAT64)
        return imp_fail(I, n, "X must be float32 or float64, not %s", kiln_dtype_name(xt->dtype));
    c->S = xd[c->layout ? 1 : 0];
    c->B = xd[c->layout ? 0 : 1];
    c->In = xd[2];
    c->H = imp_attr_int(I, n, "hidden_size", rd[2]);
    if (c->H != rd[2] || c->H < 1)
        return imp_fail(I, n, "hidden_size %lld does not match R's last dim %lld", (long long)c->H,
                        (long long)rd[2]);
    int64_t G = c->gates * c->H, steps;
    if (!kiln_mul_ok(c->S, c->ndir, &steps) || steps > RNN_MAX_STEPS)
        return imp_fail(I, n,
                        "%lld time steps times %d direction(s) is more than the %d steps a node "
                        "may unroll",
                        (long long)c->S, c->ndir, RNN_MAX_STEPS);
    if (c->S < 1)
        return imp_fail(I, n, "X has no time steps");
    int64_t w_want[3] = {c->ndir, G, c->In}, r_want[3] = {c->ndir, G, c->H};
    int64_t b_want[2] = {c->ndir, 2 * G}, p_want[2] = {c->ndir, 3 * c->H};
    int64_t s_want[1] = {c->B}, h_want[3] = {c->ndir, c->B, c->H};
    if (check_input(I, n, in, 1, 3, w_want) < 0 || check_input(I, n, in, 2, 3, r_want) < 0 ||
        check_input(I, n, in, 3, 2, b_want) < 0 || check_input(I, n, in, 7, 2, p_want) < 0)
        return -1;
    for (int i = 1; i < 8; i++) {
        const gtensor_type *t = in[i] >= 0 && i != 4 ? imp_type(I, in[i]) : NULL;
        if (t && t->dtype != xt->dtype)
            return imp_fail(I, n, "input %d ('%s') is %s, X is %s", i, n->input[i],
                            kiln_dtype_name(t->dtype), kiln_dtype_name(xt->dtype));
    }
    if (in[4] >= 0) {
        if (check_input(I, n, in, 4, 1, s_want) < 0)
            return -1;
        const gtensor_type *t = imp_type(I, in[4]);
        if (t->dtype != KILN_INT32 && t->dtype != KILN_INT64)
            return imp_fail(I, n, "sequence_lens must be int32, not %s", kiln_dtype_name(t->dtype));
    }
    /* initial_h and initial_c as [ndir, B, H] */
    for (int i = 5; i < 7; i++) {
        if (in[i] >= 0 && c->layout) {
            int64_t want[3] = {c->B, c->ndir, c->H};
            if (check_input(I, n, in, i, 3, want) < 0)
                return -1;
            in[i] = imp_call(I, n, "transpose", 1, &in[i], "axes=[1, 0, 2]");
            if (in[i] < 0)
                return -1;
        } else if (check_input(I, n, in, i, 3, h_want) < 0) {
            return -1;
        }
    }
    static const char *const rnn_def[] = {"Tanh"}, *const gru_def[] = {"Sigmoid", "Tanh"},
                             *const lstm_def[] = {"Sigmoid", "Tanh", "Tanh"};
    c->nact = c->gates == 1 ? 1 : c->gates == 3 ? 2 : 3;
    const char *const *def = c->kind == K_RNN ? rnn_def : c->kind == K_GRU ? gru_def : lstm_def;
    if (parse_acts(I, n, c->ndir, c->nact, def, c->act) < 0)
        return -1;
    return reverse_only;
}

/* RNN, GRU and LSTM: X, W, R, B, sequence_lens, initial_h (, initial_c, P)
 * -> Y, Y_h (, Y_c). */
int cvt_rnn(imp *I, const Onnx__NodeProto *n, int *outs) {
    int in[8];
    for (int i = 0; i < 8; i++)
        in[i] = imp_input(I, n, i);
    rnn_cfg c;
    int reverse_only = rnn_config(I, n, in, &c);
    if (reverse_only < 0)
        return -1;
    int x = in[0];
    if (c.layout && (x = imp_call(I, n, "transpose", 1, &x, "axes=[1, 0, 2]")) < 0)
        return -1;
    int want_y = n->n_output > 0 && n->output[0][0];
    int ys[2], hs[2], cs[2];
    for (int d = 0; d < c.ndir; d++) {
        int reverse = reverse_only || d == 1, xd = x;
        if (reverse && in[4] >= 0) {
            int rin[2] = {x, in[4]};
            TRY(xd = imp_call(I, n, "reverse_sequence", 2, rin, "batch_axis=1, time_axis=0"));
        }
        int64_t sb_in[2] = {c.S * c.B, c.In};
        TRY(xd = cvt_reshape_to(I, n, xd, 2, sb_in));
        TRY(run_dir(I, n, &c, d, reverse, xd, in, want_y ? &ys[d] : NULL, &hs[d], &cs[d]));
    }
    /* join the directions: Y [S, ndir, B, H], Y_h and Y_c [ndir, B, H] */
    int *parts[3] = {ys, hs, cs}, axis[3] = {1, 0, 0};
    for (int k = 0; k < 3; k++) {
        if ((size_t)k >= n->n_output || !n->output[k][0])
            continue;
        if (k == 2 && c.kind != K_LSTM)
            break;
        int v = parts[k][0];
        if (c.ndir == 2) {
            char attrs[16];
            snprintf(attrs, sizeof attrs, "axis=%d", axis[k]);
            v = imp_call(I, n, "concatenate", 2, parts[k], attrs);
        }
        if (v >= 0 && c.layout)
            v = imp_call(I, n, "transpose", 1, &v, k ? "axes=[1, 0, 2]" : "axes=[2, 0, 1, 3]");
        if ((outs[k] = v) < 0)
            return -1;
    }
    return 0;
}

/* ---- Einsum --------------------------------------------------------------------- */

/* Index labels: 'A'-'Z' are 0-25, 'a'-'z' 26-51 (so label order is
 * numpy's implicit output order), ellipsis dims 52 on, right-aligned. */
#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + MAXD)
#define EIN_MAX_OPS 64

typedef struct {
    int id, nd;
    int lab[MAXD];
    int64_t dim[MAXD];
} ein_term;

static int ein_letter(char ch) {
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return 26 + ch - 'a';
    return -1;
}

/* One term's labels (spaces removed) into lab: the count of letters and
 * *ell the position of "..." (-1 none); -1 if malformed. */
static int ein_parse_term(const char *s, size_t len, int *lab, int *ell) {
    int k = 0;
    *ell = -1;
    for (size_t i = 0; i < len;) {
        if (s[i] == '.') {
            if (*ell >= 0 || i + 3 > len || s[i + 1] != '.' || s[i + 2] != '.')
                return -1;
            *ell = k;
            i += 3;
            continue;
        }
        int l = ein_letter(s[i++]);
        if (l < 0 || k >= MAXD)
            return -1;
        lab[k++] = l;
    }
    return k;
}

/* Term t's labels with its ellipsis expanded to its rank (ellipsis dims
 * numbered so that the last is EIN_LETTERS + emax - 1). */
static int ein_expand(const int *lab, int k, int ell, int rank, int emax, ein_term *t) {
    int e = ell < 0 ? 0 : rank - k;
    if (e < 0 || (ell < 0 && rank != k))
        return -1;
    t->nd = 0;
    for (int i = 0; i <= k; i++) {
        if (i == ell)
            for (int j = 0; j < e; j++)
                t->lab[t->nd++] = EIN_LETTERS + emax - e + j;
        if (i < k)
            t->lab[t->nd++] = lab[i];
    }
    return 0;
}

/* Apply perm (of t->nd) to t with a transpose (none for the identity). */
static int ein_permute(imp *I, const Onnx__NodeProto *n, ein_term *t, const int *perm) {
    int64_t p[MAXD];
    int ident = 1;
    ein_term o = *t;
    for (int i = 0; i < t->nd; i++) {
        p[i] = perm[i];
        ident &= perm[i] == i;
        o.lab[i] = t->lab[perm[i]];
        o.dim[i] = t->dim[perm[i]];
    }
    if (!ident) {
        kstr a;
        kstr_init(&a);
        cvt_ints_attr(&a, "axes", t->nd, p);
        o.id = imp_call(I, n, "transpose", 1, &t->id, a.buf);
        kstr_free(&a);
    }
    *t = o;
    return t->id;
}

/* Take the diagonals of the labels t repeats: axes p < q of one label are
 * moved last, flattened, and every (n+1)-th element kept. */
static int ein_diagonals(imp *I, const Onnx__NodeProto *n, ein_term *t) {
    for (int p = 0; p < t->nd; p++)
        for (int q = p + 1; q < t->nd; q++) {
            if (t->lab[p] != t->lab[q])
                continue;
            if (t->dim[p] != t->dim[q])
                return imp_fail(I, n, "a repeated index has dims %lld and %lld",
                                (long long)t->dim[p], (long long)t->dim[q]);
            int perm[MAXD], k = 0;
            for (int i = 0; i < t->nd; i++)
                if (i != p && i != q)
                    perm[k++] = i;
            perm[k++] = p;
            perm[k++] = q;
            if (ein_permute(I, n, t, perm) < 0)
                return -1;
            int64_t m = t->dim[t->nd - 1], flat[MAXD];
            for (int i = 0; i < t->nd - 2; i++)
                flat[i] = t->dim[i];
            flat[t->nd - 2] = m * m;
            char attrs[128];
            snprintf(attrs, sizeof attrs, "begin=[0], end=[%lld], strides=[%lld], axes=[%d]",
                     (long long)(m * m), (long long)(m + 1), t->nd - 2);
            int f = cvt_reshape_to(I, n, t->id, t->nd - 1, flat);
            t->id = f < 0 ? -1 : imp_call(I, n, "strided_slice", 1, &f, attrs);
            t->nd--;
            if (t->id < 0)
                return -1;
            p = -1; /* start over: the axes moved */
            break;
        }
    return 0;
}

/* Sum t over the labels with keep[label] == 0. */
static int ein_sum_out(imp *I, const Onnx__NodeProto *n, ein_term *t, const int *keep) {
    int64_t axes[MAXD];
    int na = 0, k = 0;
    ein_term o = *t;
    for (int i = 0; i < t->nd; i++) {
        if (keep[t->lab[i]]) {
            o.lab[k] = t->lab[i];
            o.dim[k++] = t->dim[i];
        } else {
            axes[na++] = i;
        }
    }
    if (!na)
        return 0;
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "axis", na, axes);
    o.id = imp_call(I, n, "sum", 1, &t->id, a.buf);
    kstr_free(&a);
    o.nd = k;
    *t = o;
    return t->id < 0 ? -1 : 0;
}

/* The axis of t with index l, or -1. */
static int ein_find(const ein_term *t, int l) {
    for (int i = 0; i < t->nd; i++)
        if (t->lab[i] == l)
            return i;
    return -1;
}

static int ein_has(const ein_term *t, int l) {
    return ein_find(t, l) >= 0;
}

/* Append index l of size dim to t; -1 with an error past MAXD dims. */
static int ein_push(imp *I, const Onnx__NodeProto *n, ein_term *t, int l, int64_t dim) {
    if (t->nd >= MAXD)
        return imp_fail(I, n, "an intermediate result would have more than %d dims", MAXD);
    t->lab[t->nd] = l;
    t->dim[t->nd++] = dim;
    return 0;
}

/* Contract a with b: labels both have are batch dims if still needed
 * (needed[label]) and summed if not; a's own ones and b's own ones follow.
 * One nn.batch_matmul of [batch, left, k] and [batch, k, right]. */
static int ein_contract(imp *I, const Onnx__NodeProto *n, ein_term *a, ein_term *b,
                        const int *needed) {
    int pa[MAXD], pb[MAXD], na = 0, nb = 0;
    int64_t sz[4] = {1, 1, 1, 1}; /* batch, left, contracted, right */
    ein_term r = {-1, 0, {0}, {0}};
    for (int kind = 0; kind < 3; kind++) /* a's batch, own, then contracted indices */
        for (int i = 0; i < a->nd; i++) {
            int l = a->lab[i], j = ein_find(b, l);
            if (kind != (j < 0 ? 1 : needed[l] ? 0 : 2))
                continue;
            if (j >= 0 && a->dim[i] != b->dim[j])
                return imp_fail(I, n, "an index has dims %lld and %lld in two operands",
                                (long long)a->dim[i], (long long)b->dim[j]);
            pa[na++] = i;
            if (j >= 0)
                pb[nb++] = j;
            sz[kind] *= a->dim[i];
            if (kind < 2 && ein_push(I, n, &r, l, a->dim[i]) < 0)
                return -1;
        }
    for (int j = 0; j < b->nd; j++)
        if (!ein_has(a, b->lab[j])) {
            pb[nb++] = j;
            sz[3] *= b->dim[j];
            if (ein_push(I, n, &r, b->lab[j], b->dim[j]) < 0)
                return -1;
        }
    if (ein_permute(I, n, a, pa) < 0 || ein_permute(I, n, b, pb) < 0)
        return -1;
    int64_t ad[3] = {sz[0], sz[1], sz[2]}, bd[3] = {sz[0], sz[2], sz[3]};
    int in[2];
    TRY(in[0] = cvt_reshape_to(I, n, a->id, 3, ad));
    TRY(in[1] = cvt_reshape_to(I, n, b->id, 3, bd));
    r.id = cvt_reshape_to(I, n, imp_call(I, n, "nn.batch_matmul", 2, in, NULL), r.nd, r.dim);
    *a = r;
    return r.id;
}

/* Einsum: the equation's terms against the inputs, then diagonals, sums
 * of indices one operand alone has, pairwise contractions left to right,
 * and the output's order. */
int cvt_einsum(imp *I, const Onnx__NodeProto *n, int *outs) {
    char eq[512];
    const char *raw = imp_attr_str(I, n, "equation", "", eq, sizeof eq);
    size_t len = 0;
    char buf[512];
    for (const char *p = raw; *p && len + 1 < sizeof buf; p++)
        if (*p != ' ')
            buf[len++] = *p;
    buf[len] = 0;
    int nin = imp_ninputs(n);
    if (nin > EIN_MAX_OPS)
        return imp_fail(I, n, "%d operands: at most %d are supported", nin, EIN_MAX_OPS);
    const char *arrow = strstr(buf, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - buf) : len;
    ein_term t[EIN_MAX_OPS];
    int raw_lab[EIN_MAX_OPS][MAXD], nlab[EIN_MAX_OPS], ell[EIN_MAX_OPS], emax = 0, k = 0;
    for (size_t s = 0; s <= lhs_len; k++) {
        size_t e = s;
        while (e < lhs_len && buf[e] != ',')
            e++;
        if (k >= nin)
            return imp_fail(I, n, "equation '%s' has more terms than the %d inputs", raw, nin);
        const gtensor_type *ty = imp_type(I, imp_input(I, n, k));
        if (!ty || !cvt_concrete(ty))
            return imp_fail(I, n, "input %d must be a tensor of known dims", k);
        if ((nlab[k] = ein_parse_term(buf + s, e - s, raw_lab[k], &ell[k])) < 0)
            return imp_fail(I, n, "equation '%s': term %d is malformed", raw, k);
        if (ell[k] >= 0 && ty->ndim - nlab[k] > emax)
            emax = ty->ndim - nlab[k];
        s = e + 1;
    }
    if (k != nin)
        return imp_fail(I, n, "equation '%s' has %d terms for %d inputs", raw, k, nin);
    int64_t size[EIN_LABELS];
    int count[EIN_LABELS] = {0};
    for (int i = 0; i < EIN_LABELS; i++)
        size[i] = -1;
    for (k = 0; k < nin; k++) {
        const gtensor_type *ty = imp_type(I, imp_input(I, n, k));
        t[k].id = imp_input(I, n, k);
        if (ein_expand(raw_lab[k], nlab[k], ell[k], ty->ndim, emax, &t[k]) < 0)
            return imp_fail(I, n, "equation '%s': term %d has %d indices, input %d is %d-D", raw, k,
                            nlab[k], k, ty->ndim);
        for (int i = 0; i < t[k].nd; i++) {
            int l = t[k].lab[i];
            t[k].dim[i] = ty->dims[i].v;
            count[l]++;
            if (size[l] >= 0 && size[l] != t[k].dim[i] && (l < EIN_LETTERS || t[k].dim[i] != 1))
                if (l < EIN_LETTERS || size[l] != 1)
                    return imp_fail(I, n, "equation '%s': an index has dims %lld and %lld", raw,
                                    (long long)size[l], (long long)t[k].dim[i]);
            if (size[l] < 0 || size[l] == 1)
                size[l] = t[k].dim[i];
        }
    }
    /* the output's labels */
    int out[EIN_LABELS], nout = 0, in_out[EIN_LABELS] = {0};
    if (arrow) {
        int olab[MAXD], oell;
        int no = ein_parse_term(arrow + 2, len - lhs_len - 2, olab, &oell);
        if (no < 0 || (oell >= 0 && emax + no > MAXD))
            return imp_fail(I, n, "equation '%s': the output term is malformed", raw);
        ein_term o;
        ein_expand(olab, no, oell, oell >= 0 ? no + emax : no, emax, &o);
        for (int i = 0; i < o.nd; i++) {
            int l = o.lab[i];
            if (in_out[l] || !count[l])
                return imp_fail(I, n, "equation '%s': output index %d is repeated or in no input",
                                raw, i);
            in_out[l] = 1;
            out[nout++] = l;
        }
    } else {
        for (int l = 0; l < EIN_LABELS; l++) {
            int lab = l < MAXD ? EIN_LETTERS + l : l - MAXD; /* ellipsis dims first */
            if (lab < EIN_LETTERS + emax && count[lab] && (lab >= EIN_LETTERS || count[lab] == 1)) {
                in_out[lab] = 1;
                out[nout++] = lab;
            }
        }
    }
    /* broadcast size-1 ellipsis dims, take diagonals */
    for (k = 0; k < nin; k++) {
        int bc = 0;
        int64_t full[MAXD];
        for (int i = 0; i < t[k].nd; i++) {
            full[i] = size[t[k].lab[i]];
            bc |= full[i] != t[k].dim[i];
        }
        if (bc) {
            kstr a;
            kstr_init(&a);
            cvt_ints_attr(&a, "shape", t[k].nd, full);
            t[k].id = imp_call(I, n, "broadcast_to", 1, &t[k].id, a.buf);
            kstr_free(&a);
            memcpy(t[k].dim, full, sizeof full);
            if (t[k].id < 0)
                return -1;
        }
        if (ein_diagonals(I, n, &t[k]) < 0)
            return -1;
    }
    /* contract left to right; needed: in the output or a later operand */
    ein_term acc = t[0];
    for (k = 0; k < nin; k++) {
        int needed[EIN_LABELS];
        for (int l = 0; l < EIN_LABELS; l++)
            needed[l] = in_out[l];
        for (int j = k + 1; j < nin; j++)
            for (int i = 0; i < t[j].nd; i++)
                needed[t[j].lab[i]] = 1;
        if (k > 0) {
            /* b's own labels not needed anywhere else are summed first */
            int keep_b[EIN_LABELS];
            for (int l = 0; l < EIN_LABELS; l++)
                keep_b[l] = needed[l] || ein_has(&acc, l);
            if (ein_sum_out(I, n, &t[k], keep_b) < 0 || ein_contract(I, n, &acc, &t[k], needed) < 0)
                return -1;
        } else {
            int keep[EIN_LABELS];
            for (int l = 0; l < EIN_LABELS; l++)
                keep[l] = needed[l] || (nin > 1 && ein_has(&t[1], l));
            if (ein_sum_out(I, n, &acc, keep) < 0)
                return -1;
        }
    }
    int perm[MAXD];
    for (int i = 0; i < nout; i++)
        for (int j = 0; j < acc.nd; j++)
            if (acc.lab[j] == out[i])
                perm[i] = j;
    if (acc.nd != nout)
        return imp_fail(I, n, "internal: Einsum left %d indices for %d outputs", acc.nd, nout);
    return outs[0] = ein_permute(I, n, &acc, perm);
}

#undef TRY
