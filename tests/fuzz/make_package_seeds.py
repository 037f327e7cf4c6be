#!/usr/bin/env python3
"""make_package_seeds.py OUT_DIR PACKAGE.tar...: seeds for fuzz_package.

fuzz_package reads a package's mod.so member as the metadata text the module
exports (it never loads fuzzed code). For each package kiln built, this writes
OUT_DIR/<name> with the same mod.json and mod.params and, as mod.so, that text
(read from the shared object's kiln_module_meta). Anything else (a malformed
archive, a mod.so that is not a kiln module) is copied byte for byte, so the
broken tars of test_runtime_executor stay broken. Deterministic: mtime 0,
uid 0, ustar.

Example, from a build's test outputs:
    python3 tests/fuzz/make_package_seeds.py tests/fuzz/corpus/package \\
        build/tests/exec_model.tar build/tests/cnn.tar build/tests/exec_t*.tar
"""
import ctypes
import io
import os
import shutil
import sys
import tarfile
import tempfile


def module_meta(so_bytes):
    """The kiln_module_meta text of a kiln module's bytes, or None."""
    if not so_bytes.startswith(b"\x7fELF"):
        return None
    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(so_bytes)
        f.flush()
        try:
            lib = ctypes.CDLL(f.name)
            return ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "kiln_module_meta")))
        except (OSError, ValueError):
            return None


def members(path):
    """{name: bytes} of a well-formed package, in archive order, or None."""
    try:
        with tarfile.open(path, "r:") as t:
            out = {}
            for m in t.getmembers():
                if not m.isfile() or m.name in out:
                    return None
                out[m.name] = t.extractfile(m).read()
            return out
    except (tarfile.TarError, OSError):
        return None


def write_package(path, files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            t.addfile(info, io.BytesIO(data))
    # the members and the two zero blocks that end an archive, without
    # tarfile's padding to 10 KiB (smaller seeds fuzz faster)
    end = 0
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue()), mode="r:") as t:
        for m in t.getmembers():
            end = max(end, m.offset_data + (m.size + 511) // 512 * 512)
    with open(path, "wb") as f:
        f.write(buf.getvalue()[:end] + bytes(1024))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        dest = os.path.join(out, os.path.basename(path))
        files = members(path)
        meta = module_meta(files["mod.so"]) if files and "mod.so" in files else None
        if meta is None:
            shutil.copyfile(path, dest)
            print(f"{dest}: copied as it is")
            continue
        files["mod.so"] = meta
        write_package(dest, files)
        print(f"{dest}: mod.so replaced by its {len(meta)} bytes of metadata")


if __name__ == "__main__":
    main()
