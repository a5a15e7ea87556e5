"""Builds the extension module with the project's CMake (the same target the
test build makes) and installs it inside the kiln package. Offline on
Debian: python3 -m pip install --no-build-isolation . (README, "Python")."""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, extension):
        build = pathlib.Path(os.environ.get("KILN_PIP_BUILD_DIR", ROOT / "build" / "pip")).resolve()
        jobs = os.environ.get("KILN_JOBS", str(os.cpu_count() or 2))
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *generator, "-DCMAKE_BUILD_TYPE=Release",
                        "-DKILN_BUILD_TESTS=OFF", "-DKILN_BUILD_EXAMPLES=OFF", "-DKILN_BUILD_PYTHON=ON",
                        "-DKILN_PYTHON=" + sys.executable], check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "_kiln", "-j", jobs], check=True)
        built = next((build / "python" / "kiln").glob("_kiln*.so"))
        target = pathlib.Path(self.get_ext_fullpath(extension.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(
    packages=["kiln"],
    package_dir={"kiln": "python/kiln"},
    ext_modules=[CMakeExtension("kiln._kiln")],
    cmdclass={"build_ext": CMakeBuild},
)
