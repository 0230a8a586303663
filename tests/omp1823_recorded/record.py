"""Re-record the omp 18.2.3 regression cases: ``python tests/omp1823_recorded/record.py`` runs every
``cases/<name>.json`` through ``record.ts`` (bun + the real omp 18.2.3 at ``$OMP_PKG``, default
``/work/upstream/18.2.3/package``) in a fresh sandbox (``D`` and ``HOME``), normalises the raw
result with ``tests/conformance_omp18/normalize.py`` and writes ``cases/<name>.expected.json``.
Only the keys this harness records are kept (see README.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
NORMALIZE = HERE.parent / "conformance_omp18" / "normalize.py"
#: The raw keys record.ts fills (the others of the corpus protocol are not recorded).
RECORDED = (
    "returns",
    "file",
    "file_exists",
    "files",
    "header",
    "sessionId",
    "sessionName",
    "entries",
    "leafId",
    "context",
    "manager_state",
)


def _normalize() -> object:
    spec = importlib.util.spec_from_file_location("normalize_omp18", NORMALIZE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(case: Path, package: str) -> dict[str, object]:
    # The sandbox path has the length of the test's (tests/test_omp1823_recorded.py): sizes of
    # files that name it (a parentSession, a cwd) then match.
    with tempfile.TemporaryDirectory(prefix="omp1823-", dir="/tmp") as sandbox:
        directory, home = Path(sandbox) / "D", Path(sandbox) / "home"
        directory.mkdir()
        (home / ".omp" / "agent").mkdir(parents=True)
        env = {
            **os.environ,
            "HOME": str(home),
            "OMP_PKG": package,
            "PI_CODING_AGENT_DIR": str(home / ".omp" / "agent"),
        }
        for name in (
            "XDG_DATA_HOME",
            "XDG_STATE_HOME",
            "KITTY_WINDOW_ID",
            "TMUX_PANE",
            "TERM_SESSION_ID",
            "WT_SESSION",
        ):
            env.pop(name, None)
        done = subprocess.run(
            ["bun", "run", str(HERE / "record.ts"), str(case), str(directory)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        raw = json.loads(done.stdout)
    ops = json.loads(case.read_text(encoding="utf-8"))
    normalized = _normalize().normalize_ops(raw, ops)  # type: ignore[attr-defined]
    return {key: normalized[key] for key in RECORDED}


def main(names: list[str]) -> int:
    package = os.environ.get("OMP_PKG", "/work/upstream/18.2.3/package")
    cases = sorted(p for p in (HERE / "cases").glob("*.json") if not p.name.endswith(".expected.json"))
    for case in cases:
        if names and case.stem not in names:
            continue
        first, second = record(case, package), record(case, package)
        if first != second:
            print(f"{case.stem}: two recordings differ", file=sys.stderr)
            return 1
        out = case.with_name(f"{case.stem}.expected.json")
        out.write_text(json.dumps(first, ensure_ascii=True, indent=1) + "\n", encoding="utf-8")
        print(f"recorded {case.stem}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
