#!/usr/bin/env python3
"""Export the models used to measure `kiln compile` times (docs/COMPILE_TIME.md).

torchvision's DenseNet-121, ResNet-50 and EfficientNet-B0 with random
weights, batch 1, input 1x3x224x224, opset 13, into OUT (default
build/ct-models/): MODEL.onnx each. Only the graph matters for compile
time, so nothing else (no reference outputs) is written.

Run:  /usr/bin/python3 tools/export_compile_models.py [--out DIR] [MODEL ...]
(needs torch and torchvision; the models are never committed)
"""
import argparse
import os
import sys

import torch
import torchvision

MODELS = {
    "densenet121": lambda: torchvision.models.densenet121(weights=None),
    "resnet50": lambda: torchvision.models.resnet50(weights=None),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(weights=None),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "..", "build", "ct-models"))
    ap.add_argument("models", nargs="*", default=list(MODELS), help="of: " + ", ".join(MODELS))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    for name in a.models:
        if name not in MODELS:
            sys.exit(f"unknown model '{name}' (known: {', '.join(MODELS)})")
        model = MODELS[name]().eval()
        path = os.path.join(a.out, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, torch.randn(1, 3, 224, 224), path, opset_version=13,
                              input_names=["data"], output_names=["logits"])
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
