"""Finding libkiln, and the version check: a mismatched library gives a
clear error at import, never a crash later."""

from __future__ import annotations

import os
import subprocess

import kiln
from conftest import run_py

FAKE = r'''
const char *kiln_version(void) { return "9.9.9"; }
int kiln_api_version(void) { return 999; }
'''


def _cc(src: str, out: str) -> None:
    c = out + ".c"
    with open(c, "w") as f:
        f.write(src)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", out, c], check=True)


def test_loaded_library_matches():
    assert kiln._lib.lib.kiln_api_version() == kiln.API_VERSION
    assert kiln.library_version() == kiln.__version__
    assert os.path.exists(kiln.library_path)
    assert kiln.target_host().startswith("llvm")


def test_mismatched_version_is_a_clear_error(tmp_path):
    fake = str(tmp_path / "libkiln.so")
    _cc(FAKE, fake)
    r = run_py(["-c", "import kiln"], env={"KILN_LIBRARY_PATH": fake}, check=False)
    assert r.returncode != 0
    err = r.stderr
    assert "KilnLibraryError" in err and "C API version 999" in err and "9.9.9" in err
    assert f"needs C API version {kiln.API_VERSION}" in err and fake in err
    # a folder works too
    r = run_py(["-c", "import kiln"], env={"KILN_LIBRARY_PATH": str(tmp_path)}, check=False)
    assert "C API version 999" in r.stderr


def test_not_a_kiln_library(tmp_path):
    other = str(tmp_path / "libother.so")
    _cc("int something(void) { return 1; }\n", other)
    r = run_py(["-c", "import kiln"], env={"KILN_LIBRARY_PATH": other}, check=False)
    assert r.returncode != 0 and "no kiln_api_version" in r.stderr
    r = run_py(["-c", "import kiln"], env={"KILN_LIBRARY_PATH": str(tmp_path / "nothing.so")},
               check=False)
    assert r.returncode != 0 and "libkiln.so not found" in r.stderr


def test_no_struct_layouts_in_python():
    """Python holds only opaque handles: no ctypes Structure or Union mirrors
    a C layout (no class on them, no _fields_), so a change of a layout in C
    cannot silently corrupt memory."""
    import ast
    import glob

    pkg = os.path.dirname(kiln.__file__)
    for path in glob.glob(os.path.join(pkg, "*.py")):
        tree = ast.parse(open(path).read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).split(".")[-1] for b in node.bases}
                assert not bases & {"Structure", "Union", "BigEndianStructure",
                                    "LittleEndianStructure"}, (path, node.name)
            if isinstance(node, ast.Name):
                assert node.id != "_fields_", path
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("Structure", "_fields_"), path


def _header_params():
    """{function: parameter count} for every KILN_API function in the headers."""
    import glob
    import re

    out = {}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for path in glob.glob(os.path.join(root, "include", "kiln", "*.h")):
        text = re.sub(r"/\*.*?\*/", " ", open(path).read(), flags=re.S)
        for m in re.finditer(r"KILN_API\b[^;{]*?\b(kiln_\w+)\s*\(", text):
            i, depth, params, cur = m.end(), 1, [], ""
            while depth:
                ch = text[i]
                depth += ch == "("
                depth -= ch == ")"
                if ch == "," and depth == 1:
                    params.append(cur)
                    cur = ""
                elif depth:
                    cur += ch
                i += 1
            params.append(cur)
            params = [p for p in params if p.strip() not in ("", "void")]
            out[m.group(1)] = len(params)
    return out


def test_signatures_match_the_headers():
    """Every C signature the package declares names a public function of
    include/kiln/*.h with as many parameters, and the library exports it."""
    from kiln._lib import _SIGS, lib

    params = _header_params()
    assert len(params) > 250
    for name, sig in _SIGS.items():
        assert name in params, f"{name} is not a KILN_API function of include/kiln"
        assert params[name] == len(sig) - 1, (name, params[name], len(sig) - 1)
        assert hasattr(lib, name), f"libkiln does not export {name}"
    from kiln._lib import TE_BINARY, TE_UNARY

    assert all("kiln_" + n in _SIGS for n in TE_UNARY + TE_BINARY)
