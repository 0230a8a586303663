"""The thresholds, chunk sizes and cache budgets of the fast paths, in one frozen object.

Every number the offset-index open, the lazy reads and the importers' searches decide by lives
here instead of as a module global, so a test (or a machine short of memory) passes other values
instead of patching modules: ``Runtime(tuning=Tuning(min_indexed_bytes=0))``, or a
``FileSessionStorage(tuning=...)`` of its own. The defaults are what the benchmarks chose
(docs/performance.md); none changes what a session holds, only how it is read.

The file backend reads the values it needs once per open (into its own attributes and locals),
never once per line.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_TUNING", "Tuning"]


@dataclass(frozen=True)
class Tuning:
    """How the fast paths read (see the module); all sizes in bytes."""

    #: Files smaller than this are loaded in full: no offset index is read or written for them.
    min_indexed_bytes: int = 256 * 1024
    #: A file modified this recently (ns) when it was indexed may change again within the same
    #: tick of the file system's clock, which its times would not show ("racy", as git calls it):
    #: its index then also records a CRC checked at the next open.
    racy_ns: int = 2_000_000_000
    #: The blocks an index's fingerprint samples of the file it describes: 17 blocks of this size
    #: spread over it, and the last ``fingerprint_tail_bytes``. An index written with other sizes
    #: is stale (rebuilt once).
    fingerprint_sample_bytes: int = 4096
    fingerprint_tail_bytes: int = 65536
    #: A cold open decodes the file's lines this much at a time.
    decode_chunk_bytes: int = 256 << 10
    #: Lazy reads: this many consecutive wanted lines are read as one run (one ``pread``) ...
    run_lines: int = 16
    #: ... an iteration over the entries reads about this much at a time ...
    iter_chunk_bytes: int = 1 << 20
    #: ... and a single line is read with this much of what follows it (a caller reading
    #: position after position).
    read_ahead_bytes: int = 64 << 10
    #: The decoded entries a lazily opened session keeps, by the size of their lines.
    entry_cache_bytes: int = 4 << 20
    #: Importers: a backward search for a few records maps this much of a file at once.
    search_window_bytes: int = 8 << 20
    #: Importers (Claude Code): up to this size a header hint searches the whole transcript for
    #: title records; beyond it only the last ``title_tail_bytes``.
    title_search_whole_bytes: int = 16 << 20
    title_tail_bytes: int = 4 << 20


#: The defaults (what every reader uses unless given another).
DEFAULT_TUNING = Tuning()
