#!/usr/bin/env python3
"""Train kiln's "main job" model: a small CNN on scikit-learn's bundled 8x8 digits.

Deterministic: fixed seeds, single-threaded CPU, torch deterministic algorithms.
No downloads: sklearn.datasets.load_digits ships inside scikit-learn.

Writes, next to this script:
  digits_cnn.onnx         opset 13, input "input" [batch,1,8,8] float32,
                          output "logits" [batch,10] float32 (no softmax)
  heldout.npz             "input" float32 [M,1,8,8] in [0,1], "label" int64 [M]
  reference_logits.npz    "logits" float32 [M,10], PyTorch logits on heldout

Run:  /usr/bin/python3 models/digits/train_digits.py
(onnxruntime is optional; if importable, ORT output is checked against PyTorch.)
"""
import os
import random
import sys

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 0
EPOCHS = 40
BATCH = 32
LR = 1e-3
OPSET = 13
HERE = os.path.dirname(os.path.abspath(__file__))
ONNX_PATH = os.path.join(HERE, "digits_cnn.onnx")
HELDOUT_PATH = os.path.join(HERE, "heldout.npz")
REF_PATH = os.path.join(HERE, "reference_logits.npz")


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    try:
        torch.use_deterministic_algorithms(True)
    except Exception as e:  # pragma: no cover - older/odd builds
        print("note: deterministic algorithms unavailable:", e)


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),           # 8x8 -> 4x4
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),           # 4x4 -> 2x2
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(32 * 2 * 2, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def accuracy(logits, labels):
    return float((np.argmax(logits, axis=1) == labels).mean())


def main():
    seed_everything(SEED)

    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=0.2, stratify=y, random_state=SEED)
    x_tr = np.ascontiguousarray(x_tr, dtype=np.float32)
    x_te = np.ascontiguousarray(x_te, dtype=np.float32)
    y_tr = np.ascontiguousarray(y_tr, dtype=np.int64)
    y_te = np.ascontiguousarray(y_te, dtype=np.int64)
    print(f"dataset: {len(x)} images; train {len(x_tr)}, held-out {len(x_te)}")

    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    xv = torch.from_numpy(x_te)
    gen = torch.Generator().manual_seed(SEED)

    for epoch in range(1, EPOCHS + 1):
        model.train()
        perm = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for i in range(0, len(xt), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        if epoch % 10 == 0 or epoch == 1:
            model.eval()
            with torch.no_grad():
                acc = accuracy(model(xv).numpy(), y_te)
            print(f"epoch {epoch:3d}  train loss {total / len(xt):.4f}  "
                  f"held-out acc {acc:.4f}")

    model.eval()
    with torch.no_grad():
        ref = model(xv).numpy().astype(np.float32)
        train_acc = accuracy(model(xt).numpy(), y_tr)
    torch_acc = accuracy(ref, y_te)
    n_ok = int((np.argmax(ref, axis=1) == y_te).sum())
    print(f"PyTorch train accuracy:    {train_acc:.4f}")
    print(f"PyTorch held-out accuracy: {torch_acc:.4f} ({n_ok}/{len(y_te)})")
    if torch_acc < 0.95:
        print("ERROR: held-out accuracy below 0.95", file=sys.stderr)
        return 1

    torch.onnx.export(
        model, torch.zeros(1, 1, 8, 8), ONNX_PATH,
        opset_version=OPSET, do_constant_folding=True,
        input_names=["input"], output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    np.savez(HELDOUT_PATH, input=x_te, label=y_te)
    np.savez(REF_PATH, logits=ref)

    try:
        import onnx
        m = onnx.load(ONNX_PATH)
        onnx.checker.check_model(m)
        ops = []
        for n in m.graph.node:
            if n.op_type not in ops:
                ops.append(n.op_type)
        print("ONNX opset:", [f"{o.domain or 'ai.onnx'}:{o.version}"
                              for o in m.opset_import])
        print("ONNX ops (graph order):", " ".join(n.op_type for n in m.graph.node))
        print("ONNX op types:", ", ".join(ops))
        print("ONNX initializers:", ", ".join(
            f"{t.name}{list(t.dims)}" for t in m.graph.initializer))
    except ImportError:
        print("note: onnx not importable; skipping graph inspection")

    rc = 0
    try:
        import onnxruntime as ort
    except ImportError:
        print("note: onnxruntime not importable; skipping ORT check")
    else:
        sess = ort.InferenceSession(ONNX_PATH, providers=["CPUExecutionProvider"])
        got = sess.run(["logits"], {"input": x_te})[0]
        diff = float(np.max(np.abs(got - ref)))
        ort_acc = accuracy(got, y_te)
        print(f"ORT {ort.__version__} held-out accuracy: {ort_acc:.4f}; "
              f"max |ORT - PyTorch| = {diff:.3e}")
        if diff > 1e-4:
            print("ERROR: ORT logits differ from PyTorch by more than 1e-4",
                  file=sys.stderr)
            rc = 1

    for p in (ONNX_PATH, HELDOUT_PATH, REF_PATH):
        print(f"{os.path.relpath(p, os.path.dirname(os.path.dirname(HERE)))}: "
              f"{os.path.getsize(p)} bytes")
    return rc


if __name__ == "__main__":
    sys.exit(main())
