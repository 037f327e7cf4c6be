#!/usr/bin/env python3
"""make_package_seeds.py [--keep-elf] OUT_DIR PACKAGE.tar...: seeds for fuzz_package.

fuzz_package reads a package's mod.so member as the metadata text the module
exports, or, when the member is an ELF file, reads that text from its symbol
table (it never loads fuzzed code). For each input whose members can be
walked (as the harness's mutator walks them: by each header's size field),
this writes OUT_DIR/<name> with a fresh manifest.json first (package format
2: the sizes and SHA-256 of mod.so, mod.json and mod.params, include/kiln/
runtime.h), then the members with their headers as they were, so a seed
that was broken in its tar structure stays broken the same way; mod.so, if
it is a kiln module, is replaced by its kiln_module_meta text unless
--keep-elf is given (keep a few small ones whole: they seed the ELF checks).
An old manifest.json is dropped and made again, so running this over the
corpus brings every seed to the current format. Anything else is copied
byte for byte. A file named by its SHA-1 (as libFuzzer names what it finds)
is written under its new SHA-1. Deterministic.

Examples, from a build's test outputs and over the checked-in corpus:
    python3 tests/fuzz/make_package_seeds.py tests/fuzz/corpus/package \\
        build/tests/exec_model.tar build/tests/cnn.tar build/tests/exec_t*.tar
    python3 tests/fuzz/make_package_seeds.py new_corpus tests/fuzz/corpus/package/*
"""
import ctypes
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile

PACKAGE_FORMAT_VERSION = 2
MODULE_ABI_VERSION = 3  # KILN_MODULE_ABI_VERSION, src/runtime/module_abi.h


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


def walk(data):
    """([header, body] of each member, the bytes after them) as fuzz_package's
    mutator walks an archive: by each header's size field, stopping at a zero
    block or a size past the end. Headers keep their quirks (checksums, types,
    names), so a seed that was broken stays broken in the same way."""
    out, off = [], 0
    while off + 512 <= len(data):
        h = data[off:off + 512]
        if not any(h):
            break
        m = re.match(rb" *([0-7]*)", h[124:136])
        size = int(m.group(1), 8) if m.group(1) else 0
        if size > len(data) - off - 512:
            break
        out.append([h, data[off + 512:off + 512 + size]])
        off += 512 + (size + 511) // 512 * 512
    return out, data[off:]


def name_of(header):
    name = header[:100].split(b"\0", 1)[0].decode("latin-1")
    while name.startswith("./"):
        name = name[2:]
    return name


def header(name, size, like=None):
    """A ustar header for a regular member (`like`'s fields, with this size)."""
    h = bytearray(like if like else bytes(512))
    if not like:
        h[0:len(name)] = name.encode()
        h[100:108] = b"0000644\0"
        h[108:116] = h[116:124] = b"0000000\0"
        h[136:148] = b"00000000000\0"
        h[156:157] = b"0"
        h[257:265] = b"ustar\x0000"
    h[124:136] = b"%011o\0" % size
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % (sum(h) & 0o777777)
    return bytes(h)


def manifest(items):
    """manifest.json for the package's members among the (name, bytes)
    items, each listed once, as kiln_package_write writes it."""
    listed, seen = [], set()
    for name, data in items:
        if name in ("mod.so", "mod.json", "mod.params") and name not in seen:
            seen.add(name)
            listed.append({"name": name, "size": len(data),
                           "sha256": hashlib.sha256(data).hexdigest()})
    return (json.dumps({"format": "kiln-package", "version": PACKAGE_FORMAT_VERSION,
                        "abi": MODULE_ABI_VERSION, "members": listed}) + "\n").encode()


def rewrite(data, keep_elf):
    """The seed with a fresh manifest first, or None if no member is found.
    Also returns the size of the metadata that replaced mod.so, or None."""
    found, rest = walk(data)
    found = [m for m in found if name_of(m[0]) != "manifest.json"]
    if not found:
        return None, None
    meta = None
    for m in found:
        if name_of(m[0]) == "mod.so" and not keep_elf and meta is None:
            meta = module_meta(m[1])
            if meta is not None:
                m[0], m[1] = header("", len(meta), m[0]), meta
    text = manifest([(name_of(h), body) for h, body in found])
    out = header("manifest.json", len(text)) + text + bytes(-len(text) % 512)
    for h, body in found:
        out += h + body + bytes(-len(body) % 512)
    return out + (rest if rest else bytes(1024)), meta


def main():
    args = sys.argv[1:]
    keep_elf = "--keep-elf" in args
    args = [a for a in args if a != "--keep-elf"]
    if len(args) < 2:
        sys.exit(__doc__)
    out = args[0]
    os.makedirs(out, exist_ok=True)
    for path in args[1:]:
        base = os.path.basename(path)
        with open(path, "rb") as f:
            data, meta = rewrite(f.read(), keep_elf)
        if data is None:
            shutil.copyfile(path, os.path.join(out, base))
            print(f"{base}: copied as it is")
            continue
        if re.fullmatch(r"[0-9a-f]{40}", base):
            base = hashlib.sha1(data).hexdigest()
        with open(os.path.join(out, base), "wb") as f:
            f.write(data)
        what = f"mod.so replaced by its {len(meta)} bytes of metadata" if meta else "as it was"
        print(f"{base}: manifest added, {what}")

if __name__ == "__main__":
    main()
