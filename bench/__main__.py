"""Benchmarks live here (see issue on performance); ``make bench`` runs this module."""

from __future__ import annotations

if __name__ == "__main__":
    print("no benchmarks yet")
