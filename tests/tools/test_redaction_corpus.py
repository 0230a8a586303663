"""Done-when of issue 29: the planted-secret corpus (tests/tools/redaction_corpus.py) through every
output — export --redact as Markdown, HTML and JSONL, serve --redact, secrets scan (text, JSON, by
fingerprint), secrets scrub (dry run and applied) — and not one planted value survives, in any
encoding, in any output byte."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from omp_session import SessionManager
from omp_session.cli import main
from omp_session.tools.redaction import fingerprint
from omp_session.tools.session_redaction import RedactionOptions, redact_tree
from omp_session.web.app import create_app
from tests.tools.redaction_corpus import CONFIGURED_SECRET, ENV_SECRET_NAME, Planted, encodings, write_corpus
from tests.web.support import readable_export, serving


@pytest.fixture
def corpus(
    tmp_path: Path, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, list[Planted]]:
    (isolated_agent_dir / "secrets.yml").write_text(
        f'- type: plain\n  content: "{CONFIGURED_SECRET}"\n  friendlyName: vault passphrase\n',
        encoding="utf-8",
    )
    root = tmp_path / "sessions"
    path, planted = write_corpus(root / "-src-app")
    env_value = next(p.value for p in planted if p.kind == "env-secret")
    monkeypatch.setenv(ENV_SECRET_NAME, env_value)
    return root, path, planted


def assert_nothing_survives(output: bytes, planted: list[Planted], where: str) -> None:
    text = output.decode("utf-8", "replace")
    for item in planted:
        for form in encodings(item.value):
            assert form not in text, f"{where}: a {item.kind} survived ({form[:6]}…)"
        # A multi-line value must not survive line by line either (each long line of a PEM body).
        for part in item.value.split("\n"):
            if len(part) >= 16:
                assert part not in text, f"{where}: a line of a {item.kind} survived"


def run(args: list[str]) -> tuple[int, bytes]:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.stdout_bytes + result.stderr_bytes


def test_corpus_is_big_enough(corpus: tuple[Path, Path, list[Planted]]) -> None:
    _root, path, planted = corpus
    assert len({p.value for p in planted}) >= 200
    assert len({p.kind for p in planted}) >= 20
    data = path.read_bytes().decode()
    for item in planted:
        assert any(form in data for form in encodings(item.value)), item.kind  # every value is in the file


def test_exports_leak_nothing(corpus: tuple[Path, Path, list[Planted]], tmp_path: Path) -> None:
    root, path, planted = corpus
    code, md = run(["--dir", str(root), "export", str(path), "--redact", "-f", "md"])
    assert code == 0
    assert b"pattern redaction is a floor: review before sharing" in md
    assert re.search(rb"redacted \d+ values in \d+ places: ", md)
    assert b"dropped " in md and b"providerPayload" in md
    assert_nothing_survives(md, planted, "export md")

    html_out = tmp_path / "out.html"
    code, log = run(["--dir", str(root), "export", str(path), "--redact", "-f", "html", "-o", str(html_out)])
    assert code == 0 and b"review before sharing" in log
    assert_nothing_survives(html_out.read_bytes(), planted, "export html")
    assert b"[REDACTED:github-token#1]" in html_out.read_bytes()

    jsonl_out = tmp_path / "out.jsonl"
    code, log = run(
        [
            "--dir",
            str(root),
            "export",
            str(path),
            "--redact",
            "--anonymize-paths",
            "-f",
            "jsonl",
            "-o",
            str(jsonl_out),
        ]
    )
    assert code == 0 and b"review before sharing" in log
    assert_nothing_survives(jsonl_out.read_bytes() + log, planted, "export jsonl")
    # Still an omp session: it opens under the omp 18 dialect, with the branch's entries.
    manager = SessionManager.open(jsonl_out, dialect="18", read_only=True)
    assert len(manager.get_branch()) >= 15
    assert manager.get_header()["cwd"].startswith("/project")
    manager.close()


@pytest.mark.parametrize("dialect", ["18.2", "18.3"])
def test_redacted_jsonl_loads_in_the_conformance_harness(
    corpus: tuple[Path, Path, list[Planted]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dialect: str
) -> None:
    from tests.conformance_omp18_harness import run_load_case

    root, path, planted = corpus
    out = tmp_path / "export.jsonl"
    assert run(["--dir", str(root), "export", str(path), "--redact", "-f", "jsonl", "-o", str(out)])[0] == 0
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    raw = run_load_case(out, work, tmp_path / "agent-for-harness", dialect)
    assert "load_error" not in raw
    assert raw["file_changed_by_load"] is False
    assert raw["after_append"]["returns"][0].endswith("input.jsonl")
    assert_nothing_survives(json.dumps(raw, ensure_ascii=False).encode(), planted, "harness load")


def test_serve_redact_leaks_nothing_and_shows_the_banner(
    corpus: tuple[Path, Path, list[Planted]], tmp_path: Path
) -> None:
    root, _path, planted = corpus
    target = tmp_path / "redacted"
    options = RedactionOptions(agent_dir=Path(os.environ["PI_CODING_AGENT_DIR"]), environ=dict(os.environ))
    report, count = redact_tree(root, target, options)
    assert count == 1 and report.total_values >= 200
    app = create_app(target, banner_lines=[f"{count} session", *report.summary_lines()])
    with serving(app) as base:

        def get(url: str) -> tuple[int, bytes]:
            try:
                with urllib.request.urlopen(base + url, timeout=30) as response:
                    return int(response.status), bytes(response.read())
            except urllib.error.HTTPError as error:
                return error.code, b""

        status, index = get("/")
        assert status == 200
        assert b'class="redacted-banner"' in index
        assert b"review before sharing" in index
        refs = sorted(set(re.findall(r'href="(/session/[^"]+)"', index.decode())))
        assert refs
        pages = [index]
        for ref in refs:
            status, page = get(ref)
            assert status == 200
            assert b'class="redacted-banner"' in page
            pages.append(page)
            # Every entry of the session, as the page's windows and the export carry them.
            status, window = get(ref.replace("/session/", "/api/window/") + "?start=0")
            assert status == 200
            status, rows = get(ref.replace("/session/", "/api/rows/") + "?start=0&count=1000")
            status, export = get(ref.replace("/session/", "/export/"))
            assert status == 200
            pages += [window, rows, readable_export(export.decode("utf-8")).encode("utf-8")]
    for number, page in enumerate(pages):
        assert_nothing_survives(page, planted, f"serve page {number}")
    for written in target.rglob("*"):
        if written.is_file():
            assert_nothing_survives(written.read_bytes(), planted, f"served file {written.name}")


def test_scan_finds_every_value_and_prints_none(corpus: tuple[Path, Path, list[Planted]]) -> None:
    root, path, planted = corpus
    code, text_out = run(["--dir", str(root), "secrets", "scan", str(path)])
    assert code == 1  # findings
    assert_nothing_survives(text_out, planted, "scan text")
    code, json_out = run(["--dir", str(root), "secrets", "scan", "--all", "--no-agents", "--json"])
    assert code == 1
    assert_nothing_survives(json_out, planted, "scan json")
    findings = json.loads(json_out[: json_out.rindex(b"]") + 1])
    found = {f["fingerprint"] for f in findings}
    missing = [p.kind for p in planted if fingerprint(p.value) not in found]
    assert missing == []
    first = findings[0]
    assert set(first) >= {
        "rule",
        "confidence",
        "session",
        "entry_id",
        "field",
        "on_branch",
        "preview",
        "fingerprint",
    }
    assert any(f["on_branch"] is True for f in findings)
    assert {f["confidence"] for f in findings} >= {"high", "medium", "low"}
    code, by_fp = run(["--dir", str(root), "secrets", "scan", "--all", "--no-agents", "--by-fingerprint"])
    assert code == 1 and b"times in 1 session of 1 project" in by_fp
    assert_nothing_survives(by_fp, planted, "scan by fingerprint")


def test_scrub_dry_run_changes_nothing_and_apply_leaks_nothing(
    corpus: tuple[Path, Path, list[Planted]],
) -> None:
    root, path, planted = corpus
    before = path.read_bytes()
    code, dry = run(["--dir", str(root), "secrets", "scrub", str(path)])
    assert code == 0 and b"would scrub" in dry and b"dry run" in dry
    assert path.read_bytes() == before
    assert_nothing_survives(dry, planted, "scrub dry run")
    code, applied = run(["--dir", str(root), "secrets", "scrub", str(path), "--apply"])
    assert code == 0 and b"scrubbed " in applied
    after = path.read_bytes()
    assert_nothing_survives(after + applied, planted, "scrubbed file")
    assert not list(path.parent.glob("*.bak*"))
    # Lines without a secret are byte for byte what they were; the file still opens.
    old_lines, new_lines = before.split(b"\n"), after.split(b"\n")
    assert len(old_lines) == len(new_lines)
    unchanged = [old for old, new in zip(old_lines, new_lines, strict=True) if old == new]
    assert any(b'"type":"mode_change"' in line for line in unchanged)
    assert len(after) - len(after.split(b"\n", 1)[1]) == 256  # the title slot keeps its size
    manager = SessionManager.open(path, dialect="18", read_only=True)
    assert manager.get_header()["title"].count("[REDACTED:") >= 1
    manager.close()
    # Scrubbing again finds nothing left to change.
    code, again = run(["--dir", str(root), "secrets", "scrub", str(path), "--apply"])
    assert code == 0 and b"scrubbed " not in again


def test_scrub_backup_only_when_asked_and_with_a_warning(corpus: tuple[Path, Path, list[Planted]]) -> None:
    root, path, _planted = corpus
    before = path.read_bytes()
    code, out = run(["--dir", str(root), "secrets", "scrub", str(path), "--apply", "--backup"])
    assert code == 0 and b"keeps a copy of every secret" in out
    backups = list(path.parent.glob(path.name + ".scrub.bak*"))
    assert len(backups) == 1 and backups[0].read_bytes() == before


def test_scan_all_includes_other_agents_stores(
    corpus: tuple[Path, Path, list[Planted]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _path, _planted = corpus
    claude = tmp_path / "claude"
    project = claude / "projects" / "-src-app"
    project.mkdir(parents=True)
    token = "ghp_" + "Qw3Er5Ty7U" * 3 + "Zx9Cv8"
    record = {
        "type": "user",
        "uuid": "5d1f0c1e-0000-4000-8000-000000000001",
        "parentUuid": None,
        "sessionId": "5d1f0c1e-0000-4000-8000-00000000aaaa",
        "cwd": "/src/app",
        "timestamp": "2026-11-30T10:00:00.000Z",
        "message": {"role": "user", "content": f"use {token} to push"},
    }
    (project / "5d1f0c1e-0000-4000-8000-00000000aaaa.jsonl").write_text(json.dumps(record) + "\n")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    code, out = run(["--dir", str(root), "secrets", "scan", "--all", "--json"])
    assert code == 1
    findings = json.loads(out[: out.rindex(b"]") + 1])
    claude_findings = [f for f in findings if f["source"] == "claude"]
    assert [(f["kind"], f["entry_id"], f["field"]) for f in claude_findings] == [
        ("github-token", "5d1f0c1e-0000-4000-8000-000000000001", "message.content")
    ]
    assert token.encode() not in out
