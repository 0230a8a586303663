"""The benchmarks (``python -m bench``; see bench/README and docs/performance.md).

Every process a benchmark starts inherits this environment. A user's installed omp-session
runs from compiled bytecode (pip writes it at install; an editable checkout writes
``__pycache__`` on its first run), so a benchmark must too: with ``PYTHONDONTWRITEBYTECODE``
set (as on this project's build machines), every whole-process row would include compiling
about a hundred modules from source (0.45-0.6 s of CPU per ``omp-session`` command, measured
2026-12-02), which no user pays twice. The warm-up run of each case writes the bytecode.
"""

import os

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
