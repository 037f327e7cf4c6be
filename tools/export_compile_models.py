#!/usr/bin/env python3
"""Export the models used to measure `kiln compile` times (docs/COMPILE_TIME.md).

torchvision's DenseNet-121, ResNet-50 and EfficientNet-B0 (the default),
and on request MobileNetV2, ShuffleNetV2, ConvNeXt-tiny, ViT-B/16 and a
BERT-base encoder (models/e2e/export_models.py's, sequence 128), with
random weights, batch 1, images 1x3x224x224, opset 13 (ViT: 14), into OUT
(default build/ct-models/): MODEL.onnx each. Only the graph matters for
compile time, so nothing else (no reference outputs) is written.

Run:  /usr/bin/python3 tools/export_compile_models.py [--out DIR] [MODEL ...|all]
(needs torch and torchvision; the models are never committed)
"""
import argparse
import os
import sys

import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGE = (1, 3, 224, 224)


def bert_base():
    sys.path.insert(0, os.path.join(HERE, "..", "models", "e2e"))
    import export_models as em
    cfg = em.BERT_BASE
    ids = torch.randint(0, cfg["vocab"], (1, cfg["seq"]), dtype=torch.long)
    return em.BertEncoder(**cfg), ids, ["input_ids"], 13


def vision(build, opset=13):
    return lambda: (build(weights=None), torch.randn(*IMAGE), ["data"], opset)


DEFAULT = ["densenet121", "resnet50", "efficientnet_b0"]
MODELS = {
    "densenet121": vision(torchvision.models.densenet121),
    "resnet50": vision(torchvision.models.resnet50),
    "efficientnet_b0": vision(torchvision.models.efficientnet_b0),
    "mobilenetv2": vision(torchvision.models.mobilenet_v2),
    "shufflenetv2": vision(torchvision.models.shufflenet_v2_x1_0),
    "convnext_tiny": vision(torchvision.models.convnext_tiny),
    "vit_b_16": vision(torchvision.models.vit_b_16, 14),
    "bert_base": bert_base,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "build", "ct-models"))
    ap.add_argument("models", nargs="*", default=DEFAULT, help="all, or of: " + ", ".join(MODELS))
    a = ap.parse_args()
    if a.models == ["all"]:
        a.models = list(MODELS)
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    for name in a.models:
        if name not in MODELS:
            sys.exit(f"unknown model '{name}' (known: {', '.join(MODELS)})")
        model, x, inputs, opset = MODELS[name]()
        path = os.path.join(a.out, name + ".onnx")
        # no torch.no_grad(): under it ViT's attention takes a fused path
        # that has no ONNX export
        torch.onnx.export(model.eval(), (x,), path, opset_version=opset, input_names=inputs,
                          do_constant_folding=True)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
