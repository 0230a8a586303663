"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` into a temporary directory,
``pg_ctl start`` on a free port of 127.0.0.1 with the socket in that directory, stopped and removed
at the end. As root the server runs as the ``postgres`` user (``initdb`` refuses root)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

INSTALL_HINT = "no PostgreSQL server binaries (initdb, pg_ctl) found: apt-get install postgresql"


def find_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` (Debian), else ``initdb`` on PATH."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    for directory in candidates:
        if (directory / "initdb").exists() and (directory / "pg_ctl").exists():
            return directory
    found = shutil.which("initdb")
    return Path(found).parent if found and shutil.which("pg_ctl") else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class ThrowawayServer:
    """One temporary cluster. ``dsn`` is a ``postgresql://`` URL for the superuser ``postgres``."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="omp-pg-", dir="/tmp"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = [os.fspath(self.bin_dir / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed: {result.stderr.strip()}\n{tail}")

    def start(self) -> None:
        if self._as_postgres:
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self.root.chmod(0o755)
        self._run(
            "initdb",
            "-D",
            os.fspath(self.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        )
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=200"
        self._run(
            "pg_ctl",
            "-D",
            os.fspath(self.data),
            "-o",
            options,
            "-l",
            os.fspath(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", os.fspath(self.data), "-m", "fast", "-w", "-t", "60", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def throwaway_server() -> Iterator[ThrowawayServer]:
    """A started server, stopped and removed on exit (``RuntimeError`` without binaries)."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError(INSTALL_HINT)
    server = ThrowawayServer(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.stop()
