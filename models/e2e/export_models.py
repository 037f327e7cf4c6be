#!/usr/bin/env python3
"""Export kiln's end-to-end test models to ONNX, with reference outputs.

Real architectures with random weights (no downloads, so no pretrained
weights): the point is the graph structure and the numerics, not accuracy.

Narrow models (committed next to this script, each file < 1 MB):
  resnet50_narrow      ResNet-50 (torchvision's Bottleneck, ResNet.forward and
                       _make_layer; blocks [3,4,6,3], expansion 4) with base
                       width 6 instead of 64, 10 classes, input 1x3x64x64
  mobilenetv2_narrow   torchvision's MobileNetV2(width_mult=0.25), 10 classes,
                       last 1x1 conv 1280 -> 320 channels, input 1x3x64x64;
                       exported with its BatchNormalization nodes kept
  bert_tiny_opset13    BERT-like encoder: 2 layers, hidden 64, 4 heads,
                       FFN 128, exact (erf) GELU, seq 32, vocab 1000; LayerNorm
                       decomposed (ReduceMean/Sub/Pow/Sqrt/Div)
  bert_tiny_opset17    the same weights, opset 17: LayerNormalization
  vit_tiny_opset14     torchvision's VisionTransformer: image 32, patch 8,
                       2 layers, hidden 32, 2 heads, MLP 64, 10 classes,
                       opset 14; its export keeps shape sub-graphs (Shape,
                       Gather, ConstantOfShape, Where, Expand, Slice) that
                       kiln folds at import

Full-size models (--full, into --out, default /tmp/kiln-e2e-full; never
committed; the model bench's set, bench/bench_models.sh): resnet50
(torchvision, 1000 classes, 1x3x224x224), mobilenetv2 (width 1.0),
bert_base (12 layers, hidden 768, 12 heads, FFN 3072, seq 128, vocab 30522),
shufflenetv2 (x1.0), each at opset 13 (bert_base: 13 and 17); and at opset
17, 1x3x224x224 unless said: efficientnet_b0, convnext_tiny, vit_b_16,
densenet121, resnext50_32x4d (grouped), regnet_y_800mf (grouped + SE),
mobilenet_v3_large (hard-swish, SE), googlenet (concat), transformer_encoder
(PyTorch's nn.TransformerEncoder: 4 layers, d_model 256, 4 heads, FFN 1024,
sequence-first input 128x1x256) and, at opset 13, resnet50_b8 (ResNet-50,
the same weights, batch 8). BatchNorm statistics are calibrated then
perturbed, LayerNorm's affine part drawn at random, and parameters torchvision
zeroes or nearly zeroes (ViT's class token and head, ConvNeXt's 1e-6 layer
scales) drawn too, so every output has a real scale and every block matters.

For every model MODEL this writes MODEL.onnx and MODEL_io.npz holding the
input(s) under their ONNX input names and the expected output(s) under their
ONNX output names. Expected outputs come from ONNX Runtime (CPU); the script
checks that PyTorch agrees within 1e-4 of the output's scale and exits
non-zero if not.

Run:  /tmp/digits-venv/bin/python models/e2e/export_models.py          # narrow
      /tmp/digits-venv/bin/python models/e2e/export_models.py --full   # full size
(a Python with torch, torchvision, onnx, numpy and onnxruntime; see README.md)
"""
import argparse
import io
import math
import os
import random
import sys
import warnings
import zipfile

import numpy as np
import torch
import torch.nn as nn
import torchvision
from torchvision.models.resnet import Bottleneck, ResNet
from torchvision.ops.misc import Conv2dNormActivation

SEED = 0
HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_VS_ORT_TOL = 1e-4   # |torch - ort| <= TOL * max|ort| (+ TOL * |ort| elementwise)
SIZE_LIMIT = 1 << 20      # committed files must stay below 1 MiB


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    try:
        torch.use_deterministic_algorithms(True)
    except Exception as e:  # pragma: no cover
        print("note: deterministic algorithms unavailable:", e)


# ---------------------------------------------------------------- models ---

class NarrowResNet(ResNet):
    """torchvision's ResNet with every channel count scaled by base/64.

    torchvision's ResNet hard-codes the stem (64 channels) and the stage
    widths (64, 128, 256, 512; x4 at the block outputs); width_per_group only
    narrows the 3x3 convs inside the bottlenecks. This __init__ is
    ResNet.__init__ with 64 replaced by `base`; _make_layer, forward and the
    Bottleneck block are torchvision's own.
    """

    def __init__(self, layers, base, num_classes):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = base
        self.dilation = 1
        self.groups = 1
        self.base_width = 64           # Bottleneck width = planes * base_width / 64
        self.conv1 = nn.Conv2d(3, base, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(Bottleneck, base, layers[0])
        self.layer2 = self._make_layer(Bottleneck, 2 * base, layers[1], stride=2)
        self.layer3 = self._make_layer(Bottleneck, 4 * base, layers[2], stride=2)
        self.layer4 = self._make_layer(Bottleneck, 8 * base, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * base * Bottleneck.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


def mobilenetv2_narrow():
    # torchvision keeps the last 1x1 conv at 1280 channels for width < 1
    # (80 -> 1280: 100k weights, plus a 1280-wide classifier); scale it by the
    # width too so the file stays a few hundred KB.
    m = torchvision.models.mobilenet_v2(width_mult=0.25, num_classes=10)
    cin = m.features[-1][0].in_channels
    m.features[-1] = Conv2dNormActivation(cin, 320, kernel_size=1,
                                          norm_layer=nn.BatchNorm2d,
                                          activation_layer=nn.ReLU6)
    nn.init.kaiming_normal_(m.features[-1][0].weight, mode="fan_out")
    m.classifier[1] = nn.Linear(320, 10)
    m.last_channel = 320
    return m


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn, eps):
        super().__init__()
        self.heads, self.dh = heads, hidden // heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=eps)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.gelu = nn.GELU()          # exact form: 0.5 x (1 + erf(x / sqrt 2))
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=eps)

    def split_heads(self, x, b, s):
        return x.reshape(b, s, self.heads, self.dh).permute(0, 2, 1, 3)

    def forward(self, x, b, s):
        q = self.split_heads(self.q(x), b, s)                 # [b, h, s, dh]
        k = self.split_heads(self.k(x), b, s)
        v = self.split_heads(self.v(x), b, s)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, s, self.heads * self.dh)
        x = self.ln1(x + self.attn_out(ctx))
        return self.ln2(x + self.ffn_out(self.gelu(self.ffn_in(x))))


def bert_init(model):
    """BERT's init: N(0, 0.02) weights and biases; LayerNorm's affine part
    random too (not 1/0), so that it matters."""
    for mod in model.modules():
        if isinstance(mod, (nn.Linear, nn.Embedding)):
            nn.init.normal_(mod.weight, std=0.02)
        if isinstance(mod, nn.Linear):
            nn.init.normal_(mod.bias, std=0.02)
        if isinstance(mod, nn.LayerNorm):
            nn.init.uniform_(mod.weight, 0.5, 1.5)
            nn.init.normal_(mod.bias, std=0.1)


class BertEncoder(nn.Module):
    """BERT: word + position + token-type embeddings, LayerNorm, post-LN
    encoder layers, and the pooler (tanh of a linear map of token 0).
    Shapes are Python ints so the export has no Shape arithmetic."""

    def __init__(self, vocab, hidden, layers, heads, ffn, seq, max_pos, eps=1e-12):
        super().__init__()
        self.seq = seq
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn, eps) for _ in range(layers))
        self.pool = nn.Linear(hidden, hidden)
        self.register_buffer("position_ids", torch.arange(seq).unsqueeze(0), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(1, seq, dtype=torch.long),
                             persistent=False)
        bert_init(self)

    def forward(self, input_ids):
        b, s = 1, self.seq
        x = self.word(input_ids) + self.pos(self.position_ids) + \
            self.token_type(self.token_type_ids)
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x, b, s)
        pooled = torch.tanh(self.pool(x[:, 0]))
        return x, pooled


def randomize_layernorm(model, gen):
    """LayerNorm's affine part drawn at random (not 1/0), as bert_init does,
    so that it matters; ConvNeXt's LayerNorm2d is an nn.LayerNorm too."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5, generator=gen)
                m.bias.normal_(0.0, 0.1, generator=gen)


def vit_b_16():
    """torchvision's ViT-B/16. It zeroes the class token and the head (so
    every logit would be 0): draw them at random."""
    m = torchvision.models.vit_b_16(weights=None)
    with torch.no_grad():
        nn.init.normal_(m.class_token, std=0.5)
        nn.init.normal_(m.heads.head.weight, std=0.02)
        nn.init.normal_(m.heads.head.bias, std=0.02)
    return m


def convnext_tiny():
    """torchvision's ConvNeXt-tiny. Its layer scales start at 1e-6, which
    would leave every block's output negligible against the residual: draw
    them in [0.05, 0.3] instead, the range trained ConvNeXts end up in."""
    m = torchvision.models.convnext_tiny(weights=None)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("layer_scale"):
                p.uniform_(0.05, 0.3)
    return m


def transformer_encoder():
    """PyTorch's own nn.TransformerEncoder: 4 post-LN layers, d_model 256,
    4 heads, FFN 1024, ReLU, sequence-first input [seq, batch, d_model]."""
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024)
    return nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)


def vit_tiny():
    """torchvision's VisionTransformer, tiny. Random weights: the class token
    and position embedding too (torchvision zeroes the token and the head)."""
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                          hidden_dim=32, mlp_dim=64, num_classes=10)
    with torch.no_grad():
        nn.init.normal_(m.class_token, std=0.5)
        nn.init.normal_(m.encoder.pos_embedding, std=0.5)
        nn.init.normal_(m.heads.head.weight, std=0.2)
        nn.init.normal_(m.heads.head.bias, std=0.2)
    return m.eval()


def randomize_batchnorm(model, image_shape, gen):
    """Give every BatchNorm running statistics and an affine part that are
    not the identity, so folding BN (by the exporter or by kiln) matters.

    The running stats are first calibrated on random images (train mode,
    cumulative average), so activations keep a sane scale through 50 layers,
    then perturbed; gamma and beta are drawn at random."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
        with torch.no_grad():
            m.weight.uniform_(0.5, 1.5, generator=gen)
            m.bias.normal_(0.0, 0.2, generator=gen)
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(8, *image_shape[1:], generator=gen))
    with torch.no_grad():
        for m in bns:
            m.running_mean += 0.1 * torch.randn(m.running_mean.shape, generator=gen) * \
                m.running_var.sqrt()
            m.running_var *= torch.empty(m.running_var.shape).uniform_(0.7, 1.4, generator=gen)
            m.momentum = 0.1
    model.eval()


# ------------------------------------------------------------- specs ---

def image_model(name, build, shape, keep_bn=False, output="logits"):
    """A model of one float input (an image, or the encoder's sequence):
    built, its BatchNorm statistics and LayerNorm affine part randomized."""
    def make(gen):
        model = build()
        randomize_batchnorm(model, shape, gen)
        randomize_layernorm(model, gen)
        model.eval()
        x = torch.randn(*shape, generator=gen)
        return model, (x,), ["input"], [output], keep_bn
    return name, make


def bert_model(name, cfg):
    def make(gen):
        model = BertEncoder(**cfg).eval()
        ids = torch.randint(0, cfg["vocab"], (1, cfg["seq"]), generator=gen, dtype=torch.long)
        return model, (ids,), ["input_ids"], ["last_hidden_state", "pooler_output"], False
    return name, make


def vit_model(name, build, shape):
    def make(gen):
        model = build()
        x = torch.randn(*shape, generator=gen)
        return model, (x,), ["input"], ["logits"], False
    return name, make


BERT_TINY = dict(vocab=1000, hidden=64, layers=2, heads=4, ffn=128, seq=32, max_pos=32)
BERT_BASE = dict(vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, seq=128, max_pos=512)
IMAGE = (1, 3, 224, 224)
TV = torchvision.models
RESNET_NARROW_BASE = 6   # 8 would be 1.5 MB of weights; 6 is 0.86 MB


def narrow_specs():
    return [
        (image_model("resnet50_narrow",
                     lambda: NarrowResNet([3, 4, 6, 3], RESNET_NARROW_BASE, 10),
                     (1, 3, 64, 64)), 13),
        (image_model("mobilenetv2_narrow", mobilenetv2_narrow, (1, 3, 64, 64),
                     keep_bn=True), 13),
        (bert_model("bert_tiny_opset13", BERT_TINY), 13),
        (bert_model("bert_tiny_opset17", BERT_TINY), 17),
        (vit_model("vit_tiny_opset14", vit_tiny, (1, 3, 32, 32)), 14),
    ]


def full_specs():
    return [
        (image_model("resnet50", lambda: torchvision.models.resnet50(weights=None),
                     (1, 3, 224, 224)), 13),
        (image_model("mobilenetv2", lambda: torchvision.models.mobilenet_v2(weights=None),
                     (1, 3, 224, 224), keep_bn=True), 13),
        (bert_model("bert_base_opset13", BERT_BASE), 13),
        (bert_model("bert_base_opset17", BERT_BASE), 17),
        # 116/232/464 channels, channel split, concat and shuffle
        (image_model("shufflenetv2", lambda: torchvision.models.shufflenet_v2_x1_0(weights=None),
                     (1, 3, 224, 224)), 13),
        # issue 13's bench set, opset 17 (HardSwish, LayerNormalization); one line each
        (image_model("efficientnet_b0", lambda: TV.efficientnet_b0(weights=None), IMAGE), 17),
        (image_model("convnext_tiny", convnext_tiny, IMAGE), 17),
        (image_model("vit_b_16", vit_b_16, IMAGE), 17),
        (image_model("densenet121", lambda: TV.densenet121(weights=None), IMAGE), 17),
        (image_model("resnext50_32x4d", lambda: TV.resnext50_32x4d(weights=None), IMAGE), 17),
        (image_model("regnet_y_800mf", lambda: TV.regnet_y_800mf(weights=None), IMAGE), 17),
        (image_model("mobilenet_v3_large", lambda: TV.mobilenet_v3_large(weights=None), IMAGE), 17),
        (image_model("googlenet", lambda: TV.googlenet(weights=None, aux_logits=False,
                                                         init_weights=True), IMAGE), 17),
        (image_model("transformer_encoder", transformer_encoder, (128, 1, 256), output="output"), 17),
        (image_model("resnet50_b8", lambda: TV.resnet50(weights=None), (8, 3, 224, 224)), 13),
    ] + away_specs()


def away_specs():
    """Networks outside the bench set, to check that kiln's defaults hold on
    models it was not tuned against (bench_models.sh --models NAME ...; the
    bench set does not include them): plain convolutions (VGG-11, ResNet-18),
    fire modules, Inception-v3 at 299x299 with asymmetric 1x7/7x1 kernels,
    MnasNet's 5x5 depthwise, EfficientNetV2's fused MBConv, RegNetX's groups,
    and Swin-T's shifted-window attention (roll, window partition, relative
    position bias)."""
    return [
        (image_model("resnet18", lambda: TV.resnet18(weights=None), IMAGE), 17),
        (image_model("vgg11_bn", lambda: TV.vgg11_bn(weights=None), IMAGE), 17),
        (image_model("squeezenet1_1", lambda: TV.squeezenet1_1(weights=None), IMAGE), 17),
        (image_model("inception_v3", lambda: TV.inception_v3(weights=None, aux_logits=False,
                                                               init_weights=True),
                     (1, 3, 299, 299)), 17),
        (image_model("mnasnet1_0", lambda: TV.mnasnet1_0(weights=None), IMAGE), 17),
        (image_model("efficientnet_v2_s", lambda: TV.efficientnet_v2_s(weights=None), IMAGE), 17),
        (image_model("regnet_x_1_6gf", lambda: TV.regnet_x_1_6gf(weights=None), IMAGE), 17),
        (image_model("swin_t", lambda: TV.swin_t(weights=None), IMAGE), 17),
    ]


# ------------------------------------------------------------- export ---

def save_npz(path, arrays):
    """np.savez, but with fixed zip timestamps so a rerun is byte-identical."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, a in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(a), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, buf.getvalue())


def op_summary(onnx_model):
    counts = {}
    for n in onnx_model.graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return counts


def scale_err(got, ref):
    """max |got - ref| and the output's scale max |ref|."""
    return float(np.max(np.abs(got.astype(np.float64) - ref))), float(np.max(np.abs(ref)))


def export_one(name, make, opset, out_dir, ort, committed):
    import onnx

    seed_everything(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model, inputs, in_names, out_names, keep_bn = make(gen)
    path = os.path.join(out_dir, name + ".onnx")
    io_path = os.path.join(out_dir, name + "_io.npz")
    with torch.no_grad():
        ref = model(*inputs)
    ref = [ref] if isinstance(ref, torch.Tensor) else list(ref)
    ref = [r.numpy().astype(np.float32) for r in ref]

    # TrainingMode.PRESERVE on an eval-mode model exports inference-mode
    # BatchNormalization nodes; EVAL (the default) folds them into the Convs.
    # (The exporter then warns about constant folding in training-amenable
    # mode; that only matters for a model in training mode.)
    training = torch.onnx.TrainingMode.PRESERVE if keep_bn else torch.onnx.TrainingMode.EVAL
    warnings.filterwarnings("ignore", message="It is recommended that constant folding")
    torch.onnx.export(model, inputs, path, opset_version=opset, do_constant_folding=True,
                      input_names=in_names, output_names=out_names, training=training)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    feeds = {n: t.numpy() for n, t in zip(in_names, inputs)}

    rc = 0
    if ort is not None:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        expected = sess.run(out_names, feeds)
        for oname, e, t in zip(out_names, expected, ref):
            err, scale = scale_err(t, e)
            ok = err <= TORCH_VS_ORT_TOL * scale + 1e-12
            print(f"  {oname}: shape {list(e.shape)}, scale max|ORT| {scale:.4g}, "
                  f"max |PyTorch - ORT| {err:.3e} ({err / max(scale, 1e-30):.2e} of scale)"
                  f"{'' if ok else '  <-- ERROR: over 1e-4 of scale'}")
            print(f"    ORT     first values: {np.array2string(e.ravel()[:5], precision=5)}")
            print(f"    PyTorch first values: {np.array2string(t.ravel()[:5], precision=5)}")
            rc |= not ok
    else:
        expected = ref
        for oname, e in zip(out_names, expected):
            print(f"  {oname}: shape {list(e.shape)} (PyTorch reference; ORT unavailable)")

    arrays = dict(feeds)
    arrays.update({n: np.asarray(e, dtype=np.float32) for n, e in zip(out_names, expected)})
    save_npz(io_path, arrays)

    counts = op_summary(m)
    opsets = ", ".join(f"{o.domain or 'ai.onnx'}:{o.version}" for o in m.opset_import)
    nparams = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    print(f"  opset {opsets}; {len(m.graph.node)} nodes, {nparams} weights")
    print(f"  op types: {', '.join(sorted(counts))}")
    print(f"  op counts: {' '.join(f'{k}:{v}' for k, v in counts.items())}")
    for p in (path, io_path):
        size = os.path.getsize(p)
        too_big = committed and size >= SIZE_LIMIT
        print(f"  {os.path.basename(p)}: {size} bytes{'  <-- ERROR: >= 1 MiB' if too_big else ''}")
        rc |= too_big
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true",
                    help="export the full-size models instead of the narrow ones")
    ap.add_argument("--out", default=None,
                    help="output folder (default: this script's folder; "
                         "/tmp/kiln-e2e-full with --full)")
    ap.add_argument("--only", action="append", default=[],
                    help="export only this model (may repeat)")
    ap.add_argument("--allow-no-ort", action="store_true",
                    help="without onnxruntime, store PyTorch's outputs as expected")
    args = ap.parse_args()
    out_dir = args.out or ("/tmp/kiln-e2e-full" if args.full else HERE)
    os.makedirs(out_dir, exist_ok=True)
    committed = not args.full and os.path.abspath(out_dir) == HERE

    try:
        import onnxruntime as ort
        print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
              f"onnxruntime {ort.__version__}")
    except ImportError:
        if not args.allow_no_ort:
            print("ERROR: onnxruntime is not importable; run with the venv's python "
                  "(see models/e2e/README.md) or pass --allow-no-ort", file=sys.stderr)
            return 1
        ort = None

    rc = 0
    for (name, make), opset in (full_specs() if args.full else narrow_specs()):
        if args.only and name not in args.only:
            continue
        print(f"{name} (opset {opset}):", flush=True)
        rc |= export_one(name, make, opset, out_dir, ort, committed)
    if rc:
        print("ERROR: see above", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
