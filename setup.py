"""Build of the optional compiled scanner (everything else is in pyproject.toml).

``src/omp_session/store/_scanner_c.pyx`` is compiled with Cython when a C compiler works; when
none does (``CC=false``, no gcc), the package installs without it and uses the pure-Python
scanner, after one line saying so. Never a failure.
"""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_NOTE = "omp-session: no working C compiler ({}); installing the pure-Python scanner"


class OptionalBuildExt(build_ext):
    """``build_ext`` that leaves the extension out, with a note, when it cannot be compiled."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # distutils' PlatformError and friends
            print(_NOTE.format(exc), file=sys.stderr)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # CompileError, LinkError, a missing compiler
            print(_NOTE.format(str(exc).splitlines()[0] if str(exc) else type(exc).__name__), file=sys.stderr)


def _extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError:
        print(_NOTE.format("Cython is not installed"), file=sys.stderr)
        return []
    extension = Extension(
        "omp_session.store._scanner_c",
        ["src/omp_session/store/_scanner_c.pyx"],
        extra_compile_args=["-O2"],
        optional=True,
    )
    try:
        return list(cythonize([extension], language_level=3, quiet=True))
    except Exception as exc:  # (a translation error is a bug of ours: the tests say which scanner ran)
        print(_NOTE.format(f"Cython failed: {exc}"), file=sys.stderr)
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
