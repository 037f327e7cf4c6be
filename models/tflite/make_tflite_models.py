"""make_tflite_models.py: the TFLite test models, made with tensorflow-cpu
(Keras models with random weights, no download) and converted with the
TFLite converter; the reference outputs come from the TFLite interpreter.

    python make_tflite_models.py --out DIR [--full] [NAME ...]

For each model NAME it writes DIR/NAME.tflite and DIR/NAME_io.npz: the
inputs (keyed by the TFLite input tensor names) and the interpreter's
outputs (keyed by the output tensor names), plus "__kind" (0 float, 1 int8
or uint8 outputs: compare in quantization steps, 2 dynamic-range: TFLite's
hybrid kernels quantize activations on the fly, so compare loosely).

Narrow variants (the default, for CI): small widths and resolutions. --full
makes MobileNetV2 (alpha 1.0, 224x224), EfficientNet-lite0 (224x224) and a
4-layer BERT-like encoder (hidden 256, 4 heads, sequence 128) instead.

Models:
  mobilenet_v2_float, mobilenet_v2_fp16, mobilenet_v2_int8   keras.applications.MobileNetV2
  efficientnet_lite0_int8    EfficientNet-lite0 built here: MBConv blocks with ReLU6 and no
                             squeeze-excite, lite0's stages (kernel, stride, expand, channels,
                             repeats), stem 32 and head 1280 kept unscaled as lite does

The image models end in logits (100 classes narrow, 1000 full), not a
softmax: a softmax of random logits is near uniform, and in int8 (steps of
1/256) all but a few of its values are the same step, which compares
nothing; the encoder's attention has the softmaxes.
  resnet_block_float, resnet_block_int8   a ResNet-style stem and two residual blocks
  encoder_float, encoder_dynamic          a BERT-like encoder: token and position
                             embeddings, LayerNorm, multi-head attention, GELU FFN
  encoder_int8 (only when named)          the encoder, full-integer
  ops_misc_float             image, layout and small operators (a tf.function)
"""
import argparse
import os
import sys

import numpy as np
import tensorflow as tf

keras = tf.keras
L = keras.layers
RNG = np.random.default_rng(17)


def randomize_bn(model):
    """Random BatchNorm statistics so folding them into convolutions matters."""
    for layer in model.layers:
        if isinstance(layer, L.BatchNormalization):
            w = layer.get_weights()
            n = w[0].shape[0]
            new = []
            for i, a in enumerate(w):
                if i == 0:  # gamma
                    new.append(RNG.uniform(0.5, 1.5, n).astype(np.float32))
                elif i == 1:  # beta
                    new.append(RNG.uniform(-0.2, 0.2, n).astype(np.float32))
                elif i == 2:  # moving mean
                    new.append(RNG.uniform(-0.2, 0.2, n).astype(np.float32))
                else:  # moving variance
                    new.append(RNG.uniform(0.5, 1.5, n).astype(np.float32))
            layer.set_weights(new)
    return model


def mobilenet_v2(full):
    res, alpha, classes = (224, 1.0, 1000) if full else (64, 0.35, 100)
    return randomize_bn(keras.applications.MobileNetV2(weights=None, input_shape=(res, res, 3),
                                                       alpha=alpha, classes=classes,
                                                       classifier_activation=None))


def efficientnet_lite0(full):
    """EfficientNet-lite0: EfficientNet-B0's stages with ReLU6, no squeeze-excite,
    and the stem and head not scaled. Narrow: width 0.25, 64x64, one block a stage."""
    res, width, classes = (224, 1.0, 1000) if full else (64, 0.25, 100)
    stages = [(3, 1, 1, 16, 1), (3, 2, 6, 24, 2), (5, 2, 6, 40, 2), (3, 2, 6, 80, 3),
              (5, 1, 6, 112, 3), (5, 2, 6, 192, 4), (3, 1, 6, 320, 1)]

    def ch(c):
        c = c * width
        return max(8, int(c + 4) // 8 * 8)

    x = inp = keras.Input((res, res, 3), batch_size=1)
    x = L.Conv2D(32, 3, 2, padding="same", use_bias=False)(x)
    x = L.ReLU(6.0)(L.BatchNormalization()(x))
    cin = 32
    for k, s, e, c, r in stages:
        cout = ch(c)
        for i in range(r if full else 1):
            stride = s if i == 0 else 1
            y = x
            if e != 1:
                y = L.Conv2D(cin * e, 1, use_bias=False)(y)
                y = L.ReLU(6.0)(L.BatchNormalization()(y))
            y = L.DepthwiseConv2D(k, stride, padding="same", use_bias=False)(y)
            y = L.ReLU(6.0)(L.BatchNormalization()(y))
            y = L.Conv2D(cout, 1, use_bias=False)(y)
            y = L.BatchNormalization()(y)
            if stride == 1 and cin == cout:
                y = L.Add()([x, y])
            x, cin = y, cout
    x = L.Conv2D(1280, 1, use_bias=False)(x)
    x = L.ReLU(6.0)(L.BatchNormalization()(x))
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(classes)(x)
    return randomize_bn(keras.Model(inp, x))


def resnet_block(full):
    res = 224 if full else 32
    x = inp = keras.Input((res, res, 3), batch_size=1)
    x = L.Conv2D(16, 7, 2, padding="same")(x)
    x = L.ReLU()(L.BatchNormalization()(x))
    x = L.MaxPooling2D(3, 2, padding="same")(x)
    for c, s in [(16, 1), (32, 2)]:
        y = L.Conv2D(c, 3, s, padding="same", use_bias=False)(x)
        y = L.ReLU()(L.BatchNormalization()(y))
        y = L.Conv2D(c, 3, 1, padding="same", use_bias=False)(y)
        y = L.BatchNormalization()(y)
        if s != 1 or x.shape[-1] != c:
            x = L.BatchNormalization()(L.Conv2D(c, 1, s, use_bias=False)(x))
        x = L.ReLU()(L.Add()([x, y]))
    x = L.AveragePooling2D(2, 2, padding="valid")(x)
    x = L.GlobalAveragePooling2D()(x)
    return randomize_bn(keras.Model(inp, L.Dense(10)(x)))


def convnet(full):
    """Convolutions (strided, 1x1, valid), a depthwise convolution, batch
    norms folded into them, ReLU/ReLU6 and dense layers: the operators kiln
    computes exactly as TFLite's reference kernels do."""
    res = 96 if full else 24
    x = inp = keras.Input((res, res, 3), batch_size=1)
    x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(16, 3, 2, padding="same")(x)))
    x = L.DepthwiseConv2D(3, padding="same", activation="relu")(x)
    x = L.Conv2D(24, 1)(x)
    x = L.Conv2D(8, 3, padding="valid", activation="relu")(x)
    x = L.Dense(12, activation="relu")(L.Flatten()(x))
    return randomize_bn(keras.Model(inp, L.Dense(10)(x)))


def encoder(full):
    vocab, seq, hidden, heads, layers = (1000, 128, 256, 4, 4) if full else (100, 16, 32, 2, 2)
    ids = keras.Input((seq,), batch_size=1, dtype="int32", name="input_ids")
    x = L.Embedding(vocab, hidden)(ids)
    pos = L.Embedding(seq, hidden)(tf.range(seq)[None, :])
    x = L.LayerNormalization(epsilon=1e-12)(x + pos)
    for _ in range(layers):
        a = L.MultiHeadAttention(heads, hidden // heads)(x, x)
        x = L.LayerNormalization(epsilon=1e-12)(x + a)
        f = L.Dense(hidden * 4, activation="gelu")(x)
        x = L.LayerNormalization(epsilon=1e-12)(x + L.Dense(hidden)(f))
    pooled = L.Dense(hidden, activation="tanh")(x[:, 0])
    return keras.Model(ids, [x, pooled])


def ops_misc(full):
    """A tf.function of the image, layout and small operators the CNNs above
    do not use: resizes (TF2's half-pixel and TF1's align-corners
    bilinear, nearest), depth/space, transposed convolutions (SAME and
    VALID), PReLU, ELU, reflect padding, tile, floor div/mod, sin, cos,
    ceil, round, sign, add_n, argmin."""
    del full
    w = tf.constant(RNG.normal(size=(3, 3, 5, 4)).astype(np.float32))
    alpha = tf.constant(RNG.uniform(0.1, 0.3, 4).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 4], tf.float32, name="x")])
    def f(x):
        return {
            "resize_half": tf.image.resize(x, [16, 12], method="bilinear"),
            "resize_align": tf.compat.v1.image.resize_bilinear(x, [12, 16], align_corners=True),
            "resize_asym": tf.compat.v1.image.resize_bilinear(x, [11, 13]),
            "nearest_half": tf.image.resize(x, [16, 13], method="nearest"),
            "nearest_align": tf.compat.v1.image.resize_nearest_neighbor(x, [12, 12],
                                                                        align_corners=True),
            "d2s": tf.nn.depth_to_space(x, 2),
            "s2d": tf.nn.space_to_depth(x, 2),
            "tconv_same": tf.nn.conv2d_transpose(x, w, [1, 16, 16, 5], 2, "SAME"),
            "tconv_valid": tf.nn.conv2d_transpose(x, w, [1, 17, 17, 5], 2, "VALID"),
            "prelu": tf.nn.relu(x) - alpha * tf.nn.relu(-x),
            "elu": tf.nn.elu(x),
            "mirror": tf.pad(x, [[0, 0], [2, 1], [1, 2], [0, 0]], mode="REFLECT"),
            "tile": tf.tile(x, [1, 2, 1, 3]),
            "floor": tf.math.floordiv(x, 0.3) + tf.math.floormod(x, 0.3),
            "unary": tf.sin(x) + tf.cos(x) + tf.math.ceil(x) + tf.round(x * 3) + tf.sign(x),
            "add_n": tf.add_n([x, x * 2.0, tf.exp(x)]),
            "argmin": tf.argmin(x, axis=3),
        }
    return f


def image_data(model, n):
    shape = [d or 1 for d in model.inputs[0].shape]
    shape[0] = 1
    return [RNG.uniform(-1, 1, shape).astype(np.float32) for _ in range(n)]


def convert(model, mode, rep=None):
    if isinstance(model, tf.types.experimental.GenericFunction):
        conv = tf.lite.TFLiteConverter.from_concrete_functions([model.get_concrete_function()])
    else:
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode == "fp16":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]
    elif mode == "int8":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([x] for x in rep)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    elif mode == "dynamic":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    return conv.convert()


def reference(tfl, inputs, resolver="AUTO"):
    """The TFLite interpreter's outputs for inputs (a list, in input order),
    by default with its default delegate (XNNPACK); resolver "BUILTIN_REF"
    gives TFLite's reference kernels."""
    kind = getattr(tf.lite.experimental.OpResolverType, resolver)
    it = tf.lite.Interpreter(model_content=tfl, experimental_op_resolver_type=kind)
    it.allocate_tensors()
    io = {}
    for d, x in zip(it.get_input_details(), inputs):
        if d["dtype"] in (np.int8, np.uint8) and x.dtype == np.float32:
            s, z = d["quantization"]
            info = np.iinfo(d["dtype"])
            x = np.clip(np.round(x / s) + z, info.min, info.max).astype(d["dtype"])
        x = x.astype(d["dtype"])
        it.set_tensor(d["index"], x)
        io[d["name"]] = x
    it.invoke()
    for d in it.get_output_details():
        io[d["name"]] = it.get_tensor(d["index"]).copy()
    return io


def build(name, full):
    base = name.rsplit("_", 1)[0]
    mode = name.rsplit("_", 1)[1]
    maker = {"mobilenet_v2": mobilenet_v2, "efficientnet_lite0": efficientnet_lite0,
             "resnet_block": resnet_block, "convnet": convnet, "encoder": encoder, "ops_misc": ops_misc}[base]
    tf.keras.utils.set_random_seed(17)
    model = maker(full)
    if base == "ops_misc":
        rep = [RNG.uniform(-2, 2, (1, 8, 8, 4)).astype(np.float32)]
    elif base == "encoder":
        seq = model.inputs[0].shape[1]
        vocab = 1000 if full else 100
        rep = [RNG.integers(0, vocab, (1, seq)).astype(np.int32) for _ in range(8)]
    else:
        rep = image_data(model, 8)
    tfl = convert(model, mode, rep)
    io = reference(tfl, [rep[0]])
    if name in REFERENCE:  # the reference kernels' outputs (--tflite-kernels reference)
        ref = reference(tfl, [rep[0]], "BUILTIN_REF")
        io.update({"__reference__" + k: v for k, v in ref.items()})
        if base == "convnet":  # convolutions and dense only: kiln must be exact
            io["__reference_exact"] = np.array(1, np.int32)
    io["__kind"] = np.array({"float": 0, "fp16": 0, "int8": 1, "dynamic": 2}[mode], np.int32)
    return tfl, io


# int8 models also run as TFLite's reference kernels compute (BUILTIN_REF):
# convnet (convolutions, depthwise, dense: exact) and the ResNet-style block
# (its ADD and pools are not TFLite's fixed-point ones: within one step)
REFERENCE = ["convnet_int8", "resnet_block_int8"]
MODELS = ["convnet_int8", "mobilenet_v2_float", "mobilenet_v2_fp16", "mobilenet_v2_int8",
          "efficientnet_lite0_int8", "resnet_block_float", "resnet_block_int8",
          "encoder_float", "encoder_dynamic", "ops_misc_float"]
# Made only when named: a full-integer encoder. kiln is within one step of
# the interpreter up to the first LayerNorm, then TFLite's fixed-point int8
# MEAN/RSQRT/softmax and kiln's float ones drift apart by a few steps a layer
# (docs/TFLITE.md): not a pass/fail test.
EXTRA = ["encoder_int8"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.names or MODELS:
        if name not in MODELS + EXTRA:
            sys.exit(f"make_tflite_models.py: unknown model {name} "
                     f"(one of {', '.join(MODELS + EXTRA)})")
        tfl, io = build(name, a.full)
        with open(os.path.join(a.out, name + ".tflite"), "wb") as f:
            f.write(tfl)
        np.savez(os.path.join(a.out, name + "_io.npz"), **io)
        print(f"{name}: {len(tfl)} bytes, inputs/outputs {sorted(k for k in io if k[:2] != '__')}")


if __name__ == "__main__":
    main()
