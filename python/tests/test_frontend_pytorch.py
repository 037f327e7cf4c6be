"""kiln.frontend.from_pytorch: torchvision networks, transformer encoders
(torch's fused inference kernels and the plain ops), the common aten ops,
TorchScript modules, and the errors.

Every model runs with random weights in eval mode on a fixed random input,
compiled by kiln, against torch's own output. The metric is
max|kiln - torch| / max|torch| over all outputs, and it must be <= 1e-4.

Where torch is missing these tests are skipped, except with
KILN_REQUIRE_TORCH=1: scripts/test.sh sets it for the run in the torch venv
(scripts/torch-env.sh), which must test them, so there a missing torch
fails.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import kiln

if os.environ.get("KILN_REQUIRE_TORCH") == "1":
    import torch  # an ImportError here fails the run
    import torchvision
else:
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")

from kiln.frontend import UnsupportedOpError, from_pytorch  # noqa: E402

TOL = 1e-4
# the traces' notes on Python values taken as constants: kiln compiles for
# the example inputs' shapes, as traced
pytestmark = pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")


def rel_error(got, want) -> float:
    """max|got - want| / max|want|."""
    want = np.asarray(want, dtype=np.float64)
    scale = max(float(np.abs(want).max()), 1e-30)
    return float(np.abs(np.asarray(got, dtype=np.float64) - want).max()) / scale


def run_both(module, inputs, tmp_path, input_names=None):
    """torch's outputs and kiln's, as lists of numpy arrays."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    with torch.no_grad():
        ref = module(*inputs)
    refs = list(ref.values()) if isinstance(ref, dict) else \
        list(ref) if isinstance(ref, (tuple, list)) else [ref]
    g = from_pytorch(module, inputs, input_names=input_names)
    path = str(tmp_path / "m.tar")
    kiln.graph.compile(g, path)
    m = kiln.runtime.load(path)
    outs = m.run([x.numpy() for x in inputs])
    assert len(outs) == len(refs)
    return [r.numpy() for r in refs], outs


def assert_close(module, inputs, tmp_path, input_names=None):
    refs, outs = run_both(module, inputs, tmp_path, input_names)
    for r, o in zip(refs, outs):
        assert o.shape == r.shape and o.dtype == r.dtype
        assert r.size == 1 or np.ptp(r) > 1e-3 * np.abs(r).max(), "torch's output is constant"
        err = rel_error(o, r)
        assert err <= TOL, f"relative error {err:.3g} > {TOL}"


def traced_kinds(module, inputs):
    """The op kinds of the frozen traced graph, as from_pytorch reads it."""
    from kiln.frontend.pytorch import _frozen_graph

    g = _frozen_graph(torch, module, inputs if isinstance(inputs, tuple) else (inputs,))
    return {n.kind() for n in g.nodes()}


# ---- torchvision --------------------------------------------------------------------

VISION = [
    ("resnet18", 64), ("mobilenet_v2", 32), ("mobilenet_v3_small", 64),
    ("efficientnet_b0", 32), ("squeezenet1_1", 64), ("shufflenet_v2_x0_5", 64),
    ("densenet121", 32), ("regnet_y_400mf", 32), ("mnasnet0_5", 32), ("alexnet", 64),
    ("googlenet", 64), ("convnext_tiny", 32),
]


@pytest.mark.parametrize("name,res", VISION, ids=[v[0] for v in VISION])
def test_torchvision(name, res, tmp_path):
    torch.manual_seed(0)
    kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(torchvision.models, name)(weights=None, **kw).eval()
    assert_close(model, torch.randn(1, 3, res, res), tmp_path)


def test_small_vision_transformers(tmp_path):
    """ViT (torch's fused attention) and Swin (shifted windows: roll, pad,
    and the attention mask torch computes in place on constants)."""
    from torchvision.models.swin_transformer import SwinTransformer
    from torchvision.models.vision_transformer import VisionTransformer

    torch.manual_seed(9)
    vit = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                            hidden_dim=32, mlp_dim=64).eval()
    swin = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                           window_size=[4, 4], num_classes=10).eval()
    with torch.no_grad():
        for p in vit.parameters():  # ViT's head starts at zero
            if not p.any():
                p.normal_(0, 0.02)
    assert_close(vit, torch.randn(1, 3, 32, 32), tmp_path)
    assert_close(swin, torch.randn(1, 3, 40, 40), tmp_path)


@pytest.mark.parametrize("name", ["lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large"])
def test_segmentation_dict_outputs(name, tmp_path):
    """A dict of outputs (traced with strict=False): one graph output per
    entry, named by its key; bilinear upsampling to the input size."""
    torch.manual_seed(14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None, aux_loss=name.startswith("deeplab")).eval()
    x = torch.randn(1, 3, 48, 48)
    g = from_pytorch(model, x)
    path = str(tmp_path / "seg.tar")
    kiln.graph.compile(g, path)
    m = kiln.runtime.load(path)
    with torch.no_grad():
        want = model(x)
    assert [p.name for p in m.outputs] == list(want)  # "out" (and "aux")
    for o, r in zip(m.run([x.numpy()]), want.values()):
        assert o.shape == tuple(r.shape) and rel_error(o, r.numpy()) <= TOL


# ---- transformers -------------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder(batch_first, norm_first, activation, tmp_path):
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=batch_first,
                                             norm_first=norm_first, activation=activation)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = torch.randn(3, 5, 32)
    kinds = traced_kinds(model, x)
    # torch 1.13 in eval without grad: batch_first takes the fused kernel
    fused = "aten::_transformer_encoder_layer_fwd" in kinds
    if torch.__version__.startswith("1.13"):
        assert fused == batch_first
    assert_close(model, x, tmp_path)


class PaddedEncoder(torch.nn.Module):
    def __init__(self, batch_first):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=batch_first)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_encoder_padding_mask(batch_first, tmp_path):
    torch.manual_seed(13)
    model = PaddedEncoder(batch_first).eval()
    x = torch.randn(3, 5, 32) if batch_first else torch.randn(5, 3, 32)
    pad = torch.zeros(3, 5, dtype=torch.bool)
    pad[0, 3:] = True
    pad[2, 1] = True
    fused = "aten::_transformer_encoder_layer_fwd" in traced_kinds(model, (x, pad))
    if torch.__version__.startswith("1.13"):
        assert fused == batch_first
    assert_close(model, (x, pad), tmp_path)


class Attention(torch.nn.Module):
    def __init__(self, cross, need_weights):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(32, 4, batch_first=True)
        self.cross, self.need_weights = cross, need_weights

    def forward(self, q, kv, pad):
        kv = kv if self.cross else q
        out, w = self.mha(q, kv, kv, key_padding_mask=pad, need_weights=self.need_weights)
        return (out, w) if self.need_weights else out + kv.mean()


@pytest.mark.parametrize("cross,need_weights", [(False, False), (True, False), (True, True)])
def test_multi_head_attention(cross, need_weights, tmp_path):
    torch.manual_seed(2)
    model = Attention(cross, need_weights).eval()
    q, kv = torch.randn(2, 5, 32), torch.randn(2, 5 if not cross else 7, 32)
    pad = torch.zeros(2, kv.shape[1], dtype=torch.bool)
    pad[1, 2:] = True
    # self-attention without weights takes torch's fused kernel
    fused = "aten::_native_multi_head_attention" in traced_kinds(model, (q, kv, pad))
    if torch.__version__.startswith("1.13"):
        assert fused == (not cross and not need_weights)
    assert_close(model, (q, kv, pad), tmp_path, input_names=["query", "memory", "pad"])


# ---- ops ----------------------------------------------------------------------------

class Convs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.c1 = nn.Conv1d(4, 6, 3, padding=2, dilation=2)
        self.c1s = nn.Conv1d(6, 6, 4, padding="same", groups=3)
        self.c2 = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2, padding_mode="reflect")
        self.c3 = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False, padding_mode="circular")
        self.c4 = nn.Conv2d(8, 4, (1, 3), padding="same", padding_mode="replicate")
        self.ct = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.bn1 = nn.BatchNorm1d(6)

    def forward(self, x, s):
        y = self.c4(self.c3(self.c2(x)))
        y = self.bn(torch.nn.functional.relu6(self.ct(y)))
        z = self.bn1(self.c1s(self.c1(s)))
        return y, z


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # torch's note
def test_convolutions(tmp_path):
    torch.manual_seed(3)
    m = Convs().eval()
    for bn in (m.bn, m.bn1):  # not the identity statistics
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    assert_close(m, (torch.randn(2, 4, 9, 11), torch.randn(2, 4, 10)), tmp_path)


class Elementwise(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.rand(3, 8))
        self.beta = torch.nn.Parameter(torch.rand(3, 8))

    def forward(self, x, y):
        f = torch.nn.functional
        a = f.hardswish(x) + f.hardsigmoid(y) * 2 - f.silu(x) / 3.0
        b = f.gelu(x) + f.gelu(y, approximate="tanh") + torch.sigmoid(x) * torch.tanh(y)
        c = f.leaky_relu(x, 0.2) - f.elu(y) + torch.clamp(x, -0.5, 0.7) + (1 - x)
        d = torch.where(x > y, x, y) + torch.maximum(x, y[:1]) + x.pow(2) + torch.abs(y).sqrt()
        e = x.masked_fill(y < 0, 0.25) + torch.exp(-x.abs()) + torch.rsqrt(y * y + 1)
        g = f.softmax(x, dim=-1) + f.log_softmax(y, dim=1)
        g = g + f.relu(x).mean(dim=(1, 2), keepdim=True)
        h = x.sum(-1, keepdim=True) + x.amax(dim=1, keepdim=True)
        h = h + torch.max(y, dim=2)[0][..., None]
        i = x.mean() + y.sum(dtype=torch.float32) + y.type_as(x) * x.float()
        j = f.normalize(x, dim=-1) + torch.cumsum(y, 1) + x.norm(p=1, dim=1, keepdim=True)
        k = (x.argmax(-1, keepdim=True) - y.argmin()).float() + torch.linalg.vector_norm(y)
        ln = f.layer_norm(y, [3, 8], self.gamma, self.beta)
        return a + b + c + d + e + g + h + i + j + k + ln


def test_elementwise_and_reductions(tmp_path):
    torch.manual_seed(4)
    assert_close(Elementwise().eval(), (torch.randn(2, 3, 8), torch.randn(2, 3, 8)), tmp_path)


class Shapes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 6)
        self.fc = torch.nn.Linear(6, 4)
        self.w = torch.nn.Parameter(torch.randn(4, 5))

    def forward(self, x, ids):
        b = x.size(0)
        e = self.fc(self.emb(ids))                        # [2, 7, 4]
        y = x.view(b, -1, 4).permute(0, 2, 1).contiguous()  # [2, 4, 6]
        y = torch.cat([y, y.transpose(1, 2)[:, :4, :]], dim=2)  # [2, 4, 10]
        p, q = y.chunk(2, dim=-1)
        r = torch.stack(torch.split(p + q, [2, 3], dim=2)[1].unbind(1), dim=1)
        s = torch.addmm(self.fc.bias, e.flatten(0, 1)[:, :6], self.w[:, :4].t().repeat(1, 1)[:6])
        t = torch.matmul(y, y.transpose(-1, -2))
        t = t + torch.bmm(y, y.transpose(1, 2)).select(1, 0)[:, None]
        u = torch.roll(x, shifts=2, dims=1).narrow(1, 1, 4)
        u = u + torch.nn.functional.pad(x, (1, 1))[:, 1:5, 1:-1]
        v = e.unsqueeze(1).expand(2, 3, 7, 4).squeeze(0).reshape(2, -1)
        w = x.flatten(1).index_select(1, ids[0, :3]) + ids[:, :3].to(torch.float32)
        return r.sum() + s.mean(), t, u, v, w


def test_shapes_and_indexing(tmp_path):
    torch.manual_seed(5)
    ids = torch.randint(0, 10, (2, 7), dtype=torch.int64)
    assert_close(Shapes().eval(), (torch.randn(2, 6, 4), ids), tmp_path)


class Pools(torch.nn.Module):
    def forward(self, x):
        f = torch.nn.functional
        a = f.max_pool2d(x, 3, 2, ceil_mode=True)
        b = f.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, count_include_pad=False)
        c = f.avg_pool2d(x, 2)
        d = f.adaptive_avg_pool2d(x, (3, 5))
        e = f.adaptive_max_pool2d(x, 1)
        return a.flatten(1), b.flatten(1), c.flatten(1), d.flatten(1), e.flatten(1)


def test_pools(tmp_path):
    torch.manual_seed(6)
    assert_close(Pools().eval(), torch.randn(1, 3, 10, 11), tmp_path)


class Pools3d(torch.nn.Module):
    def forward(self, x):
        f = torch.nn.functional
        a = f.max_pool3d(x, 2, ceil_mode=True).flatten(1)
        b = f.avg_pool3d(x, 3, 1, padding=1, count_include_pad=False).flatten(1)
        c = f.adaptive_avg_pool3d(x, (2, 3, 2)).flatten(1)
        return a, b, c, f.adaptive_avg_pool3d(x, 1).flatten(1), f.adaptive_max_pool3d(x, 1)


def test_pools_3d_and_video(tmp_path):
    torch.manual_seed(15)
    assert_close(Pools3d().eval(), torch.randn(1, 2, 5, 6, 7), tmp_path)
    r3d = torchvision.models.video.r3d_18(weights=None).eval()
    assert_close(r3d, torch.randn(1, 3, 4, 32, 32), tmp_path)


class NormsAndResize(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = torch.nn.GroupNorm(2, 6)
        self.inorm = torch.nn.InstanceNorm2d(6, affine=True)
        self.prelu = torch.nn.PReLU(6)

    def forward(self, x, ids):
        f = torch.nn.functional
        y = self.prelu(self.inorm(self.gn(x)))
        a = f.interpolate(y, scale_factor=2, mode="nearest")
        b = f.interpolate(y, size=(7, 9), mode="bilinear", align_corners=False)
        c = f.interpolate(y, size=(5, 6), mode="bilinear", align_corners=True)
        s = y.flatten(2)
        d = f.max_pool1d(s, 3, 2, ceil_mode=True) + f.avg_pool1d(s, 3, 2, ceil_mode=True)
        e = f.adaptive_avg_pool1d(s, 5)
        g = y[:, ids] + y[:, :, ids[:2]].sum() + torch.div(ids, 3, rounding_mode="floor")[0]
        h = (torch.div(-ids, 4, rounding_mode="trunc") + ids // 2 + ids / 5)[None, :]
        h = h + ids * 0.5 - 1.5 * ids + (ids + 1) * (2 - ids)
        return a, b, c, d, e, g, h


def test_norms_resize_and_indexing(tmp_path):
    torch.manual_seed(11)
    m = NormsAndResize().eval()
    with torch.no_grad():
        for p in m.parameters():
            p.uniform_(0.5, 1.5)
    ids = torch.tensor([3, 0, 5, 1], dtype=torch.int64)
    assert_close(m, (torch.randn(2, 6, 4, 5), ids), tmp_path)


class Einsums(torch.nn.Module):
    def forward(self, q, k):
        a = torch.einsum("bhid,bhjd->bhij", q, k)
        b = torch.einsum("...id,...jd->...ij", q, k * 2).sum(1)
        c = torch.einsum("bhid,hd->bih", q, k[0, :, 0])
        d = torch.einsum("bhid->bdh", q) + torch.einsum("bhid,bhid", q, k)
        e = torch.einsum("i,j", q[0, 0, 0], k[0, 0, 1])
        return a, b, c, d, e


def test_einsum(tmp_path):
    torch.manual_seed(12)
    assert_close(Einsums().eval(), (torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)), tmp_path)


class Checked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        if x.dim() != 4:
            raise ValueError("expected a 4-D input")
        y = self.drop(torch.relu(self.bn(self.conv(x))))
        if x.size(1) == 3:
            y = y * 2
        return y


def test_script_module(tmp_path):
    torch.manual_seed(7)
    scripted = torch.jit.script(Checked().eval())
    assert_close(scripted, torch.randn(1, 3, 8, 8), tmp_path)


def test_float64(tmp_path):
    torch.manual_seed(10)
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.LayerNorm(8))
    mlp = mlp.double().eval()
    assert_close(mlp, torch.randn(3, 8, dtype=torch.float64), tmp_path)


def test_mlp_names_inputs(tmp_path):
    torch.manual_seed(8)
    mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(),
                              torch.nn.Linear(32, 10), torch.nn.Softmax(dim=-1)).eval()
    g = from_pytorch(mlp, torch.randn(4, 16), input_names=["features"])
    assert [n.name for n in g.nodes if n.op == "var"] == ["features"]
    assert_close(mlp, torch.randn(4, 16), tmp_path)
    traced = torch.jit.trace(mlp, torch.randn(4, 16))  # a ScriptModule, taken as it is
    assert_close(traced, torch.randn(4, 16), tmp_path)


# ---- errors ---------------------------------------------------------------------------

class Unsupported(torch.nn.Module):
    def forward(self, x):
        a = torch.sort(x, 1)[0]
        b = torch.sort(a, 0)[0]
        c = torch.histc(b, bins=4)
        return torch.fft.fft(b).real + torch.relu(x) + c.sum()


def test_unsupported_ops_listed_at_once():
    with pytest.raises(UnsupportedOpError) as err:
        from_pytorch(Unsupported().eval(), torch.randn(3, 4))
    e = err.value
    assert isinstance(e, kiln.KilnError) and isinstance(e, NotImplementedError)
    assert set(e.ops) == {"aten::sort", "aten::histc", "aten::fft_fft", "aten::real"}
    assert e.ops["aten::sort"][0] == 2
    msg = str(e)
    assert "aten::sort (x2)" in msg and "aten::histc (x1)" in msg
    assert "test_frontend_pytorch.py:" in e.ops["aten::histc"][1]  # the source line


class TrainingDropout(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.dropout(x, 0.5, training=True)


class Branchy(torch.nn.Module):
    def forward(self, x):
        if bool(x.sum() > 0):
            x = torch.sort(x)[0]
        return x


def test_data_dependent_branch_is_listed():
    with pytest.raises(UnsupportedOpError) as err:
        from_pytorch(torch.jit.script(Branchy().eval()), torch.randn(3))
    assert set(err.value.ops) == {"prim::If (on a tensor's values)", "aten::sort",
                                  "aten::Bool"}
    assert "test_frontend_pytorch.py:" in err.value.ops["aten::sort"][1]


def test_training_mode_is_an_error():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))  # not eval()
    with pytest.raises(kiln.KilnError, match=r"training mode.*call module.eval\(\)"):
        from_pytorch(m, torch.randn(2, 4))
    with pytest.raises(kiln.KilnError, match=r"aten::dropout \(.*test_frontend_pytorch.py:\d+"
                                             r"\): dropout in training mode"):
        from_pytorch(TrainingDropout().eval(), torch.randn(2, 4))


def test_bad_arguments():
    lin = torch.nn.Linear(4, 2).eval()
    with pytest.raises(TypeError, match="example input 0 is a ndarray"):
        from_pytorch(lin, np.zeros((2, 4), "float32"))
    with pytest.raises(TypeError, match="example input"):
        from_pytorch(lin, ())
    with pytest.raises(TypeError, match="torch.nn.Module or torch.jit.ScriptModule"):
        from_pytorch(lambda x: x, torch.randn(2, 4))
    with pytest.raises(TypeError, match="dtype torch.complex64"):
        from_pytorch(lin, torch.randn(2, 4, dtype=torch.complex64))
    with pytest.raises(kiln.KilnError, match="torch.jit.trace of Linear on the example inputs "
                                             "failed: RuntimeError"):
        from_pytorch(lin, torch.randn(2, 5))  # not 4 features
    with pytest.raises(ValueError, match="input_names"):
        from_pytorch(lin, torch.randn(2, 4), input_names=["a", "b"])
    scripted = torch.jit.script(Checked().eval())
    with pytest.raises(TypeError, match="takes 1 input, 2 example inputs were given"):
        from_pytorch(scripted, (torch.randn(1, 3, 8, 8), torch.randn(1)))
    with pytest.raises(kiln.KilnError, match=r"RaiseException \(.*test_frontend_pytorch.py:\d+\)"
                                             r": .*raises an exception.*expected a 4-D input"):
        from_pytorch(scripted, torch.randn(3, 8, 8))
