"""The thresholds, chunk sizes and cache budgets of the fast paths, in one frozen object.

Every number the offset-index open, the lazy reads and the importers' searches decide by lives
here instead of as a module global, so a test (or a machine short of memory) passes other values
instead of patching modules: ``Runtime(tuning=Tuning(min_indexed_bytes=0))``, or a
``FileSessionStorage(tuning=...)`` of its own. The defaults are what the benchmarks chose
(docs/performance.md); none changes what a session holds, only how it is read.

``read_strategy`` names the way a session file is read (:class:`ReadStrategy`): ``auto``, the
choice every open makes unless told otherwise, or one of the ways it chooses between, forced (the
CPython ``json`` pattern: one name, a fast variant and a reference behind it, one test suite run
through each; docs/performance.md, "How open reads a file").

The file backend reads the values it needs once per open (into its own attributes and locals),
never once per line.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from omp_session.errors import ReadStrategyError

__all__ = ["DEFAULT_TUNING", "ReadStrategy", "Tuning"]


class ReadStrategy(str, enum.Enum):
    """How the file backend reads a session file. Every strategy gives the same session (header,
    entries, leaf, context, usage, load issues): they differ only in what they read and build.

    A forced strategy decides which fast path an open *tries*; as under ``auto``, a fast path
    that cannot serve a file exactly (a file under ``min_indexed_bytes``, one that needs
    migration, a malformed line, a duplicate id, a stale index, ...) hands it to the full parse,
    which serves every file. A strategy this installation cannot run at all (the compiled scanner
    was not built) is refused when the :class:`Tuning` is made (``ValueError``), never replaced
    by another in silence: :meth:`available` lists those it can. Other stores (memory,
    PostgreSQL) hold no file to read and ignore it.
    """

    #: What every open does unless told otherwise: through the stored offset index when it is
    #: valid, else the one-pass cold open (through the compiled scanner where it is built and
    #: ``OMP_SESSION_PURE_SCANNER`` is not set, else ``cold-skim``'s), else the full parse.
    AUTO = "auto"
    #: The reference: ``parse_session`` decodes every line; no offset index is read or written.
    FULL = "full"
    #: The cold open through the compiled scanner (``store/_scanner_c.pyx``), ignoring a stored
    #: index; it writes a new one.
    COLD_COMPILED = "cold-compiled"
    #: The same cold open through the scanner's pure-Python reference (``store/_scanner_py.py``).
    COLD_PURE = "cold-pure"
    #: The cold open of an installation without the compiled scanner: a msgspec skim of every
    #: line for a file with a compaction in its last quarter, else every line decoded in one pass.
    COLD_SKIM = "cold-skim"
    #: Through the stored offset index, built first (as ``auto`` builds it) when it is missing
    #: or stale: the open every later ``auto`` open of an unchanged file is.
    WARM = "warm"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def available(cls) -> tuple[ReadStrategy, ...]:
        """The strategies this installation can run, ``auto`` first."""
        from omp_session.store import scanner  # (the extension module is imported once, there)

        return tuple(s for s in cls if s is not cls.COLD_COMPILED or scanner.c_scan is not None)


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
    #: A cold open of at least this much computes the index's CRC-32 of the file on another thread
    #: while it scans (zlib releases the GIL: on a second core the CRC costs no wall time).
    parallel_crc_bytes: int = 4 << 20
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
    #: How a session file is read (:class:`ReadStrategy`; a name such as ``"cold-pure"`` is
    #: accepted too). Any but ``auto`` is for tests, benchmarks and diagnosis.
    read_strategy: ReadStrategy = ReadStrategy.AUTO

    def __post_init__(self) -> None:
        if self.read_strategy is ReadStrategy.AUTO:
            return
        try:
            strategy = ReadStrategy(self.read_strategy)
        except ValueError:
            names = ", ".join(repr(str(s)) for s in ReadStrategy)
            raise ReadStrategyError(f"read_strategy {self.read_strategy!r} is none of {names}") from None
        object.__setattr__(self, "read_strategy", strategy)
        if strategy not in ReadStrategy.available():
            from omp_session.store import scanner

            why = scanner.NOTE.removeprefix("omp-session: ")
            runnable = ", ".join(repr(str(s)) for s in ReadStrategy.available())
            raise ReadStrategyError(
                f"read_strategy {str(strategy)!r} cannot run here ({why}); runnable: {runnable}"
            )


#: The defaults (what every reader uses unless given another).
DEFAULT_TUNING = Tuning()
