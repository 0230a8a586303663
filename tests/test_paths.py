"""Tests of omp_session.store.paths: base dirs (§1.1), directory names, migration (§1.2), file names (§1.3).

Every test injects env/home/tmp/cwd, so nothing depends on (or touches) the real user's directories.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from omp_session.store import legacy_dirs, paths
from omp_session.store.paths import (
    agent_dir,
    blobs_dir,
    config_root,
    default_session_dir,
    encode_session_dir_name,
    home_dir,
    is_within,
    legacy_encode,
    safe_child,
    session_file_name,
    session_file_path,
    sessions_root,
    temp_root,
    terminal_sessions_dir,
    validate_name,
)

# --- §1.1 base directories ---------------------------------------------------------------------------


def test_home_dir_sources(tmp_path: Path) -> None:
    assert home_dir({"HOME": "/h/env"}) == Path("/h/env")
    assert home_dir({"HOME": "/h/env"}, home=tmp_path) == tmp_path


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "/tmp"),
        ({"TMPDIR": "/var/t/"}, "/var/t"),  # trailing slash removed
        ({"TMPDIR": "/"}, "/"),
        ({"TMP": "/a"}, "/a"),
        ({"TEMP": "/b"}, "/b"),
        ({"TMPDIR": "/x", "TMP": "/a"}, "/x"),
        ({"TMPDIR": "", "TMP": "/a"}, "/a"),
    ],
)
def test_temp_root(env: dict[str, str], expected: str) -> None:
    assert temp_root(env) == Path(expected)


def test_config_root_default_and_override() -> None:
    assert config_root({"HOME": "/home/u"}) == Path("/home/u/.omp")
    assert config_root({}, home="/home/u") == Path("/home/u/.omp")
    assert config_root({"PI_CONFIG_DIR": ".myomp"}, home="/home/u") == Path("/home/u/.myomp")
    assert config_root({"PI_CONFIG_DIR": ""}, home="/home/u") == Path("/home/u/.omp")
    # like Node's path.join, an absolute value stays under home
    assert config_root({"PI_CONFIG_DIR": "/abs"}, home="/home/u") == Path("/home/u/abs")
    assert config_root({"PI_CONFIG_DIR": "a/../b"}, home="/home/u") == Path("/home/u/b")


def test_agent_dir_default_and_override() -> None:
    assert agent_dir({}, home="/home/u") == Path("/home/u/.omp/agent")
    assert agent_dir({"PI_CONFIG_DIR": ".x"}, home="/home/u") == Path("/home/u/.x/agent")
    env = {"PI_CODING_AGENT_DIR": "rel/agent"}
    assert agent_dir(env, home="/home/u", cwd="/tmp/exp") == Path("/tmp/exp/rel/agent")  # [verified]
    env = {"PI_CODING_AGENT_DIR": "/abs/agent/"}
    assert agent_dir(env, home="/home/u", cwd="/tmp/exp") == Path("/abs/agent")


def test_agent_dir_relative_to_process_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert agent_dir({"PI_CODING_AGENT_DIR": "a"}, home="/home/u") == tmp_path / "a"


def _dirs(env: dict[str, str], home: Path, platform: str = "linux") -> tuple[Path, Path, Path]:
    return (
        sessions_root(env, home=home, cwd="/", platform=platform),
        blobs_dir(env, home=home, cwd="/", platform=platform),
        terminal_sessions_dir(env, home=home, cwd="/", platform=platform),
    )


def test_default_locations(tmp_path: Path) -> None:
    agent = tmp_path / ".omp" / "agent"
    assert _dirs({}, tmp_path) == (agent / "sessions", agent / "blobs", agent / "terminal-sessions")


def test_agent_dir_override_moves_everything(tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "ag")}
    ag = tmp_path / "ag"
    assert _dirs(env, tmp_path) == (ag / "sessions", ag / "blobs", ag / "terminal-sessions")


def test_xdg_ignored_unless_omp_dir_exists(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state")}
    agent = tmp_path / ".omp" / "agent"
    assert _dirs(env, tmp_path) == (agent / "sessions", agent / "blobs", agent / "terminal-sessions")


def test_xdg_data_and_state(tmp_path: Path) -> None:
    (tmp_path / "data" / "omp").mkdir(parents=True)
    (tmp_path / "state" / "omp").mkdir(parents=True)
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state")}
    data, state = tmp_path / "data" / "omp", tmp_path / "state" / "omp"
    assert _dirs(env, tmp_path) == (data / "sessions", data / "blobs", state / "terminal-sessions")
    assert _dirs(env, tmp_path, platform="darwin")[0] == data / "sessions"


def test_xdg_state_independent_of_data(tmp_path: Path) -> None:
    (tmp_path / "state" / "omp").mkdir(parents=True)
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state")}
    sessions, _, terminals = _dirs(env, tmp_path)
    assert sessions == tmp_path / ".omp" / "agent" / "sessions"
    assert terminals == tmp_path / "state" / "omp" / "terminal-sessions"


def test_xdg_only_on_linux_and_macos(tmp_path: Path) -> None:
    (tmp_path / "data" / "omp").mkdir(parents=True)
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    assert _dirs(env, tmp_path, platform="win32")[0] == tmp_path / ".omp" / "agent" / "sessions"


def test_xdg_only_with_default_agent_dir(tmp_path: Path) -> None:
    (tmp_path / "data" / "omp").mkdir(parents=True)
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "PI_CODING_AGENT_DIR": str(tmp_path / "ag")}
    assert _dirs(env, tmp_path)[0] == tmp_path / "ag" / "sessions"
    # an override equal to the default still counts as the default
    env["PI_CODING_AGENT_DIR"] = str(tmp_path / ".omp" / "agent")
    assert _dirs(env, tmp_path)[0] == tmp_path / "data" / "omp" / "sessions"


# --- §1.2 directory names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cwd", "expected"),
    [
        ("/tmp/h1/proj/sub:dir", "-proj-sub-dir"),
        ("/tmp/h1", "-"),
        ("/tmp/h1/", "-"),
        ("/tmp/t1/abc/def", "-tmp-abc-def"),
        ("/tmp/t1", "-tmp"),
        ("/opt/some/where", "--opt-some-where--"),
        ("/", "----"),
        ("relative/dir", "--tmp-exp-relative-dir--"),
        ("/tmp/h1/../t1/x", "-tmp-x"),  # normalised like path.resolve
        ("/tmp/h10/x", "--tmp-h10-x--"),  # a sibling with a common prefix is not inside home
        ("/tmp/h1/..foo", "-..foo"),  # a name starting with '..' is still inside
        ("/tmp/h1/a\\b", "-a-b"),
    ],
)
def test_spec_table(cwd: str, expected: str) -> None:
    # HOME=/tmp/h1, TMPDIR=/tmp/t1, process cwd /tmp/exp, as in the [verified] table of §1.2
    name = encode_session_dir_name(cwd, "/tmp/h1", "/tmp/t1", process_cwd="/tmp/exp", canonicalize=False)
    assert name == expected


def test_spec_table_windows_row() -> None:
    # C:\Users\x outside home: no leading separator to strip, '\' and ':' become '-'
    windows_cwd = "C:\\Users\\x"
    assert "--" + legacy_encode(windows_cwd) + "--" == "--C--Users-x--"


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/a/b", "a-b"), ("\\a\\b", "a-b"), ("//a", "-a"), ("/", ""), ("a:b", "a-b"), ("", "")],
)
def test_legacy_encode_strips_one_separator(path: str, expected: str) -> None:
    assert legacy_encode(path) == expected


def test_home_is_tested_before_temp() -> None:
    name = encode_session_dir_name("/t/home/x", "/t/home", "/t", canonicalize=False)
    assert name == "-x"
    assert encode_session_dir_name("/t/other", "/t/home", "/t", canonicalize=False) == "-tmp-other"


def test_root_home_contains_everything() -> None:
    assert encode_session_dir_name("/opt/x", "/", "/tmp", canonicalize=False) == "-opt-x"


def test_symlinked_cwd_classifies_like_target(tmp_path: Path) -> None:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    (home / "proj").mkdir(parents=True)
    tmp.mkdir()
    (tmp_path / "link").symlink_to(home / "proj")
    assert encode_session_dir_name(tmp_path / "link", home, tmp) == "-proj"
    # without canonicalisation the link path itself is encoded (legacy form)
    raw = encode_session_dir_name(tmp_path / "link", home, tmp, canonicalize=False)
    assert raw == f"--{legacy_encode(tmp_path / 'link')}--"


def test_symlinked_home_and_tmp_are_realpathed(tmp_path: Path) -> None:
    real_home, real_tmp = tmp_path / "real_home", tmp_path / "private_tmp"
    (real_home / "p").mkdir(parents=True)
    (real_tmp / "q").mkdir(parents=True)
    (tmp_path / "home").symlink_to(real_home)
    (tmp_path / "tmp").symlink_to(real_tmp)  # like macOS /tmp -> /private/tmp
    assert encode_session_dir_name(real_home / "p", tmp_path / "home", tmp_path / "tmp") == "-p"
    assert encode_session_dir_name(tmp_path / "tmp" / "q", tmp_path / "home", tmp_path / "tmp") == "-tmp-q"


def test_missing_cwd_is_not_realpathed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert encode_session_dir_name(home / "not" / "yet", home, tmp_path / "t") == "-not-yet"


# --- default_session_dir and legacy migration ---------------------------------------------------------


class Layout:
    """A fake machine inside tmp_path: home, temp root, process cwd and a sessions root."""

    def __init__(self, base: Path) -> None:
        self.home = base / "home"
        self.tmp = base / "tmproot"
        self.root = base / "sessions"
        for d in (self.home, self.tmp, self.root):
            d.mkdir()
        self.h = legacy_encode(self.home)  # <H> of §1.2

    def session_dir(self, cwd: Path, *, migrate_legacy: bool = True) -> Path:
        return default_session_dir(
            cwd, self.root, home=self.home, tmp=self.tmp, process_cwd="/", migrate_legacy=migrate_legacy
        )


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _tree(root: Path) -> dict[str, str]:
    """Every file under root, relative path -> content."""
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def lay(tmp_path: Path) -> Layout:
    return Layout(tmp_path)


def test_creates_the_directory(lay: Layout) -> None:
    (lay.home / "proj").mkdir()
    target = lay.session_dir(lay.home / "proj")
    assert target == lay.root / "-proj"
    assert target.is_dir()
    assert lay.session_dir(lay.tmp / "a" / "b") == lay.root / "-tmp-a-b"
    assert (lay.root / "-tmp-a-b").is_dir()


def test_default_root_comes_from_env(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "TMPDIR": str(tmp_path / "t")}
    target = default_session_dir(tmp_path / "w", env=env, process_cwd="/", platform="linux")
    assert target == tmp_path / ".omp" / "agent" / "sessions" / "-w"
    assert target.is_dir()


def test_home_legacy_dir_moves_to_dash(lay: Layout) -> None:
    _write(lay.root / f"--{lay.h}--" / "a.jsonl", "home session")
    lay.session_dir(lay.tmp / "elsewhere")
    assert _tree(lay.root / "-") == {"a.jsonl": "home session"}
    assert not (lay.root / f"--{lay.h}--").exists()


def test_home_legacy_subdir_moves_to_dash_rest(lay: Layout) -> None:
    _write(lay.root / f"--{lay.h}-p3--" / "s.jsonl", "p3")
    _write(lay.root / f"--{lay.h}-a-b--" / "art" / "0.bash.log", "artifact")
    lay.session_dir(lay.tmp / "elsewhere")
    assert _tree(lay.root / "-p3") == {"s.jsonl": "p3"}
    assert _tree(lay.root / "-a-b") == {"art/0.bash.log": "artifact"}
    assert not (lay.root / f"--{lay.h}-p3--").exists()


def test_unrelated_legacy_dirs_and_files_are_left_alone(lay: Layout) -> None:
    _write(lay.root / "--opt-x--" / "s.jsonl", "opt")
    _write(lay.root / f"--{lay.h}-file--", "not a directory")
    _write(lay.root / f"--{lay.h}---" / "s.jsonl", "empty rest")
    lay.session_dir(lay.tmp / "elsewhere")
    assert (lay.root / "--opt-x--" / "s.jsonl").read_text() == "opt"
    assert (lay.root / f"--{lay.h}-file--").read_text() == "not a directory"
    assert (lay.root / f"--{lay.h}---" / "s.jsonl").exists()


def test_home_migration_runs_once_per_root(lay: Layout) -> None:
    lay.session_dir(lay.tmp / "first")
    _write(lay.root / f"--{lay.h}-late--" / "s.jsonl", "late")
    lay.session_dir(lay.tmp / "second")
    assert (lay.root / f"--{lay.h}-late--" / "s.jsonl").exists()
    assert not (lay.root / "-late").exists()


def test_home_migration_uses_raw_home(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "home").symlink_to(real)
    lay_root = tmp_path / "sessions"
    raw_h = legacy_encode(tmp_path / "home")
    _write(lay_root / f"--{raw_h}-p--" / "s.jsonl", "raw")
    _write(lay_root / f"--{legacy_encode(real)}-q--" / "s.jsonl", "real")
    default_session_dir(tmp_path / "x", lay_root, home=tmp_path / "home", tmp=tmp_path / "t")
    assert (lay_root / "-p" / "s.jsonl").read_text() == "raw"
    assert (lay_root / f"--{legacy_encode(real)}-q--").exists()


def test_per_cwd_legacy_dir_is_moved(lay: Layout) -> None:
    cwd = lay.tmp / "abc"
    cwd.mkdir()
    _write(lay.root / f"--{legacy_encode(cwd)}--" / "s.jsonl", "old")
    target = lay.session_dir(cwd)
    assert target == lay.root / "-tmp-abc"
    assert _tree(target) == {"s.jsonl": "old"}
    assert not (lay.root / f"--{legacy_encode(cwd)}--").exists()


def test_per_cwd_legacy_uses_resolved_not_real_path(lay: Layout, tmp_path: Path) -> None:
    (lay.tmp / "real").mkdir()
    link = tmp_path / "link"
    link.symlink_to(lay.tmp / "real")
    _write(lay.root / f"--{legacy_encode(link)}--" / "s.jsonl", "via link")
    target = lay.session_dir(link)
    assert target == lay.root / "-tmp-real"
    assert _tree(target) == {"s.jsonl": "via link"}


def test_legacy_name_equal_to_target_is_untouched(lay: Layout, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(lay.root / f"--{legacy_encode(outside)}--" / "s.jsonl", "keep")
    target = lay.session_dir(outside)
    assert target == lay.root / f"--{legacy_encode(outside)}--"
    assert _tree(target) == {"s.jsonl": "keep"}


def test_merge_keeps_both_same_named_files(lay: Layout) -> None:
    cwd = lay.tmp / "m"
    _write(lay.root / "-tmp-m" / "s.jsonl", "new")
    _write(lay.root / "-tmp-m" / "s.legacy-1.jsonl", "an earlier rescue")
    old = lay.root / f"--{legacy_encode(cwd)}--"
    _write(old / "s.jsonl", "old")
    _write(old / "only-old.jsonl", "only old")
    _write(old / "s" / "0.bash.log", "old artifact")
    _write(lay.root / "-tmp-m" / "s" / "0.bash.log", "new artifact")
    lay.session_dir(cwd)
    assert _tree(lay.root / "-tmp-m") == {
        "s.jsonl": "new",
        "s.legacy-1.jsonl": "an earlier rescue",
        "s.legacy-2.jsonl": "old",
        "only-old.jsonl": "only old",
        "s/0.bash.log": "new artifact",
        "s.legacy-1/0.bash.log": "old artifact",
    }
    assert not old.exists()


def test_merge_via_home_migration_keeps_both(lay: Layout) -> None:
    _write(lay.root / "-" / "x.jsonl", "new")
    _write(lay.root / f"--{lay.h}--" / "x.jsonl", "old")
    lay.session_dir(lay.tmp / "y")
    assert _tree(lay.root / "-") == {"x.jsonl": "new", "x.legacy-1.jsonl": "old"}


def test_target_that_is_a_file_is_set_aside_not_deleted(lay: Layout) -> None:
    cwd = lay.tmp / "f"
    _write(lay.root / "-tmp-f", "i am a file")
    _write(lay.root / f"--{legacy_encode(cwd)}--" / "s.jsonl", "old")
    target = lay.session_dir(cwd)
    assert target.is_dir()
    assert _tree(target) == {"s.jsonl": "old"}
    assert (lay.root / "-tmp-f.conflict-1").read_text() == "i am a file"


def test_target_file_without_legacy_dir_raises(lay: Layout) -> None:
    _write(lay.root / "-tmp-g", "file")
    with pytest.raises(OSError):
        lay.session_dir(lay.tmp / "g")
    assert (lay.root / "-tmp-g").read_text() == "file"


def test_migrate_legacy_false(lay: Layout) -> None:
    cwd = lay.tmp / "n"
    _write(lay.root / f"--{legacy_encode(cwd)}--" / "s.jsonl", "old")
    _write(lay.root / f"--{lay.h}--" / "s.jsonl", "home")
    target = lay.session_dir(cwd, migrate_legacy=False)
    assert target.is_dir() and not any(target.iterdir())
    assert (lay.root / f"--{legacy_encode(cwd)}--" / "s.jsonl").exists()
    assert (lay.root / f"--{lay.h}--" / "s.jsonl").exists()


def test_failures_are_swallowed_and_logged(
    lay: Layout, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cwd = lay.tmp / "e"
    _write(lay.root / f"--{legacy_encode(cwd)}--" / "s.jsonl", "old")

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(13, "denied")

    monkeypatch.setattr(os, "rename", refuse)
    with caplog.at_level(logging.WARNING, logger="omp_session.store.legacy_dirs"):
        target = lay.session_dir(cwd)
    assert target.is_dir()
    assert (lay.root / f"--{legacy_encode(cwd)}--" / "s.jsonl").read_text() == "old"
    assert "failed" in caplog.text


def test_partial_merge_leaves_old_dir_with_unmoved_files(
    lay: Layout, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cwd = lay.tmp / "p"
    _write(lay.root / "-tmp-p" / "keep.jsonl", "new")
    old = lay.root / f"--{legacy_encode(cwd)}--"
    _write(old / "a.jsonl", "a")
    _write(old / "stuck.jsonl", "stuck")
    real = legacy_dirs._rename_noreplace

    def flaky(src: Path, dst: Path) -> None:
        if src.name == "stuck.jsonl":
            raise PermissionError(13, "denied")
        real(src, dst)

    monkeypatch.setattr(legacy_dirs, "_rename_noreplace", flaky)
    with caplog.at_level(logging.WARNING, logger="omp_session.store.legacy_dirs"):
        lay.session_dir(cwd)
    assert _tree(lay.root / "-tmp-p") == {"keep.jsonl": "new", "a.jsonl": "a"}
    assert _tree(old) == {"stuck.jsonl": "stuck"}
    assert "stuck.jsonl" in caplog.text


def test_rename_noreplace_never_overwrites(tmp_path: Path) -> None:
    src, dst = _write(tmp_path / "a", "A"), _write(tmp_path / "b", "B")
    with pytest.raises(FileExistsError):
        legacy_dirs._rename_noreplace(src, dst)
    assert (src.read_text(), dst.read_text()) == ("A", "B")
    legacy_dirs._rename_noreplace(src, tmp_path / "c")
    assert (tmp_path / "c").read_text() == "A" and not src.exists()


def test_rename_noreplace_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(1, "links not supported")

    monkeypatch.setattr(os, "link", no_links)
    src = _write(tmp_path / "a", "A")
    legacy_dirs._rename_noreplace(src, tmp_path / "c")
    assert (tmp_path / "c").read_text() == "A" and not src.exists()


def test_move_entry_retries_when_free_name_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dst_dir = tmp_path / "dst"
    _write(dst_dir / "s.jsonl", "new")
    src = _write(tmp_path / "src" / "s.jsonl", "old")
    real = legacy_dirs._rename_noreplace
    calls: list[Path] = []

    def racing(a: Path, b: Path) -> None:
        calls.append(b)
        if len(calls) == 2:  # another process grabs s.legacy-1.jsonl just before us
            _write(b, "racer")
        real(a, b)

    monkeypatch.setattr(legacy_dirs, "_rename_noreplace", racing)
    legacy_dirs._move_entry(src, dst_dir)
    assert _tree(dst_dir) == {"s.jsonl": "new", "s.legacy-1.jsonl": "racer", "s.legacy-2.jsonl": "old"}


# --- §1.3 file names and path safety ------------------------------------------------------------------


def test_session_file_name() -> None:
    name = session_file_name("2026-11-30T08:25:49.226Z", "15e2312eeaab092c")
    assert name == "2026-11-30T08-25-49-226Z_15e2312eeaab092c.jsonl"


def test_session_file_names_sort_in_creation_order() -> None:
    stamps = ["2026-11-30T08:25:49.226Z", "2026-11-30T08:25:49.227Z", "2026-12-01T00:00:00.000Z"]
    names = [session_file_name(s, "0" * 16) for s in stamps]
    assert sorted(names) == names


def test_session_file_path(tmp_path: Path) -> None:
    path = session_file_path(tmp_path, "2026-11-30T08:25:49.226Z", "sess-1")
    assert path == tmp_path / "2026-11-30T08-25-49-226Z_sess-1.jsonl"


@pytest.mark.parametrize("bad_id", ["../../etc/passwd", "a/b", "a\\b", "a\0b", "x" * 250])
def test_session_file_name_refuses_escaping_ids(tmp_path: Path, bad_id: str) -> None:
    with pytest.raises(ValueError):
        session_file_name("2026-11-30T08:25:49.226Z", bad_id)
    with pytest.raises(ValueError):
        session_file_path(tmp_path, "2026-11-30T08:25:49.226Z", bad_id)


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "a/b", "/abs", "../x", "a\\b", "a\0b", "x" * 256, "é" * 128, "\ud800"],
)
def test_safe_child_refuses(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="unsafe file name"):
        safe_child(tmp_path, name)


@pytest.mark.parametrize("name", ["x" * 255, "é" * 127, "..a", ".hidden", "a b", "-", "----", "a:b"])
def test_safe_child_accepts(tmp_path: Path, name: str) -> None:
    assert safe_child(tmp_path, name) == tmp_path / name
    assert validate_name(name) == name


def test_is_within(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "root2").mkdir()
    assert is_within(root, root)
    assert is_within(root, root / "sub")
    assert is_within(root, root / "not" / "yet")
    assert is_within(root, root / "sub" / ".." / "x")
    assert not is_within(root, root / ".." / "root2")
    assert not is_within(root, tmp_path / "root2")  # common string prefix is not containment
    assert not is_within(root, tmp_path)


def test_is_within_follows_symlinks(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    (outside / "back").symlink_to(root)
    assert not is_within(root, root / "escape")
    assert not is_within(root, root / "escape" / "f.jsonl")
    assert is_within(root, outside / "back" / "f.jsonl")


def test_is_within_symlinked_root(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    assert is_within(tmp_path / "alias", real / "x")
    assert is_within(real, tmp_path / "alias" / "x")


def test_is_within_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkdir("r")
    assert is_within("r", "r/x")
    assert not is_within("r", "x")


def test_symlinked_legacy_dir_is_not_merged(lay: Layout, tmp_path: Path) -> None:
    cwd = lay.tmp / "s"
    elsewhere = tmp_path / "elsewhere"
    _write(elsewhere / "s.jsonl", "linked")
    _write(lay.root / "-tmp-s" / "t.jsonl", "new")
    (lay.root / f"--{legacy_encode(cwd)}--").symlink_to(elsewhere)
    lay.session_dir(cwd)
    assert _tree(lay.root / "-tmp-s") == {"t.jsonl": "new"}
    assert _tree(elsewhere) == {"s.jsonl": "linked"}
    assert (lay.root / f"--{legacy_encode(cwd)}--").is_symlink()


def test_rename_noreplace_directories(tmp_path: Path) -> None:
    _write(tmp_path / "a" / "f", "A")
    _write(tmp_path / "b" / "f", "B")
    with pytest.raises(FileExistsError):
        legacy_dirs._rename_noreplace(tmp_path / "a", tmp_path / "b")
    legacy_dirs._rename_noreplace(tmp_path / "a", tmp_path / "c")
    assert _tree(tmp_path) == {"b/f": "B", "c/f": "A"}


def test_blobs_dir_near_is_the_one_rule_for_readers(tmp_path: Path, isolated_agent_dir: Path) -> None:
    # Beside a sessions root, beside the `sessions` directory a project sits in, else configured.
    store = tmp_path / "agent"
    project = store / "sessions" / "-work-app"
    project.mkdir(parents=True)
    session = project / "s.jsonl"
    session.write_text("")
    configured = isolated_agent_dir / "blobs"  # PI_CODING_AGENT_DIR/blobs
    assert paths.blobs_dir_near(store / "sessions") == configured  # no blobs/ yet
    (store / "blobs").mkdir()
    assert paths.blobs_dir_near(store / "sessions") == store / "blobs"
    assert paths.blobs_dir_near(project) == store / "blobs"
    assert paths.blobs_dir_near(session) == store / "blobs"
    loose = tmp_path / "elsewhere" / "x.jsonl"
    loose.parent.mkdir()
    loose.write_text("")
    assert paths.blobs_dir_near(loose) == configured
