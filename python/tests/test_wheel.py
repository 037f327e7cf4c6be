"""A wheel built from this tree bundles libkiln and works in a fresh venv
(no PYTHONPATH, no KILN_LIBRARY_PATH, no numpy)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import BUILD, ROOT


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "libkiln_cli.so")),
                    reason="needs a kiln build")
def test_wheel_in_fresh_venv(tmp_path):
    pytest.importorskip("build")
    out = tmp_path / "dist"
    src = tmp_path / "src"  # the build writes build/ and egg-info: not into the tree
    shutil.copytree(os.path.join(ROOT, "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    env = dict(os.environ, KILN_BUILD_DIR=BUILD)
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                        "--outdir", str(out), str(src)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = glob.glob(str(out / "*.whl"))
    names = zipfile.ZipFile(whl).namelist()
    assert "kiln/lib/libkiln.so.0" in names and "kiln/lib/libkiln_cli.so.0" in names
    assert "kiln/py.typed" in names and "linux" in os.path.basename(whl)
    assert "kiln/frontend/pytorch.py" in names and "kiln/frontend/_pytorch_nn.py" in names
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", whl],
                   check=True, timeout=300)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "KILN_LIBRARY_PATH", "VIRTUAL_ENV")}
    code = (
        "import kiln, os\n"
        "assert 'site-packages' in kiln.library_path, kiln.library_path\n"
        "from kiln import te\n"
        "A = te.placeholder((8,), name='A')\n"
        "B = te.compute((8,), lambda i: A[i] * 2.0, name='B')\n"
        "assert 'B[i] = A[i]' in kiln.lower(te.create_schedule(B.op), [A, B])\n"
        "kiln.build(te.create_schedule(B.op), [A, B], target='llvm')\n"
        "print(kiln.library_version())\n"
    )
    r = subprocess.run([py, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([py, "-m", "kiln", "--version"], env=env, capture_output=True,
                       text=True, cwd=str(tmp_path))
    assert r.returncode == 0 and r.stdout.startswith("kiln "), r.stderr
