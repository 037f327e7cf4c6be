"""Packaging: `pip install ./python` or `python -m build python`.

The wheel bundles kiln's shared libraries (libkiln and libkiln_cli) from a
kiln build: $KILN_BUILD_DIR, else ../build beside this folder. Without a
build, the package is pure Python and finds libkiln at run time
($KILN_LIBRARY_PATH, the source tree's build folder, or the system's).
libkiln's own dependencies (protobuf-c, zlib, and XGBoost where it was
built with it) and a C compiler stay system packages (scripts/install-deps.sh).
"""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = [("libkiln.so", "libkiln.so.0"), ("libkiln_cli.so", "libkiln_cli.so.0")]


def build_dir():
    return os.environ.get("KILN_BUILD_DIR", os.path.join(HERE, "..", "build"))


def have_libs():
    return all(os.path.exists(os.path.join(build_dir(), src)) for src, _ in LIBS)


class BuildPy(build_py):
    def run(self):
        super().run()
        if not have_libs():
            print(f"kiln: no libkiln in {build_dir()}: the package will look for it at run time")
            return
        dst = os.path.join(self.build_lib, "kiln", "lib")
        os.makedirs(dst, exist_ok=True)
        for src, name in LIBS:
            # the real file, under its soname (libkiln_cli needs libkiln.so.0)
            shutil.copyfile(os.path.realpath(os.path.join(build_dir(), src)),
                            os.path.join(dst, name))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return have_libs()  # a platform wheel when it carries native code


setup(cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution)
