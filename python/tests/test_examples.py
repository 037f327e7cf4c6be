"""Every script under examples/python runs and succeeds."""

from __future__ import annotations

import glob
import os

import pytest

from conftest import ROOT, run_py

EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "python", "*.py")))


def test_there_are_examples():
    names = {os.path.basename(p) for p in EXAMPLES}
    assert {"tutorial_vector_add.py", "pattern_pass.py", "onnx_vs_onnxruntime.py",
            "register_func.py"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_runs(path, tmp_path):
    r = run_py([path], cwd=str(tmp_path))
    assert r.stdout.strip(), "an example prints what it did"


def test_pattern_pass_plugin_from_the_cli(tmp_path, digits_onnx, build_dir):
    """The seed 001 pass as a plugin of the kiln binary."""
    import subprocess
    import sys

    env = dict(os.environ, KILN_PYTHON=sys.executable)
    r = subprocess.run([os.path.join(build_dir, "kiln"), "compile", digits_onnx, "-o",
                        str(tmp_path / "m.tar"), "--plugin",
                        os.path.join(ROOT, "examples", "python", "pattern_pass.py"),
                        "--pass", "fold_quantize_of_constant"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
