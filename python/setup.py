"""Puts libbso.so into the bso package when it is built (pyproject.toml has the metadata).

The library comes from BSO_LIBRARY when set (a path to libbso.so), else it is built here
from the checkout this directory belongs to, with CMake (the client library alone).
"""
import os
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def built_library() -> str:
    given = os.environ.get("BSO_LIBRARY")
    if given:
        return given
    build = os.path.join(HERE, "build", "libbso")
    subprocess.run(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", "-DBSO_TESTS=OFF", "-DBSO_UI_NPM=OFF"],
                   check=True)
    subprocess.run(["cmake", "--build", build, "--target", "bso"], check=True)
    return os.path.join(build, "libbso.so")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "bso", "libbso.so")
        shutil.copyfile(os.path.realpath(built_library()), target)


class BinaryDistribution(Distribution):
    """The wheel holds a native library: it is tied to this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
