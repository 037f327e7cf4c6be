"""The PyTorch frontend's converters, part 2: convolutions, normalizations,
pooling, resizing, and torch's fused attention and encoder-layer kernels
(see _pytorch_ops.py for the converters' contract and part 1).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Sequence

from ..graph import Node
from ._pytorch_ops import (
    Converter,
    _arg_names,
    _binary,
    _call,
    _cat,
    _gelu,
    _ints,
    _linear,
    _numel,
    _pieces,
    _reshape,
    _slice,
    registrar,
)

#: "aten::NAME" -> its converter (this file's part)
TABLE: Dict[str, Converter] = {}
_op = registrar(TABLE)


# ---- convolution and normalization -------------------------------------------------------

def _conv(cv: Any, x: Node, w: Any, b: Any, stride: Any, padding: Any, dilation: Any,
          transposed: bool, output_padding: Any, groups: int) -> Node:
    wn = cv.tensor(w)
    ws = cv.shape(wn)
    nsp = len(ws) - 2
    if nsp == 1:  # conv1d as a conv2d of height 1
        xs = cv.shape(x)
        x2 = _reshape(cv, x, [xs[0], xs[1], 1, xs[2]])
        w2 = _reshape(cv, wn, [ws[0], ws[1], 1, ws[2]])
        if isinstance(padding, str):  # [before, after] as [top, left, bottom, right]
            before, after = _same_padding(cv, x, ws, stride, dilation, padding)
            padding = [0, before, 0, after]
        else:
            padding = [0] + _ints(padding, 1)
        y = _conv(cv, x2, w2, b, [1] + _ints(stride, 1), padding,
                  [1] + _ints(dilation, 1), transposed, [0] + _ints(output_padding or [0], 1),
                  groups)
        ys = cv.shape(y)
        return _reshape(cv, y, [ys[0], ys[1], ys[3]])
    if nsp not in (2, 3):
        cv.fail(f"a {nsp}-D convolution is not supported")
    if isinstance(padding, str):
        padding = _same_padding(cv, x, ws, stride, dilation, padding)
    pad = _ints(padding, nsp)
    if len(pad) == nsp:
        pad = pad + pad
    attrs = dict(strides=_ints(stride, nsp), padding=pad, dilation=_ints(dilation, nsp),
                 groups=int(groups))
    if transposed:
        if nsp != 2:
            cv.fail("only 2-D transposed convolutions are supported")
        y = _call(cv, "nn.conv2d_transpose", x, wn,
                  output_padding=_ints(output_padding or [0], nsp), **attrs)
    else:
        op = "nn.conv2d" if nsp == 2 else "nn.conv3d"
        y = _call(cv, op, x, wn, channels=ws[0], kernel_size=list(ws[2:]), **attrs)
    if b is None:
        return y
    return _call(cv, "nn.bias_add", y, cv.tensor(b), axis=1)


def _same_padding(cv: Any, x: Node, ws: Sequence[int], stride: Any, dilation: Any,
                  mode: str) -> List[int]:
    nsp = len(ws) - 2
    if mode == "valid":
        return [0] * (2 * nsp)
    if mode != "same":
        cv.fail(f"padding={mode!r} is not 'same' or 'valid'")
    if any(s != 1 for s in _ints(stride, nsp)):
        cv.fail("padding='same' needs stride 1")
    before, after = [], []
    for k, d in zip(ws[2:], _ints(dilation, nsp)):
        total = d * (k - 1)
        before.append(total // 2)
        after.append(total - total // 2)
    return before + after


@_op("_convolution")
def _convolution(cv: Any, x: Node, w: Any, b: Any, stride: Any, padding: Any, dilation: Any,
                 transposed: Any, output_padding: Any, groups: int, *rest: Any) -> Node:
    return _conv(cv, x, w, b, stride, padding, dilation, bool(transposed), output_padding,
                 groups)


@_op("conv1d", "conv2d", "conv3d", "_convolution_mode")
def _conv_nd(cv: Any, x: Node, w: Any, b: Any = None, stride: Any = 1, padding: Any = 0,
             dilation: Any = 1, groups: int = 1) -> Node:
    return _conv(cv, x, w, b, stride, padding, dilation, False, None, groups)


@_op("conv_transpose2d")
def _conv_transpose2d(cv: Any, x: Node, w: Any, b: Any = None, stride: Any = 1,
                      padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                      dilation: Any = 1) -> Node:
    return _conv(cv, x, w, b, stride, padding, dilation, True, output_padding, groups)


@_op("batch_norm")
def _batch_norm(cv: Any, x: Node, w: Any, b: Any, mean: Any, var: Any, training: Any,
                momentum: Any = 0.1, eps: Any = 1e-5, *rest: Any) -> Node:
    if training:
        cv.fail("batch_norm in training mode: call module.eval() before converting")
    if mean is None or var is None:
        cv.fail("batch_norm without running statistics (track_running_stats=False) is not "
                "supported")
    c = cv.shape(x)[1]
    ones, zeros = cv.torch.ones(c), cv.torch.zeros(c)
    ins = [cv.tensor(v if v is not None else d) for v, d in ((w, ones), (b, zeros), (mean, None),
                                                            (var, None))]
    return _call(cv, "nn.batch_norm", x, *ins, epsilon=float(eps))


@_op("layer_norm")
def _layer_norm(cv: Any, x: Node, shape: Sequence[int], w: Any = None, b: Any = None,
                eps: Any = 1e-5, *rest: Any) -> Node:
    nd = len(cv.shape(x))
    shape = [int(d) for d in shape]
    if list(cv.shape(x)[nd - len(shape):]) != shape:
        cv.fail(f"normalized_shape {shape} is not the last dims of {list(cv.shape(x))}")
    w = w if w is not None else cv.torch.ones(shape)
    b = b if b is not None else cv.torch.zeros(shape)
    return _call(cv, "nn.layer_norm", x, cv.tensor(w), cv.tensor(b), axis=nd - len(shape),
                 epsilon=float(eps))


def _channel_affine(cv: Any, y: Node, w: Any, b: Any) -> Node:
    """y * w + b with w and b per channel (dim 1)."""
    nd = len(cv.shape(y))
    for v, op in ((w, "multiply"), (b, "add")):
        if v is not None:
            c = cv.tensor(v, y)
            y = _call(cv, op, y, _reshape(cv, c, [cv.shape(c)[0]] + [1] * (nd - 2)))
    return y


@_op("group_norm")
def _group_norm(cv: Any, x: Node, groups: int, w: Any = None, b: Any = None, eps: Any = 1e-5,
                *rest: Any) -> Node:
    s = list(cv.shape(x))
    if s[1] % int(groups):
        cv.fail(f"{s[1]} channels do not split into {groups} groups")
    g = _reshape(cv, x, [s[0], int(groups), _numel(s) // s[0] // int(groups)])
    y = _reshape(cv, _call(cv, "nn.layer_norm", g, axis=2, epsilon=float(eps)), s)
    return _channel_affine(cv, y, w, b)


@_op("instance_norm")
def _instance_norm(cv: Any, x: Node, w: Any, b: Any, mean: Any, var: Any, use_input_stats: Any,
                   momentum: Any = 0.1, eps: Any = 1e-5, *rest: Any) -> Node:
    if not use_input_stats:
        return _batch_norm(cv, x, w, b, mean, var, False, momentum, eps)
    y = _call(cv, "nn.layer_norm", x, axis=2, epsilon=float(eps))
    return _channel_affine(cv, y, w, b)


@_op("prelu")
def _prelu(cv: Any, x: Node, w: Any) -> Node:
    nd = len(cv.shape(x))
    wn = cv.tensor(w, x)
    if nd >= 2 and cv.shape(wn)[0] > 1:
        wn = _reshape(cv, wn, [cv.shape(wn)[0]] + [1] * (nd - 2))
    neg = _call(cv, "multiply", x, wn)
    return _call(cv, "where", _call(cv, "greater_equal", x, cv.tensor(0.0, x)), x, neg)


# ---- pooling ------------------------------------------------------------------------------

def _pool_args(cv: Any, x: Node, kernel: Any, stride: Any, padding: Any) -> Dict[str, Any]:
    n = len(cv.shape(x)) - 2
    if n not in (2, 3):
        cv.fail(f"pooling of a {n + 2}-D tensor (NCHW or NCDHW)")
    k = _ints(kernel, n)
    s = _ints(stride, n) if stride not in (None, []) else k
    p = _ints(padding, n)
    return dict(pool_size=k, strides=s, padding=p + p)


@_op("max_pool2d", "max_pool3d")
def _max_pool(cv: Any, x: Node, kernel: Any, stride: Any = None, padding: Any = 0,
              dilation: Any = 1, ceil_mode: Any = False) -> Node:
    a = _pool_args(cv, x, kernel, stride, padding)
    return _call(cv, f"nn.max_pool{len(a['pool_size'])}d", x,
                 dilation=_ints(dilation, len(a["pool_size"])), ceil_mode=1 if ceil_mode else 0,
                 **a)


@_op("avg_pool2d", "avg_pool3d")
def _avg_pool(cv: Any, x: Node, kernel: Any, stride: Any = None, padding: Any = 0,
              ceil_mode: Any = False, count_include_pad: Any = True,
              divisor_override: Any = None) -> Node:
    if divisor_override is not None:
        cv.fail("average pooling with divisor_override is not supported")
    a = _pool_args(cv, x, kernel, stride, padding)
    return _call(cv, f"nn.avg_pool{len(a['pool_size'])}d", x, ceil_mode=1 if ceil_mode else 0,
                 count_include_pad=1 if count_include_pad else 0, **a)


def _adaptive(cv: Any, x: Node, out: Any, reduce: str) -> Node:
    """Adaptive pooling of NCHW or NCDHW to ``out`` (None keeps a dim)."""
    s = cv.shape(x)
    nsp = len(s) - 2
    if nsp not in (2, 3):
        cv.fail(f"adaptive pooling of a {len(s)}-D tensor (NCHW or NCDHW)")
    sizes = [out] * nsp if isinstance(out, int) else list(out) * (nsp if len(out) == 1 else 1)
    out = [s[2 + k] if o is None else int(o) for k, o in enumerate(sizes)]
    if nsp == 2 and out == [1, 1]:
        return _call(cv, "nn.global_avg_pool2d" if reduce == "mean" else
                     "nn.global_max_pool2d", x)
    if all(o == 1 for o in out):
        return _call(cv, reduce, x, axis=list(range(2, 2 + nsp)), keepdims=1)
    if all(d % o == 0 for d, o in zip(s[2:], out)):
        k = [d // o for d, o in zip(s[2:], out)]
        if all(v == 1 for v in k):
            return x
        op = f"nn.{'avg' if reduce == 'mean' else 'max'}_pool{nsp}d"
        return _call(cv, op, x, pool_size=k, strides=k)
    # separable: each output slab along one spatial axis, then the next,
    # over torch's windows [floor(i n / o), ceil((i + 1) n / o))
    for axis in range(2, 2 + nsp):
        n, o = cv.shape(x)[axis], out[axis - 2]
        rows = [_call(cv, reduce, _slice(cv, x, axis, (i * n) // o, -(-((i + 1) * n) // o)),
                      axis=[axis], keepdims=1) for i in range(o)]
        x = rows[0] if o == 1 else _cat(cv, rows, axis)
    return x


@_op("adaptive_avg_pool2d", "adaptive_avg_pool3d")
def _adaptive_avg_pool(cv: Any, x: Node, out: Any) -> Node:
    return _adaptive(cv, x, out, "mean")


@_op("adaptive_max_pool2d", "adaptive_max_pool3d")
def _adaptive_max_pool(cv: Any, x: Node, out: Any) -> Any:
    y = _adaptive(cv, x, out, "max")
    return (y, None) if len(list(cv.node.outputs())) > 1 else y  # indices: not computed


def _as_2d(cv: Any, x: Node, fn: Callable[[Node], Node]) -> Node:
    """A 1-D op on [N, C, L] as its 2-D form on [N, C, 1, L]."""
    s = cv.shape(x)
    if len(s) != 3:
        cv.fail(f"a 1-D pool of a {len(s)}-D tensor (N, C, L only)")
    y = fn(_reshape(cv, x, [s[0], s[1], 1, s[2]]))
    ys = cv.shape(y)
    return _reshape(cv, y, [ys[0], ys[1], ys[3]])


@_op("max_pool1d")
def _max_pool1d(cv: Any, x: Node, kernel: Any, stride: Any = None, padding: Any = 0,
                dilation: Any = 1, ceil_mode: Any = False) -> Node:
    st = [1] + _ints(stride, 1) if stride not in (None, []) else None
    return _as_2d(cv, x, lambda y: _max_pool(cv, y, [1] + _ints(kernel, 1), st,
                                              [0] + _ints(padding, 1),
                                              [1] + _ints(dilation, 1), ceil_mode))


@_op("avg_pool1d")
def _avg_pool1d(cv: Any, x: Node, kernel: Any, stride: Any = None, padding: Any = 0,
                ceil_mode: Any = False, count_include_pad: Any = True) -> Node:
    st = [1] + _ints(stride, 1) if stride not in (None, []) else None
    return _as_2d(cv, x, lambda y: _avg_pool(cv, y, [1] + _ints(kernel, 1), st,
                                              [0] + _ints(padding, 1), ceil_mode,
                                              count_include_pad))


@_op("adaptive_avg_pool1d")
def _adaptive_avg_pool1d(cv: Any, x: Node, out: Any) -> Node:
    return _as_2d(cv, x, lambda y: _adaptive(cv, y, [1] + _ints(out, 1), "mean"))


def _upsample(cv: Any, x: Node, size: Any, scales: Any, method: str, coord: str) -> Node:
    s = list(cv.shape(x))
    nsp = len(s) - 2
    attrs: Dict[str, Any] = dict(method=method, coordinate_transformation_mode=coord)
    if size is not None:
        out = s[:2] + _ints(size, nsp)
    elif scales is not None and all(f is not None for f in scales):
        scales = [float(f) for f in (scales * nsp if len(scales) == 1 else scales)]
        out = s[:2] + [int(math.floor(d * f)) for d, f in zip(s[2:], scales)]
        attrs["scales"] = [1.0, 1.0] + scales  # torch samples at 1/scale_factor
    else:
        cv.fail("upsampling needs an output size or scale factors")
    if method == "nearest":
        attrs["rounding_method"] = "floor"
    return _call(cv, "image.resize", x, size=out, **attrs)


def _scales_of(cv: Any, rest: Sequence[Any]) -> Any:
    """The scale factors of upsample's (..., scales_h, scales_w) overload."""
    return None if not rest or any(r is None for r in rest) else list(rest)


@_op("upsample_nearest2d", "upsample_nearest1d", "upsample_nearest3d")
def _upsample_nearest(cv: Any, x: Node, size: Any, *rest: Any) -> Node:
    scales = rest[0] if "scale_factors" in _arg_names(cv) else _scales_of(cv, rest)
    return _upsample(cv, x, size, scales, "nearest", "asymmetric")


@_op("upsample_bilinear2d", "upsample_linear1d", "upsample_trilinear3d")
def _upsample_linear(cv: Any, x: Node, size: Any, align_corners: Any, *rest: Any) -> Node:
    scales = rest[0] if "scale_factors" in _arg_names(cv) else _scales_of(cv, rest)
    coord = "align_corners" if align_corners else "pytorch_half_pixel"
    return _upsample(cv, x, size, scales, "linear", coord)


# ---- attention: torch's fused inference kernels --------------------------------------------

def _heads(cv: Any, x: Node, h: int) -> Node:
    """[B, T, E] -> [B, H, T, E/H]."""
    b, t, e = cv.shape(x)
    return _call(cv, "transpose", _reshape(cv, x, [b, t, h, e // h]), axes=[0, 2, 1, 3])


def _masked_softmax(cv: Any, scores: Node, mask: Any, mask_type: Any) -> Node:
    """torch's masked softmax over [B, H, T, S] scores: a key padding mask
    [B, S] (mask_type 1) or an attention mask [T, S] (0); a boolean mask
    excludes its True entries, a float mask is added. (A row with every key
    masked, where torch gives NaN, averages all values here.)"""
    b, _, t, s = cv.shape(scores)
    m = cv.tensor(mask)
    ms = cv.shape(m)
    if mask_type == 1 or (mask_type is None and ms == (b, s)):
        m = _reshape(cv, m, [b, 1, 1, s]) if ms == (b, s) else None
    elif mask_type == 0 or mask_type is None:
        m = _reshape(cv, m, [1, 1, t, s]) if ms == (t, s) else None
    if m is None:
        cv.fail(f"an attention mask of shape {list(ms)} (mask_type {mask_type}) is not "
                f"[B, S] = {[b, s]} or [T, S] = {[t, s]}")
    if cv.dtype(m) != "bool":
        return _call(cv, "nn.softmax", _binary(cv, "add", scores, m), axis=-1)
    scores = _call(cv, "where", m, cv.tensor(-1e30, scores), scores)
    return _call(cv, "nn.softmax", scores, axis=-1)


def _attention(cv: Any, q: Node, k: Node, v: Node, e: int, h: int, qkv_w: Any, qkv_b: Any,
               proj_w: Any, proj_b: Any, mask: Any, mask_type: Any) -> List[Node]:
    """torch's native multi-head attention on [B, T, E] inputs: the
    output and the per-head attention weights [B, H, T, S]."""
    if len(cv.shape(q)) != 3:
        cv.fail(f"fused attention on a {len(cv.shape(q))}-D input (only [B, T, E])")
    if q == k and k == v:  # self-attention: one projection
        qkv = _linear(cv, q, qkv_w, qkv_b)
        qp, kp, vp = _pieces(cv, qkv, 2, [e, e, e])
    else:
        ws = [qkv_w[i * e:(i + 1) * e] if not isinstance(qkv_w, Node) else
              _slice(cv, qkv_w, 0, i * e, (i + 1) * e) for i in range(3)]
        bs = [qkv_b[i * e:(i + 1) * e] if not isinstance(qkv_b, Node) else
              _slice(cv, qkv_b, 0, i * e, (i + 1) * e) for i in range(3)]
        qp, kp, vp = (_linear(cv, x, w, b) for x, w, b in zip((q, k, v), ws, bs))
    d = e // h
    qh = _binary(cv, "multiply", _heads(cv, qp, h), 1.0 / math.sqrt(d))
    scores = _call(cv, "nn.batch_matmul", qh, _heads(cv, kp, h), transpose_b=1)
    if mask is None:
        attn = _call(cv, "nn.softmax", scores, axis=-1)
    else:
        attn = _masked_softmax(cv, scores, mask, mask_type)
    out = _call(cv, "nn.batch_matmul", attn, _heads(cv, vp, h))
    bsz, t = cv.shape(q)[0], cv.shape(q)[1]
    out = _reshape(cv, _call(cv, "transpose", out, axes=[0, 2, 1, 3]), [bsz, t, e])
    return [_linear(cv, out, proj_w, proj_b), attn]


@_op("_native_multi_head_attention")
def _native_mha(cv: Any, q: Node, k: Node, v: Node, e: int, h: int, qkv_w: Any, qkv_b: Any,
                proj_w: Any, proj_b: Any, mask: Any = None, need_weights: Any = True,
                average: Any = True, mask_type: Any = None) -> Any:
    out, attn = _attention(cv, q, k, v, int(e), int(h), qkv_w, qkv_b, proj_w, proj_b, mask,
                           mask_type)
    if not need_weights:
        return out, None
    return out, (_call(cv, "mean", attn, axis=[1]) if average else attn)


@_op("_transformer_encoder_layer_fwd")
def _encoder_layer(cv: Any, src: Node, e: int, h: int, qkv_w: Any, qkv_b: Any, proj_w: Any,
                   proj_b: Any, use_gelu: Any, norm_first: Any, eps: Any, n1w: Any, n1b: Any,
                   n2w: Any, n2b: Any, w1: Any, b1: Any, w2: Any, b2: Any, mask: Any = None,
                   mask_type: Any = None) -> Node:
    e, h = int(e), int(h)
    shape = [e]

    def norm(x: Node, w: Any, b: Any) -> Node:
        return _layer_norm(cv, x, shape, w, b, eps)

    x = norm(src, n1w, n1b) if norm_first else src
    a = _attention(cv, x, x, x, e, h, qkv_w, qkv_b, proj_w, proj_b, mask, mask_type)[0]
    x = _call(cv, "add", src, a)
    if not norm_first:
        x = norm(x, n1w, n1b)
    y = norm(x, n2w, n2b) if norm_first else x
    y = _linear(cv, y, w1, b1)
    y = _gelu(cv, y) if use_gelu else _call(cv, "nn.relu", y)
    x = _call(cv, "add", x, _linear(cv, y, w2, b2))
    return x if norm_first else norm(x, n2w, n2b)
