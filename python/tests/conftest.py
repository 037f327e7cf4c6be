"""Shared fixtures: the source tree, the build folder and a tiny model."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
os.environ.setdefault("KILN_LIBRARY_PATH", BUILD)
# never the user's kernel cache (as the C tests: the build tree's)
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(BUILD, "test-cache"))

import kiln  # noqa: E402  (after KILN_LIBRARY_PATH)

DIGITS = os.path.join(ROOT, "models", "digits", "digits_cnn.onnx")


@pytest.fixture(scope="session")
def root() -> str:
    return ROOT


@pytest.fixture(scope="session")
def build_dir() -> str:
    return BUILD


@pytest.fixture(scope="session")
def digits_onnx() -> str:
    return DIGITS


@pytest.fixture(scope="session")
def digits_tar(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("digits") / "digits.tar")
    g = kiln.from_onnx(DIGITS, shape_dict={"input": [1, 1, 8, 8]})
    kiln.graph.compile(g, path)
    return path


@pytest.fixture(scope="session")
def digits_data():
    z = np.load(os.path.join(ROOT, "models", "digits", "heldout.npz"))
    return {k: z[k] for k in z.files}


def run_py(args, env=None, cwd=None, check=True):
    """Run python with the package importable; returns the CompletedProcess."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    r = subprocess.run([sys.executable] + list(args), env=e, cwd=cwd, capture_output=True,
                       text=True, timeout=600)
    if check and r.returncode != 0:
        raise AssertionError(f"{args} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def run_threads(work, n=4):
    """Run work(k) for k < n on n threads at once; the exceptions they raised."""
    import threading

    errors = []

    def guarded(k):
        try:
            work(k)
        except BaseException as e:  # noqa: BLE001 - reported to the test
            errors.append(e)

    ts = [threading.Thread(target=guarded, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors
