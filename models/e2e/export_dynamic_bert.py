"""A BERT encoder exported with its batch and sequence left symbolic
(bert_tiny_seq.onnx), as transformers export it: the reshapes take their
sizes from x.size(), so the graph computes them with Shape -> Gather ->
Unsqueeze -> Concat; the position ids are a slice of a [1, 128] buffer up
to the sequence length; the attention mask is expanded to [b, 1, 1, s].
Then ONNX Runtime's outputs at (batch 2, sequence 64) and (batch 1,
sequence 128), and (3, 37), whose rows are no multiple of a register
tile, on inputs both sides compute from one formula
(bert_tiny_seq_dyn_io.npz; test_e2e_models.c, run_dynamic):

    input_ids[i]  = (i * 7919) % 1000           (i: the flat index)
    mask[r, t]    = 0 where r is odd and t >= s - 5, else 1

Needs Debian's torch and onnx and onnxruntime from PyPI (README.md: a venv
with the system packages). The layers are export_models.py's BertLayer
(with an attention mask), initialized as its BERT, torch.manual_seed(0)."""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from export_models import BertLayer, bert_init  # noqa: E402


class DynamicBert(nn.Module):
    def __init__(self, vocab=1000, hidden=64, layers=2, heads=4, ffn=128, max_pos=128, eps=1e-12):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn, eps) for _ in range(layers))
        self.pool = nn.Linear(hidden, hidden)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0), persistent=False)
        bert_init(self)

    def forward(self, input_ids, attention_mask):
        b, s = input_ids.size(0), input_ids.size(1)
        pos = self.position_ids[:, :s]
        x = self.word(input_ids) + self.pos(pos) + self.token_type(torch.zeros_like(input_ids))
        x = self.ln(x)
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, b, s, bias)
        return x, torch.tanh(self.pool(x[:, 0]))


def masked_forward(layer, x, b, s, bias):
    q = layer.split_heads(layer.q(x), b, s)
    k = layer.split_heads(layer.k(x), b, s)
    v = layer.split_heads(layer.v(x), b, s)
    scores = torch.matmul(q, k.transpose(-1, -2)) / float(layer.dh) ** 0.5 + bias
    probs = torch.softmax(scores, dim=-1)
    ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, s, layer.heads * layer.dh)
    x = layer.ln1(x + layer.attn_out(ctx))
    return layer.ln2(x + layer.ffn_out(layer.gelu(layer.ffn_in(x))))


BertLayer.forward = masked_forward


def inputs(b, s):
    i = np.arange(b * s, dtype=np.int64)
    ids = ((i * 7919) % 1000).reshape(b, s)
    mask = np.ones((b, s), dtype=np.int64)
    mask[1::2, s - 5:] = 0
    return ids, mask


def export(model, path):
    ids, mask = inputs(2, 16)
    torch.onnx.export(model, (torch.from_numpy(ids), torch.from_numpy(mask)), path,
                      input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state", "pooler_output"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                    "attention_mask": {0: "batch", 1: "seq"},
                                    "last_hidden_state": {0: "batch", 1: "seq"},
                                    "pooler_output": {0: "batch"}},
                      opset_version=13, do_constant_folding=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true",
                    help="BERT-base instead (12 layers, hidden 768, 12 heads, FFN 3072, 512 "
                    "positions, vocabulary 30522) as OUT/bert_base_seq.onnx, with "
                    "OUT/bert_base_seq_io.npz: its inputs at (1, 128) and ONNX Runtime's outputs "
                    "(bench/bench_models.sh; never committed)")
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    import onnxruntime as ort
    if args.full:
        model = DynamicBert(vocab=30522, hidden=768, layers=12, heads=12, ffn=3072,
                            max_pos=512).eval()
        path = os.path.join(args.out, "bert_base_seq.onnx")
        export(model, path)
        ids, mask = inputs(1, 128)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        h, p = sess.run(None, {"input_ids": ids, "attention_mask": mask})
        np.savez(os.path.join(args.out, "bert_base_seq_io.npz"), input_ids=ids,
                 attention_mask=mask, last_hidden_state=h, pooler_output=p)
        return
    model = DynamicBert().eval()
    path = os.path.join(args.out, "bert_tiny_seq.onnx")
    export(model, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = {}
    for b, s in ((2, 64), (1, 128), (3, 37)):
        ids, mask = inputs(b, s)
        h, p = sess.run(None, {"input_ids": ids, "attention_mask": mask})
        with torch.no_grad():
            th, tp = model(torch.from_numpy(ids), torch.from_numpy(mask))
        err = max(np.abs(h - th.numpy()).max(), np.abs(p - tp.numpy()).max())
        assert err < 1e-4, err
        out["last_hidden_state_%d_%d" % (b, s)] = h
        out["pooler_output_%d_%d" % (b, s)] = p
    np.savez_compressed(os.path.join(args.out, "bert_tiny_seq_dyn_io.npz"), **out)
    print("onnxruntime", ort.__version__, {k: v.shape for k, v in out.items()}, file=sys.stderr)


if __name__ == "__main__":
    main()
