"""Writes tests/data/rnn_nodes: node tests in the ONNX backend layout for
RNN, GRU, LSTM and Einsum (their converters in
src/frontend/onnx_convert_rnn.c), run by kiln_conformance --data (the
rnn_node_tests test in tests/CMakeLists.txt).

They cover what the ONNX node tests miss: the reverse and bidirectional
directions, sequence_lens (with the reverse direction too), activations
with activation_alpha and activation_beta, clip, GRU's linear_before_reset,
LSTM's peepholes and input_forget, layout 1 with initial states, every
optional output (Y, Y_h, Y_c, some left out), opset 7 and float64; Einsum
with an implicit output, three operands, a trace, an index three times in
one operand, broadcast ellipses, an outer product, a sum of everything and
upper-case indices. The expected outputs are computed here with plain loops
in float64 from the operator definitions (each batch entry's steps walked
on their own, without kiln's unrolling), and np.einsum, independently of
kiln.

It also writes tests/data/rnn_bad: models the importer must refuse with a
clear error (tests/unit/test_frontend_onnx_rnn.c).

Run with /usr/bin/python3 (Debian's python3-onnx); it rewrites the folders."""
import os
import shutil

import numpy as np
import onnx
from onnx import helper
from onnx.mapping import NP_TYPE_TO_TENSOR_TYPE

from node_test_writer import Writer, node

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "rnn_nodes")
BAD = os.path.join(HERE, "rnn_bad")
RNG = np.random.default_rng(12)

# ---- references ------------------------------------------------------------------

# name: (function of x, alpha, beta; default alpha, beta; how many it takes)
ACTS = {
    "Relu": (lambda x, a, b: np.maximum(x, 0), None, None, 0),
    "Tanh": (lambda x, a, b: np.tanh(x), None, None, 0),
    "Sigmoid": (lambda x, a, b: 1 / (1 + np.exp(-x)), None, None, 0),
    "Affine": (lambda x, a, b: a * x + b, 1.0, 0.0, 2),
    "LeakyRelu": (lambda x, a, b: np.where(x < 0, a * x, x), 0.01, None, 1),
    "ScaledTanh": (lambda x, a, b: a * np.tanh(b * x), 1.0, 1.0, 2),
    "HardSigmoid": (lambda x, a, b: np.clip(a * x + b, 0, 1), 0.2, 0.5, 2),
    "Elu": (lambda x, a, b: np.where(x < 0, a * (np.exp(x) - 1), x), 1.0, None, 1),
}


def make_acts(names, alphas, betas):
    """The functions, alpha and beta taken in order by those that have them."""
    alphas, betas, out = list(alphas), list(betas), []
    for nm in names:
        f, a, b, k = ACTS[nm]
        if k >= 1 and alphas:
            a = alphas.pop(0)
        if k >= 2 and betas:
            b = betas.pop(0)
        out.append(lambda x, f=f, a=a, b=b: f(x, a, b))
    return out


def recurrent(kind, X, W, R, B=None, lens=None, h0=None, c0=None, P=None, direction="forward",
              acts=None, alphas=(), betas=(), clip=None, lbr=0, input_forget=0, layout=0):
    """Y, Y_h, Y_c of RNN/GRU/LSTM in float64 (Y_c None but for LSTM)."""
    X, W, R = (np.asarray(a, np.float64) for a in (X, W, R))
    if layout:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    S, Bn, _ = X.shape
    nd, H = W.shape[0], R.shape[2]
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    per = {"RNN": 1, "GRU": 2, "LSTM": 3}[kind]
    default = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
               "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    fs = make_acts(acts or default * nd, alphas, betas)
    B = np.zeros((nd, 2 * G * H)) if B is None else np.asarray(B, np.float64)
    lens = [S] * Bn if lens is None else list(lens)
    h0 = np.zeros((nd, Bn, H)) if h0 is None else np.asarray(h0, np.float64)
    c0 = np.zeros((nd, Bn, H)) if c0 is None else np.asarray(c0, np.float64)
    P = np.zeros((nd, 3 * H)) if P is None else np.asarray(P, np.float64)
    cl = (lambda v: v) if clip is None else (lambda v: np.clip(v, -clip, clip))
    Y, Yh, Yc = np.zeros((S, nd, Bn, H)), np.zeros((nd, Bn, H)), np.zeros((nd, Bn, H))
    for d in range(nd):
        f = [lambda v, k=k: fs[d * per + k](cl(v)) for k in range(per)]
        w, r, wb, rb = W[d], R[d], B[d, :G * H], B[d, G * H:]
        gw = lambda x, g: w[g * H:(g + 1) * H] @ x + wb[g * H:(g + 1) * H]
        gr = lambda h, g: r[g * H:(g + 1) * H] @ h + rb[g * H:(g + 1) * H]
        rev = direction == "reverse" or d == 1
        for b in range(Bn):
            h, c = h0[d, b].copy(), c0[d, b].copy()
            steps = range(lens[b] - 1, -1, -1) if rev else range(lens[b])
            for t in steps:
                x = X[t, b]
                if kind == "RNN":
                    h = f[0](gw(x, 0) + gr(h, 0))
                elif kind == "GRU":
                    z = f[0](gw(x, 0) + gr(h, 0))
                    rr = f[0](gw(x, 1) + gr(h, 1))
                    if lbr:
                        hh = f[1](gw(x, 2) + rr * gr(h, 2))
                    else:
                        hh = f[1](gw(x, 2) + gr(rr * h, 2))
                    h = (1 - z) * hh + z * h
                else:
                    pi, po, pf = P[d, :H], P[d, H:2 * H], P[d, 2 * H:]
                    i = f[0](gw(x, 0) + gr(h, 0) + pi * c)
                    fg = 1 - i if input_forget else f[0](gw(x, 2) + gr(h, 2) + pf * c)
                    cc = f[1](gw(x, 3) + gr(h, 3))
                    c = fg * c + i * cc
                    o = f[0](gw(x, 1) + gr(h, 1) + po * c)
                    h = o * f[2](c)
                Y[t, d, b] = h
            Yh[d, b], Yc[d, b] = h, c
    if layout:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return Y, Yh, (Yc if kind == "LSTM" else None)


put = None  # the Writer, made in main (it empties OUT)


def rnn_test(name, kind, opset, shapes, outputs, dtype=np.float32, lens=None, **attrs):
    """One recurrent test: shapes (S, B, In, H, ndir), the optional inputs
    named in attrs["with"], outputs the names of Y, Y_h, Y_c given."""
    S, Bn, In, H, nd = shapes
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    layout = attrs.get("layout", 0)
    rnd = lambda *s: (RNG.standard_normal(s) * 0.6).astype(dtype)
    with_ = attrs.pop("with_", ())
    vals = {"X": rnd(Bn, S, In) if layout else rnd(S, Bn, In), "W": rnd(nd, G * H, In),
            "R": rnd(nd, G * H, H)}
    if "B" in with_:
        vals["B"] = rnd(nd, 2 * G * H)
    if lens is not None:
        vals["sequence_lens"] = np.array(lens, np.int32)
    hshape = (Bn, nd, H) if layout else (nd, Bn, H)
    if "initial_h" in with_:
        vals["initial_h"] = rnd(*hshape)
    if "initial_c" in with_:
        vals["initial_c"] = rnd(*hshape)
    if "P" in with_:
        vals["P"] = rnd(nd, 3 * H)
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    names = [k if k in vals else "" for k in order]
    while names[-1] == "":
        names.pop()
    ref = recurrent(kind, vals["X"], vals["W"], vals["R"], vals.get("B"), lens,
                    vals.get("initial_h"), vals.get("initial_c"), vals.get("P"),
                    attrs.get("direction", "forward"), attrs.get("activations"),
                    attrs.get("activation_alpha", ()), attrs.get("activation_beta", ()),
                    attrs.get("clip"), attrs.get("linear_before_reset", 0),
                    attrs.get("input_forget", 0), layout)
    outs = [o if o in outputs else "" for o in ("Y", "Y_h", "Y_c")[:3 if kind == "LSTM" else 2]]
    while outs[-1] == "":
        outs.pop()
    expect = [(o, ref[i].astype(dtype)) for i, o in enumerate(outs) if o]
    put(name, [node(kind, names, outs, hidden_size=H, **attrs)],
        [(k, vals[k]) for k in order if k in vals], expect, opset)


def main():
    global put
    put = Writer(OUT, "kiln make_rnn_node_tests.py")
    rnn_test("rnn_bidirectional_leakyrelu_affine", "RNN", 14, (4, 3, 2, 5, 2), ["Y", "Y_h"],
             with_=("B", "initial_h"), direction="bidirectional",
             activations=["LeakyRelu", "Affine"], activation_alpha=[0.2, 0.5],
             activation_beta=[0.3])
    rnn_test("rnn_reverse_clip_seq_lens", "RNN", 14, (3, 3, 4, 2, 1), ["Y", "Y_h"],
             lens=[3, 1, 2], with_=("B",), direction="reverse", clip=0.5)
    rnn_test("rnn_opset7_elu_y_only", "RNN", 7, (3, 2, 3, 4, 1), ["Y"], with_=("B",),
             activations=["Elu"], activation_alpha=[0.7])
    rnn_test("gru_bidirectional_lbr_seq_lens", "GRU", 14, (4, 3, 3, 2, 2), ["Y", "Y_h"],
             lens=[4, 2, 3], with_=("B", "initial_h"), direction="bidirectional",
             linear_before_reset=1)
    rnn_test("gru_reverse_layout1_activations", "GRU", 14, (3, 2, 2, 3, 1), ["Y", "Y_h"],
             with_=("B", "initial_h"), direction="reverse", layout=1,
             activations=["HardSigmoid", "ScaledTanh"], activation_alpha=[0.3, 1.5],
             activation_beta=[0.4, 0.7])
    rnn_test("gru_lbr_no_bias_float64", "GRU", 7, (3, 2, 3, 2, 1), ["Y_h"], dtype=np.float64,
             linear_before_reset=1)
    rnn_test("lstm_bidirectional_peepholes_seq_lens_clip", "LSTM", 14, (4, 2, 3, 3, 2),
             ["Y", "Y_h", "Y_c"], lens=[4, 2], with_=("B", "initial_h", "initial_c", "P"),
             direction="bidirectional", clip=1.5)
    rnn_test("lstm_layout1_input_forget", "LSTM", 14, (3, 2, 2, 3, 1), ["Y", "Y_h", "Y_c"],
             with_=("B", "initial_h", "initial_c"), layout=1, input_forget=1)
    rnn_test("lstm_opset7_reverse_float64_y_c_only", "LSTM", 7, (3, 2, 2, 2, 1), ["Y_c"],
             dtype=np.float64, with_=("B", "P"), direction="reverse",
             activations=["HardSigmoid", "Relu", "Affine"], activation_alpha=[0.25, 0.5],
             activation_beta=[0.4, 0.1])
    # Einsum
    f32 = lambda *s: RNG.standard_normal(s).astype(np.float32)
    for name, eq, shapes in [
        ("implicit_matmul", "ij,jk", [(2, 3), (3, 4)]),
        ("three_operands", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
        ("trace_implicit", "ii", [(3, 3)]),
        ("diagonal_three_times", "iii->i", [(3, 3, 3)]),
        ("ellipsis_broadcast", "...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 4)]),
        ("outer", "i,j->ij", [(3,), (4,)]),
        ("sum_all", "ij->", [(3, 4)]),
        ("bilinear", "bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
        ("upper_case_spaces", "Ab, bC -> CA", [(2, 3), (3, 4)]),
        ("diagonal_and_sum", "iij,j->i", [(3, 3, 2), (2,)]),
    ]:
        xs = [f32(*s) for s in shapes]
        ins = ["x%d" % i for i in range(len(xs))]
        y = np.einsum(eq.replace(" ", ""), *[x.astype(np.float64) for x in xs])
        put("einsum_" + name, [node("Einsum", ins, ["y"], equation=eq)], list(zip(ins, xs)),
            [("y", np.asarray(y, np.float32))], 12)


def bad_models():
    """rnn_bad/NAME.onnx: one node named after the file."""
    if os.path.isdir(BAD):
        shutil.rmtree(BAD)
    os.makedirs(BAD)

    def save(name, op, ins, inputs, opset=14, **attrs):
        vi = lambda n, a: helper.make_tensor_value_info(n, NP_TYPE_TO_TENSOR_TYPE[a.dtype],
                                                        list(a.shape))
        outs = ["y"] if op == "Einsum" else ["", "y"]
        g = helper.make_graph([helper.make_node(op, ins, outs, name=name, **attrs)], name,
                              [vi(n, a) for n, a in inputs],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.save(m, os.path.join(BAD, name + ".onnx"))

    z = lambda *s: np.zeros(s, np.float32)
    x2 = [("a", z(2, 3)), ("b", z(2, 4))]
    save("bad_einsum_terms", "Einsum", ["a"], x2[:1], 12, equation="ij,jk->ik")
    save("bad_einsum_char", "Einsum", ["a"], x2[:1], 12, equation="i$->i")
    save("bad_einsum_two_ellipses", "Einsum", ["a"], x2[:1], 12, equation="...i...->i")
    save("bad_einsum_rank", "Einsum", ["a"], x2[:1], 12, equation="ijk->i")
    save("bad_einsum_output", "Einsum", ["a"], x2[:1], 12, equation="ij->ik")
    save("bad_einsum_output_twice", "Einsum", ["a"], x2[:1], 12, equation="ij->ii")
    save("bad_einsum_dims", "Einsum", ["a", "b"], x2, 12, equation="ij,ij->i")
    save("bad_einsum_diagonal_dims", "Einsum", ["a"], x2[:1], 12, equation="ii->i")
    rnn_in = lambda S, H=1, G=1, nd=1, In=1: [("X", z(S, 1, In)), ("W", z(nd, G * H, In)),
                                              ("R", z(nd, G * H, H))]
    save("bad_rnn_steps", "RNN", ["X", "W", "R"], rnn_in(5000))
    save("bad_rnn_bidirectional_steps", "RNN", ["X", "W", "R"], rnn_in(2049, nd=2),
         direction="bidirectional")
    save("bad_rnn_activation", "RNN", ["X", "W", "R"], rnn_in(2), activations=["Gelu"])
    save("bad_rnn_activation_count", "RNN", ["X", "W", "R"], rnn_in(2, nd=2),
         direction="bidirectional", activations=["Tanh"])
    save("bad_rnn_direction", "RNN", ["X", "W", "R"], rnn_in(2), direction="sideways")
    save("bad_rnn_hidden_size", "RNN", ["X", "W", "R"], rnn_in(2, H=2), hidden_size=3)
    save("bad_rnn_layout", "RNN", ["X", "W", "R"], rnn_in(2), layout=2)
    save("bad_rnn_clip", "RNN", ["X", "W", "R"], rnn_in(2), clip=-1.0)
    save("bad_lstm_w_shape", "LSTM", ["X", "W", "R"],
         [("X", z(2, 1, 3)), ("W", z(1, 7, 3)), ("R", z(1, 8, 2))])
    save("bad_gru_bias_shape", "GRU", ["X", "W", "R", "B"], rnn_in(2, G=3) + [("B", z(1, 5))])
    save("bad_rnn_x_rank", "RNN", ["X", "W", "R"], [("X", z(2, 1))] + rnn_in(2)[1:])
    save("bad_rnn_int_x", "RNN", ["X", "W", "R"],
         [("X", np.zeros((2, 1, 1), np.int32))] + rnn_in(2)[1:])


if __name__ == "__main__":
    main()
    bad_models()
