"""python -m kiln mirrors the kiln command line (it is the same code,
libkiln_cli), and a Python plugin's pass runs from either."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import numpy as np

import kiln
from conftest import run_py

PLUGIN = textwrap.dedent('''
    """A Python plugin: a pass the CLI runs with --pass."""
    import kiln
    from kiln.pattern import is_op, wildcard, rewrite

    @kiln.register_pass("plugin.relu_to_abs_relu", override=True)
    def relu_to_abs_relu(g):
        x = wildcard()
        def cb(pre, post, node_map):
            if pre.inputs[0].op == "abs":
                return None
            return post.graph.call("nn.relu", post.graph.call("abs", node_map[x][0]))
        return rewrite(is_op("nn.relu")(x), cb, g)
''')


def test_compile_run_inspect_version(digits_onnx, digits_data, tmp_path, root):
    tar = str(tmp_path / "d.tar")
    r = run_py(["-m", "kiln", "compile", digits_onnx, "-o", tar, "--input-shapes",
                "input:[2,1,8,8]"])
    assert "wrote" in r.stdout + r.stderr and os.path.exists(tar)
    np.savez(tmp_path / "in.npz", input=digits_data["input"][:2])
    run_py(["-m", "kiln", "run", tar, "--inputs", str(tmp_path / "in.npz"), "--outputs",
            str(tmp_path / "out.npz")])
    ref = np.load(os.path.join(root, "models", "digits", "reference_logits.npz"))["logits"]
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["logits"], ref[:2], rtol=1e-4,
                               atol=1e-4)
    r = run_py(["-m", "kiln", "run", tar, "--fill", "random", "--print-time", "--repeat", "3"])
    assert "median" in r.stdout
    r = run_py(["-m", "kiln", "inspect", tar])
    assert "logits" in r.stdout
    r = run_py(["-m", "kiln", "--version"])
    assert r.stdout.strip() == f"kiln {kiln.library_version()}"
    r = run_py(["-m", "kiln", "compile", "/nonexistent.onnx"], check=False)
    assert r.returncode != 0 and "nonexistent.onnx" in r.stderr
    r = run_py(["-m", "kiln", "bogus"], check=False)
    assert r.returncode == 2


def test_tune_tiny(digits_onnx, tmp_path):
    rec = str(tmp_path / "rec.json")
    run_py(["-m", "kiln", "tune", digits_onnx, "-o", rec, "--input-shapes", "input:[1,1,8,8]",
            "--trials", "3", "--tasks", "1", "--jobs", "1", "--repeat", "1"])
    lines = [json.loads(x) for x in open(rec) if x.strip()]
    assert lines and all("config" in x for x in lines)
    tar = str(tmp_path / "t.tar")
    run_py(["-m", "kiln", "compile", digits_onnx, "-o", tar, "--input-shapes",
            "input:[1,1,8,8]", "--tuning-records", rec])
    assert os.path.exists(tar)


def test_python_plugin_pass_from_both_clis(digits_onnx, tmp_path, build_dir):
    plugin = tmp_path / "my_passes.py"
    plugin.write_text(PLUGIN)
    for how, cmd in (("python", [sys.executable, "-m", "kiln"]),
                     ("binary", [os.path.join(build_dir, "kiln")])):
        dump = tmp_path / f"ir_{how}"
        tar = str(tmp_path / f"{how}.tar")
        args = cmd[1:] if how == "python" else []
        import subprocess

        env = dict(os.environ, KILN_PYTHON=sys.executable,
                   PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(__file__))))
        r = subprocess.run((cmd if how == "binary" else [sys.executable] + args) +
                           ["compile", digits_onnx, "-o", tar, "--plugin", str(plugin),
                            "--pass", "plugin.relu_to_abs_relu", "--dump-ir", str(dump)],
                           env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, (how, r.stdout, r.stderr)
        after = [f for f in os.listdir(dump) if "after_plugin.relu_to_abs_relu" in f]
        assert after, (how, os.listdir(dump))
        assert "abs(" in (dump / after[0]).read_text()
    # without the plugin the pass is unknown: a clear error, exit 2
    r = run_py(["-m", "kiln", "compile", digits_onnx, "--pass", "plugin.nothing"], check=False)
    assert r.returncode == 2 and "unknown pass 'plugin.nothing'" in r.stderr
