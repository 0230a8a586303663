"""Build of the optional compiled scanner (everything else is in pyproject.toml).

``src/omp_session/store/_scanner_c.pyx`` is compiled with Cython when a C compiler works; when
none does (``CC=false``, no gcc), the package installs without it and uses the pure-Python
scanner, after one line saying so. Never a failure.
"""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_NOTE = "omp-session: installing the pure-Python scanner (the compiled one did not build: {})"
_noted: list[str] = []


def _note(reason: object) -> None:
    # One line, once, whichever step found no compiler (the build, or the copy of what it made).
    if not _noted:
        _noted.append(str(reason))
        print(
            _NOTE.format(str(reason).splitlines()[0][:160] if str(reason) else "no compiler"), file=sys.stderr
        )


class OptionalBuildExt(build_ext):
    """``build_ext`` that leaves the extension out, with a note, when it cannot be compiled."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # distutils' PlatformError and friends
            _note(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # CompileError, LinkError, a missing compiler
            _note(f"{type(exc).__name__}: {exc}")


def _extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError:
        _note("Cython is not installed")
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
        _note(f"Cython failed: {exc}")
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
