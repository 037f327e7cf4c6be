"""Full-size PyTorch models through kiln.frontend.from_pytorch, against torch.

    PYTHONPATH=python KILN_LIBRARY_PATH=build $(bash scripts/torch-env.sh) \\
        scripts/pytorch_models.py [NAME ...]

Default: ResNet-50 and MobileNetV3-large at 1x3x224x224 and a 6-layer
transformer encoder (d_model 512, 8 heads, feed-forward 2048, 128 tokens),
batch-first (torch's fused encoder kernel) and sequence-first (plain ops).
A NAME is a torchvision classification model (at 224x224) or
"encoder"/"encoder_seq_first". Random weights (seed 0; parameters that
torchvision starts at all zeros are drawn too), eval mode, one fixed
random input. For each model it prints:

- rel: max|kiln - torch| / max|torch| (the acceptance metric, <= 1e-4);
- elementwise: the worst |kiln - torch| / |torch| over the outputs with
  |torch| >= 1% of max|torch| (smaller ones are dominated by rounding);
- for classifiers, whether the arg-max class agrees.

Exits 1 if a model misses 1e-4. Not part of CI (minutes on two cores).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

import kiln
from kiln.frontend import from_pytorch

TOL = 1e-4


def encoder(batch_first: bool):
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=batch_first)
    model = torch.nn.TransformerEncoder(layer, 6, enable_nested_tensor=False).eval()
    x = torch.randn(1, 128, 512) if batch_first else torch.randn(128, 1, 512)
    return model, x


def make(name: str):
    if name == "encoder":
        return encoder(True)
    if name == "encoder_seq_first":
        return encoder(False)
    import torchvision

    # torch's default init: GoogLeNet's own (init_weights) fades the signal
    # at 224x224 until the logits are the final bias alone
    kw = {"aux_logits": False, "init_weights": False} if name in ("googlenet",
                                                                   "inception_v3") else {}
    model = getattr(torchvision.models, name)(weights=None, **kw).eval()
    with torch.no_grad():  # ViT's head starts at zero: its logits would be 0
        for p in model.parameters():
            if not p.any():
                p.normal_(0, 0.02)
    res = 299 if name == "inception_v3" else 224
    return model, torch.randn(1, 3, res, res)


def check(name: str, workdir: str) -> bool:
    torch.manual_seed(0)
    model, x = make(name)
    with torch.no_grad():
        want = model(x).numpy()
    t0 = time.time()
    g = from_pytorch(model, x)
    t1 = time.time()
    path = os.path.join(workdir, f"{name}.tar")
    kiln.graph.compile(g, path)
    t2 = time.time()
    (got,) = kiln.runtime.load(path).run([x.numpy()])
    w, k = want.astype(np.float64), got.astype(np.float64)
    scale = np.abs(w).max()
    rel = np.abs(k - w).max() / scale
    big = np.abs(w) >= 0.01 * scale
    elem = (np.abs(k - w)[big] / np.abs(w)[big]).max()
    top1 = "" if name.startswith("encoder") else \
        f"  top-1 {'agrees' if (k.argmax(-1) == w.argmax(-1)).all() else 'DIFFERS'}"
    ok = rel <= TOL
    print(f"{name:20s} rel {rel:.2e}  elementwise {elem:.2e}{top1}  "
          f"(convert {t1 - t0:.1f} s, compile {t2 - t1:.1f} s){'' if ok else '  FAIL'}",
          flush=True)
    return ok


def main(argv) -> int:
    warnings.simplefilter("ignore")
    names = argv or ["resnet50", "mobilenet_v3_large", "encoder", "encoder_seq_first"]
    print(f"torch {torch.__version__}, kiln {kiln.library_version()}, target "
          f"{kiln.target_host()}")
    with tempfile.TemporaryDirectory() as d:
        results = [check(n, d) for n in names]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
