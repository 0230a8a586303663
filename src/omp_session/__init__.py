"""omp-session: a byte-compatible, crash-safe Python session store for oh-my-pi sessions."""

from __future__ import annotations

__version__ = "0.1.0"
