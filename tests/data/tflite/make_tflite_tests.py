"""make_tflite_tests.py: small hand-made TFLite models for kiln's TFLite
reader and importer tests, and the fuzz corpus. Pure Python (no
tensorflow, no flatbuffers package): a minimal FlatBuffer writer laid out
front to back, against tensorflow/lite/schema/schema.fbs.

    python3 make_tflite_tests.py [--data DIR] [--corpus DIR]

writes DIR/ok_*.tflite (valid models the importer must take), bad_*.tflite
(malformed or inconsistent models it must reject with an error, never a
crash: truncations, bad offsets, cyclic and overlapping vtables, huge
vector lengths, a wrong identifier, bad union types, out-of-range indices,
negative shapes, ...) and unsupported_ops.tflite; the same files are the
seeds of the fuzz corpus (tests/fuzz/corpus/tflite). Deterministic: running
it again writes the same bytes.
"""
import argparse
import os
import struct

# ---- a FlatBuffer writer -------------------------------------------------------------
# Objects are written after what refers to them (offsets are unsigned and
# point forward): a table's offset fields are patched once their children
# are written.


class Off:
    """An offset field: `write(fb)` writes the child and returns its position."""

    def __init__(self, write):
        self.write = write


class FB:
    def __init__(self):
        self.buf = bytearray(8)
        self.marks = {}

    def pad(self, n, extra=0):
        while (len(self.buf) + extra) % n:
            self.buf.append(0)

    def table(self, fields, mark=None):
        """fields: {slot: (struct format, value) or Off}."""
        items = sorted(fields.items())
        nslots = (max(fields) + 1) if fields else 0
        # the table's inline layout after its 4-byte soffset
        layout, off = [], 4
        for slot, v in items:
            fmt = "I" if isinstance(v, Off) else v[0]
            size = struct.calcsize("<" + fmt)
            while off % size:
                off += 1
            layout.append((slot, off, fmt, v))
            off += size
        tlen = off
        vt = struct.pack("<HH", 4 + 2 * nslots, tlen)
        offs = [0] * nslots
        for slot, o, _, _ in layout:
            offs[slot] = o
        vt += struct.pack("<%dH" % nslots, *offs)
        self.pad(2)
        vpos = len(self.buf)
        self.buf += vt
        self.pad(8)
        pos = len(self.buf)
        body = bytearray(tlen)
        struct.pack_into("<i", body, 0, pos - vpos)
        for slot, o, fmt, v in layout:
            if not isinstance(v, Off):
                struct.pack_into("<" + fmt, body, o, v[1])
        self.buf += body
        if mark:
            self.marks[mark] = pos
            self.marks[mark + ".vtable"] = vpos
        for slot, o, fmt, v in layout:
            if isinstance(v, Off):
                child = v.write(self)
                struct.pack_into("<I", self.buf, pos + o, child - (pos + o))
                if mark:
                    self.marks["%s.%d" % (mark, slot)] = pos + o
        return pos

    def vector(self, fmt, values, mark=None):
        size = struct.calcsize("<" + fmt)
        self.pad(max(4, size), 4)
        pos = len(self.buf)
        self.buf += struct.pack("<I", len(values))
        self.buf += struct.pack("<%d%s" % (len(values), fmt), *values)
        if mark:
            self.marks[mark] = pos
        return pos

    def string(self, s):
        self.pad(4)
        pos = len(self.buf)
        b = s.encode()
        self.buf += struct.pack("<I", len(b)) + b + b"\0"
        return pos

    def tables(self, tables, mark=None):
        """A vector of tables, each a fields dict."""
        self.pad(4)
        pos = len(self.buf)
        self.buf += struct.pack("<I", len(tables)) + bytes(4 * len(tables))
        for i, t in enumerate(tables):
            child = self.table(t, mark="%s[%d]" % (mark, i) if mark else None)
            slot = pos + 4 + 4 * i
            struct.pack_into("<I", self.buf, slot, child - slot)
        return pos

    def finish(self, root_fields, ident=b"TFL3"):
        root = self.table(root_fields, mark="model")
        struct.pack_into("<I", self.buf, 0, root)
        self.buf[4:8] = ident
        return bytes(self.buf)


# ---- TFLite models ---------------------------------------------------------------------

FLOAT32, FLOAT16, INT32, INT8 = 0, 1, 2, 9
ADD, AVG_POOL, CONCAT, CONV, DWCONV, DEQUANTIZE = 0, 1, 2, 3, 4, 6
FC, MAX_POOL, RELU, RESHAPE, SOFTMAX, PAD = 9, 17, 19, 22, 25, 34
GATHER, TRANSPOSE, MEAN, STRIDED_SLICE, SPLIT, PACK, QUANTIZE = 36, 39, 40, 45, 49, 83, 114
CUSTOM, LSTM, WHILE = 32, 16, 119


def floats(vals):
    return struct.pack("<%df" % len(vals), *vals)


def ramp(n, scale=0.1, shift=0.0):
    return [((i * 37) % 17 - 8) * scale + shift for i in range(n)]


def model(tensors, ops, inputs, outputs, buffers, codes):
    """tensors: dicts (shape, type, buffer, name, quant=(scales, zps, dim));
    ops: (opcode index, inputs, outputs, options type, options fields);
    buffers: bytes (index 0 is the empty sentinel); codes: builtin codes or
    ("custom", name)."""

    def tensor_fields(t):
        f = {0: Off(lambda fb, s=t["shape"]: fb.vector("i", s)), 1: ("b", t["type"]),
             2: ("I", t.get("buffer", 0)), 3: Off(lambda fb, n=t["name"]: fb.string(n))}
        if "quant" in t:
            sc, zp, dim = t["quant"]
            f[4] = Off(lambda fb, sc=sc, zp=zp, dim=dim: fb.table(
                {2: Off(lambda fb: fb.vector("f", sc)), 3: Off(lambda fb: fb.vector("q", zp)),
                 6: ("i", dim)}))
        return f

    def op_fields(o):
        code, ins, outs, otype, opts = o
        f = {0: ("I", code), 1: Off(lambda fb, v=ins: fb.vector("i", v)),
             2: Off(lambda fb, v=outs: fb.vector("i", v))}
        if otype:
            f[3] = ("B", otype)
            f[4] = Off(lambda fb, opts=opts: fb.table(opts))
        return f

    def code_fields(c):
        if isinstance(c, tuple):
            return {0: ("b", CUSTOM), 1: Off(lambda fb, n=c[1]: fb.string(n)), 3: ("i", CUSTOM)}
        return {0: ("b", min(c, 127)), 2: ("i", 1), 3: ("i", c)}

    def subgraph(fb):
        return fb.tables([{
            0: Off(lambda fb: fb.tables([tensor_fields(t) for t in tensors], mark="tensor")),
            1: Off(lambda fb: fb.vector("i", inputs, mark="sg.inputs")),
            2: Off(lambda fb: fb.vector("i", outputs)),
            3: Off(lambda fb: fb.tables([op_fields(o) for o in ops], mark="op")),
            4: Off(lambda fb: fb.string("main"))}], mark="subgraph")

    def buffer_tables(fb):
        return fb.tables([{0: Off(lambda fb, b=b: fb.vector("B", list(b), mark="bufdata"))}
                          if b else {} for b in buffers], mark="buffer")

    fb = FB()
    data = fb.finish({0: ("I", 3),
                      1: Off(lambda fb: fb.tables([code_fields(c) for c in codes], mark="code")),
                      2: Off(subgraph), 3: Off(lambda fb: fb.string("kiln test model")),
                      4: Off(buffer_tables)})
    return data, fb.marks


def conv_float():
    """input [1,5,5,2] -> CONV_2D 3x3 SAME stride 2 + bias, RELU6 -> ADD const
    -> MEAN [1,2] -> FULLY_CONNECTED [4,3] -> SOFTMAX."""
    w = floats(ramp(4 * 3 * 3 * 2))
    b = floats([0.1, -0.2, 0.3, 0.0])
    c = floats(ramp(4, 0.05))
    fw = floats(ramp(3 * 4, 0.2))
    tensors = [
        {"shape": [1, 5, 5, 2], "type": FLOAT32, "name": "input"},
        {"shape": [4, 3, 3, 2], "type": FLOAT32, "buffer": 1, "name": "conv/w"},
        {"shape": [4], "type": FLOAT32, "buffer": 2, "name": "conv/b"},
        {"shape": [1, 3, 3, 4], "type": FLOAT32, "name": "conv"},
        {"shape": [4], "type": FLOAT32, "buffer": 3, "name": "add/c"},
        {"shape": [1, 3, 3, 4], "type": FLOAT32, "name": "add"},
        {"shape": [2], "type": INT32, "buffer": 4, "name": "mean/axes"},
        {"shape": [1, 4], "type": FLOAT32, "name": "mean"},
        {"shape": [3, 4], "type": FLOAT32, "buffer": 5, "name": "fc/w"},
        {"shape": [1, 3], "type": FLOAT32, "name": "fc"},
        {"shape": [1, 3], "type": FLOAT32, "name": "probs"},
    ]
    ops = [
        (0, [0, 1, 2], [3], 1, {0: ("b", 0), 1: ("i", 2), 2: ("i", 2), 3: ("b", 3)}),
        (1, [3, 4], [5], 11, {}),
        (2, [5, 6], [7], 27, {}),
        (3, [7, 8, -1], [9], 8, {}),
        (4, [9], [10], 9, {0: ("f", 1.0)}),
    ]
    bufs = [b"", w, b, c, struct.pack("<2i", 1, 2), fw]
    return model(tensors, ops, [0], [10], bufs, [CONV, ADD, MEAN, FC, SOFTMAX])


def int8_model():
    """float input -> QUANTIZE int8 -> CONV_2D int8 (per-channel weights,
    int32 bias) -> DEPTHWISE_CONV_2D -> AVERAGE_POOL_2D -> DEQUANTIZE."""
    wq = struct.pack("<%db" % (3 * 1 * 1 * 2), 10, -20, 30, -40, 50, -60)
    bq = struct.pack("<3i", 100, -50, 0)
    dq = struct.pack("<%db" % (1 * 3 * 3 * 3), *[((i * 11) % 21) - 10 for i in range(27)])
    tensors = [
        {"shape": [1, 4, 4, 2], "type": FLOAT32, "name": "input"},
        {"shape": [1, 4, 4, 2], "type": INT8, "name": "q", "quant": ([0.02], [3], 0)},
        {"shape": [3, 1, 1, 2], "type": INT8, "buffer": 1, "name": "w",
         "quant": ([0.01, 0.02, 0.03], [0, 0, 0], 0)},
        {"shape": [3], "type": INT32, "buffer": 2, "name": "b",
         "quant": ([0.0002, 0.0004, 0.0006], [0, 0, 0], 0)},
        {"shape": [1, 4, 4, 3], "type": INT8, "name": "conv", "quant": ([0.015], [-2], 0)},
        {"shape": [1, 3, 3, 3], "type": INT8, "buffer": 3, "name": "dw",
         "quant": ([0.05, 0.04, 0.03], [0, 0, 0], 3)},
        {"shape": [1, 4, 4, 3], "type": INT8, "name": "dwconv", "quant": ([0.03], [1], 0)},
        {"shape": [1, 2, 2, 3], "type": INT8, "name": "pool", "quant": ([0.03], [1], 0)},
        {"shape": [1, 2, 2, 3], "type": FLOAT32, "name": "output"},
    ]
    ops = [
        (0, [0], [1], 0, {}),
        (1, [1, 2, 3], [4], 1, {0: ("b", 1), 1: ("i", 1), 2: ("i", 1), 3: ("b", 1)}),
        (2, [4, 5, -1], [6], 2, {0: ("b", 0), 1: ("i", 1), 2: ("i", 1), 3: ("i", 1)}),
        (3, [6], [7], 5, {0: ("b", 1), 1: ("i", 2), 2: ("i", 2), 3: ("i", 2), 4: ("i", 2)}),
        (4, [7], [8], 0, {}),
    ]
    return model(tensors, ops, [0], [8], [b"", wq, bq, dq],
                 [QUANTIZE, CONV, DWCONV, AVG_POOL, DEQUANTIZE])


def fp16_model():
    """A float16 weight behind DEQUANTIZE, then CONV_2D 1x1 and MAX_POOL_2D."""
    w = struct.pack("<6e", 0.5, -1.0, 0.25, 2.0, -0.125, 1.5)
    tensors = [
        {"shape": [1, 4, 4, 2], "type": FLOAT32, "name": "input"},
        {"shape": [3, 1, 1, 2], "type": FLOAT16, "buffer": 1, "name": "w16"},
        {"shape": [3, 1, 1, 2], "type": FLOAT32, "name": "w"},
        {"shape": [1, 4, 4, 3], "type": FLOAT32, "name": "conv"},
        {"shape": [1, 2, 2, 3], "type": FLOAT32, "name": "pool"},
    ]
    ops = [
        (0, [1], [2], 0, {}),
        (1, [0, 2, -1], [3], 1, {0: ("b", 1), 1: ("i", 1), 2: ("i", 1)}),
        (2, [3], [4], 5, {0: ("b", 0), 1: ("i", 2), 2: ("i", 2), 3: ("i", 2), 4: ("i", 2)}),
    ]
    return model(tensors, ops, [0], [4], [b"", w], [DEQUANTIZE, CONV, MAX_POOL])


def shapes_model():
    """RESHAPE, TRANSPOSE, STRIDED_SLICE (shrink), PAD, CONCATENATION, GATHER,
    SPLIT and PACK on a [2, 6] input."""
    i32 = lambda *v: struct.pack("<%di" % len(v), *v)  # noqa: E731
    tensors = [
        {"shape": [2, 6], "type": FLOAT32, "name": "x"},                      # 0
        {"shape": [3], "type": INT32, "buffer": 1, "name": "shape"},          # 1
        {"shape": [2, 3, 2], "type": FLOAT32, "name": "r"},                   # 2
        {"shape": [3], "type": INT32, "buffer": 2, "name": "perm"},           # 3
        {"shape": [2, 2, 3], "type": FLOAT32, "name": "t"},                   # 4
        {"shape": [3], "type": INT32, "buffer": 3, "name": "begin"},          # 5
        {"shape": [3], "type": INT32, "buffer": 4, "name": "end"},            # 6
        {"shape": [3], "type": INT32, "buffer": 5, "name": "strides"},        # 7
        {"shape": [2, 3], "type": FLOAT32, "name": "s"},                      # 8
        {"shape": [2, 2], "type": INT32, "buffer": 6, "name": "pads"},        # 9
        {"shape": [3, 5], "type": FLOAT32, "name": "p"},                      # 10
        {"shape": [3, 10], "type": FLOAT32, "name": "c"},                      # 11
        {"shape": [2], "type": INT32, "buffer": 7, "name": "idx"},            # 12
        {"shape": [2, 10], "type": FLOAT32, "name": "g"},                      # 13
        {"shape": [], "type": INT32, "buffer": 8, "name": "axis"},            # 14
        {"shape": [2, 5], "type": FLOAT32, "name": "h0"},                     # 15
        {"shape": [2, 5], "type": FLOAT32, "name": "h1"},                     # 16
        {"shape": [2, 2, 5], "type": FLOAT32, "name": "stack"},               # 17
    ]
    ops = [
        (0, [0, 1], [2], 17, {}),
        (1, [2, 3], [4], 26, {}),
        (2, [4, 5, 6, 7], [8], 32, {1: ("i", 4), 4: ("i", 1)}),
        (3, [8, 9], [10], 22, {}),
        (4, [10, 10], [11], 10, {0: ("i", -1)}),
        (5, [11, 12], [13], 23, {0: ("i", 0)}),
        (6, [14, 13], [15, 16], 35, {0: ("i", 2)}),
        (7, [15, 16], [17], 59, {0: ("i", 2), 1: ("i", 0)}),
    ]
    bufs = [b"", i32(2, 3, 2), i32(0, 2, 1), i32(0, 0, 0), i32(1, 2, 3), i32(1, 1, 1),
            i32(0, 1, 1, 1), i32(2, 0), i32(1)]
    return model(tensors, ops, [0], [17], bufs,
                 [RESHAPE, TRANSPOSE, STRIDED_SLICE, PAD, CONCAT, GATHER, SPLIT, PACK])


def hybrid_fc():
    """Dynamic-range FULLY_CONNECTED: float input [2, 8], int8 filter [3, 8]
    with per-channel scales, float bias, asymmetric_quantize_inputs."""
    w = [((i * 29) % 23) - 11 for i in range(24)]
    tensors = [
        {"shape": [2, 8], "type": FLOAT32, "name": "x"},
        {"shape": [3, 8], "type": INT8, "buffer": 1, "name": "w",
         "quant": ([0.02, 0.05, 0.01], [0, 0, 0], 0)},
        {"shape": [3], "type": FLOAT32, "buffer": 2, "name": "b"},
        {"shape": [2, 3], "type": FLOAT32, "name": "y"},
    ]
    ops = [(0, [0, 1, 2], [3], 8, {3: ("B", 1)})]
    return model(tensors, ops, [0], [3], [b"", struct.pack("<24b", *w),
                                          floats([0.5, -0.25, 0.125])], [FC])


def unsupported_model():
    """CUSTOM 'MyOp' twice, LSTM and WHILE, between supported ops."""
    tensors = [{"shape": [1, 4], "type": FLOAT32, "name": "t%d" % i} for i in range(6)]
    ops = [(0, [0], [1], 0, {}), (1, [1], [2], 0, {}), (2, [2], [3], 0, {}),
           (1, [3], [4], 0, {}), (3, [4], [5], 0, {})]
    return model(tensors, ops, [0], [5], [b""], [RELU, ("custom", "MyOp"), LSTM, WHILE])


# ---- malformed variants -----------------------------------------------------------------


def patched(data, pos, fmt, value):
    b = bytearray(data)
    struct.pack_into("<" + fmt, b, pos, value)
    return bytes(b)


def malformed(ok, marks):
    """(name, bytes) of broken copies of a valid model and its marks."""
    m = marks
    out = []
    for n in (0, 3, 7, 8, 12, 40, len(ok) // 2, len(ok) - 1):
        out.append(("truncated_%d" % n, ok[:n]))
    out.append(("wrong_identifier", ok[:4] + b"TFL2" + ok[8:]))
    out.append(("root_past_end", patched(ok, 0, "I", len(ok) + 16)))
    out.append(("root_misaligned", patched(ok, 0, "I", m["model"] + 1)))
    out.append(("vtable_before_start", patched(ok, m["model"], "i", m["model"] + 64)))
    out.append(("vtable_past_end", patched(ok, m["model"], "i", -len(ok))))
    out.append(("vtable_cyclic", patched(ok, m["model"], "i", 0)))  # the table is its own vtable
    out.append(("vtable_huge", patched(ok, m["model.vtable"], "H", 0xfffe)))
    out.append(("table_length_huge", patched(ok, m["model.vtable"] + 2, "H", 0xfff0)))
    # the subgraph's "vtable" inside the description string's bytes ("kiln ...")
    sg = m["subgraph[0]"]
    desc = m["model.3"] + struct.unpack_from("<I", ok, m["model.3"])[0] + 4
    out.append(("vtable_inside_string", patched(ok, sg, "i", sg - desc)))
    # the operator's vtable inside its own table (soffset -4: its fields' bytes)
    op = m["op[0]"]
    out.append(("vtable_overlapping_table", patched(ok, op, "i", -4)))
    out.append(("offset_past_end", patched(ok, m["model.2"], "I", len(ok))))
    out.append(("vector_length_huge", patched(ok, m["sg.inputs"], "I", 0x7fffffff)))
    out.append(("vector_length_max", patched(ok, m["sg.inputs"], "I", 0xffffffff)))
    out.append(("tensor_vector_huge", patched(ok, m["subgraph[0].0"] +
                                              struct.unpack_from("<I", ok, m["subgraph[0].0"])[0],
                                              "I", 0x40000000)))
    out.append(("input_index_out_of_range", patched(ok, m["sg.inputs"] + 4, "i", 1000)))
    out.append(("input_index_negative", patched(ok, m["sg.inputs"] + 4, "i", -5)))
    return out


def bad_models():
    """Structurally valid FlatBuffers with inconsistent TFLite contents."""
    out = []
    _, _ = conv_float()
    t = [{"shape": [1, 4], "type": FLOAT32, "name": "a"},
         {"shape": [1, 4], "type": FLOAT32, "name": "b"}]
    relu = [RELU]
    out.append(("op_tensor_out_of_range", model(t, [(0, [7], [1], 0, {})], [0], [1], [b""], relu)))
    out.append(("opcode_out_of_range", model(t, [(5, [0], [1], 0, {})], [0], [1], [b""], relu)))
    out.append(("negative_shape", model([dict(t[0], shape=[1, -4]), t[1]],
                                        [(0, [0], [1], 0, {})], [0], [1], [b""], relu)))
    out.append(("rank_too_high", model([dict(t[0], shape=[1] * 40), t[1]],
                                       [(0, [0], [1], 0, {})], [0], [1], [b""], relu)))
    out.append(("buffer_out_of_range", model([t[0], dict(t[1], buffer=9)],
                                             [(0, [1], [0], 0, {})], [], [0], [b""], relu)))
    out.append(("buffer_size_mismatch", model([t[0], dict(t[1], buffer=1)],
                                              [(0, [1], [0], 0, {})], [], [0],
                                              [b"", b"\0" * 7], relu)))
    out.append(("read_before_written", model(t, [(0, [1], [0], 0, {})], [], [0], [b""], relu)))
    out.append(("written_twice", model(t + [dict(t[1], name="c")],
                                       [(0, [0], [1], 0, {}), (0, [0], [1], 0, {})],
                                       [0], [1], [b""], relu)))
    out.append(("scale_count_mismatch", model(
        [dict(t[0], type=INT8, quant=([0.1, 0.2, 0.3], [0, 0, 0], 1)), t[1]],
        [(0, [0], [1], 0, {})], [0], [1], [b""], relu)))
    out.append(("quantized_dimension_out_of_range", model(
        [dict(t[0], type=INT8, quant=([0.1] * 4, [0] * 4, 5)), t[1]],
        [(0, [0], [1], 0, {})], [0], [1], [b""], relu)))
    out.append(("negative_scale", model([dict(t[0], type=INT8, quant=([-0.5], [0], 0)), t[1]],
                                        [(0, [0], [1], 0, {})], [0], [1], [b""], relu)))
    out.append(("no_subgraph_output", model(t, [(0, [0], [1], 0, {})], [0], [], [b""], relu)))
    conv_t = [{"shape": [1, 4, 4, 2], "type": FLOAT32, "name": "x"},
              {"shape": [3, 2, 2], "type": FLOAT32, "buffer": 1, "name": "w"},
              {"shape": [1, 4, 4, 3], "type": FLOAT32, "name": "y"}]
    out.append(("conv_filter_3d", model(conv_t, [(0, [0, 1], [2], 1, {})], [0], [2],
                                        [b"", b"\0" * 48], [CONV])))
    out.append(("conv_stride_zero", model(
        [conv_t[0], dict(conv_t[1], shape=[3, 1, 1, 2]), conv_t[2]],
        [(0, [0, 1], [2], 1, {1: ("i", 0), 2: ("i", 1)})], [0], [2], [b"", b"\0" * 24], [CONV])))
    # a union type the op does not have (Pool2DOptions' slots read as conv's)
    out.append(("bad_union_type", model(
        [conv_t[0], dict(conv_t[1], shape=[3, 1, 1, 2]), conv_t[2]],
        [(0, [0, 1], [2], 200, {0: ("i", -7), 1: ("q", -1)})], [0], [2],
        [b"", b"\0" * 24], [CONV])))
    out.append(("reshape_bad_shape", model(
        [t[0], {"shape": [2], "type": INT32, "buffer": 1, "name": "s"}, t[1]],
        [(0, [0, 1], [2], 17, {})], [0], [2], [b"", struct.pack("<2i", 3, -1)], [RESHAPE])))
    return [(n, d[0]) for n, d in out]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=here)
    ap.add_argument("--corpus", default=os.path.join(here, "..", "..", "fuzz", "corpus", "tflite"))
    a = ap.parse_args()
    files = {}
    for name, make in [("conv_float", conv_float), ("int8", int8_model), ("fp16", fp16_model),
                       ("shapes", shapes_model), ("hybrid_fc", hybrid_fc)]:
        data, marks = make()
        files["ok_%s.tflite" % name] = data
        if name == "conv_float":
            for bad, b in malformed(data, marks):
                files["bad_%s.tflite" % bad] = b
            # the subgraph table sharing the model table's vtable (both have
            # fields 0 to 4 at the same offsets): legal, as flatc dedups vtables
            sg = marks["subgraph[0]"]
            files["ok_shared_vtable.tflite"] = patched(data, sg, "i", sg - marks["model.vtable"])
    for bad, b in bad_models():
        files["bad_%s.tflite" % bad] = b
    files["unsupported_ops.tflite"] = unsupported_model()[0]
    for d in (a.data, a.corpus):
        os.makedirs(d, exist_ok=True)
        for name, data in sorted(files.items()):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    print("wrote %d files to %s and %s" % (len(files), a.data, a.corpus))


if __name__ == "__main__":
    main()
