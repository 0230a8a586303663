"""Where omp keeps its files (reference semantics §1.1–§1.3), plus path-safety helpers.

Every function reads the real process state (``os.environ``, ``$HOME``, the process cwd,
``sys.platform``) only through parameters that default to it, so tests and embedders can inject their own.
Unlike upstream, which reads its env vars once at module load, values are read at call time.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TypeAlias

from omp_session.errors import UnsafeNameError
from omp_session.format.codec import display_text
from omp_session.format.ids import file_timestamp
from omp_session.store.legacy_dirs import migrate_home_dirs_once, move_legacy_dir

__all__ = [
    "absolute",
    "agent_dir",
    "blobs_dir",
    "config_root",
    "default_session_dir",
    "encode_session_dir_name",
    "home_dir",
    "is_within",
    "legacy_encode",
    "safe_child",
    "session_file_name",
    "session_file_path",
    "sessions_root",
    "temp_root",
    "terminal_sessions_dir",
    "validate_name",
]

logger = logging.getLogger(__name__)

StrPath: TypeAlias = "str | os.PathLike[str]"
Env: TypeAlias = Mapping[str, str]

_XDG_PLATFORMS = ("linux", "darwin")
_SEPARATORS = str.maketrans({"/": "-", "\\": "-", ":": "-"})
_MAX_NAME_BYTES = 255


# --- base directories (§1.1) ------------------------------------------------------------------------


def _env(env: Env | None) -> Env:
    return os.environ if env is None else env


def _resolve(path: StrPath, cwd: StrPath | None = None) -> str:
    """Node's ``path.resolve``: absolute against ``cwd`` (default: process cwd), normalised, no realpath."""
    base = os.getcwd() if cwd is None else os.fspath(cwd)
    return os.path.normpath(os.path.join(base, os.fspath(path)))


def home_dir(env: Env | None = None, home: StrPath | None = None) -> Path:
    """``os.homedir()``: the explicit ``home``, else ``$HOME`` from ``env``, else the user database."""
    if home is not None:
        return Path(home)
    value = _env(env).get("HOME")
    return Path(value) if value else Path.home()


def temp_root(env: Env | None = None) -> Path:
    """``os.tmpdir()`` on POSIX: ``$TMPDIR``, ``$TMP``, ``$TEMP`` or ``/tmp``, trailing ``/`` removed."""
    values = _env(env)
    value = values.get("TMPDIR") or values.get("TMP") or values.get("TEMP") or "/tmp"
    if len(value) > 1 and value.endswith("/"):
        value = value[:-1]
    return Path(value)


def config_root(env: Env | None = None, home: StrPath | None = None) -> Path:
    """``$HOME/.omp``; ``PI_CONFIG_DIR`` replaces the ``.omp`` part, joined *under* home (§1.1).

    Like Node's ``path.join``, an absolute value does not escape home (``/x`` → ``$HOME/x``); ``..`` is
    normalised. An empty value counts as unset.
    """
    name = _env(env).get("PI_CONFIG_DIR") or ".omp"
    joined = os.path.join(os.fspath(home_dir(env, home)), name.lstrip("/"))
    return Path(os.path.normpath(joined))


def agent_dir(env: Env | None = None, *, home: StrPath | None = None, cwd: StrPath | None = None) -> Path:
    """``<config root>/agent``, or ``PI_CODING_AGENT_DIR`` made absolute against ``cwd`` (§1.1)."""
    value = _env(env).get("PI_CODING_AGENT_DIR")
    if value:
        return Path(_resolve(value, cwd))
    return config_root(env, home) / "agent"


def _xdg_omp_dir(
    var: str, env: Env | None, home: StrPath | None, cwd: StrPath | None, platform: str | None
) -> Path | None:
    """``$<var>/omp`` when the XDG rule of §1.1 applies, else None.

    The rule: Linux/macOS only, only for the default agent dir, and only when ``$<var>/omp`` exists.
    """
    plat = sys.platform if platform is None else platform
    if not plat.startswith(_XDG_PLATFORMS):
        return None
    if agent_dir(env, home=home, cwd=cwd) != config_root(env, home) / "agent":
        return None
    base = _env(env).get(var)
    if not base:
        return None
    candidate = Path(base) / "omp"
    return candidate if os.path.exists(candidate) else None


def _agent_subdir(
    name: str,
    xdg_variable: str,
    env: Env | None,
    home: StrPath | None,
    cwd: StrPath | None,
    platform: str | None,
) -> Path:
    xdg = _xdg_omp_dir(xdg_variable, env, home, cwd, platform)
    return xdg / name if xdg else agent_dir(env, home=home, cwd=cwd) / name


def sessions_root(
    env: Env | None = None,
    *,
    home: StrPath | None = None,
    cwd: StrPath | None = None,
    platform: str | None = None,
) -> Path:
    """``<agent dir>/sessions``, or ``$XDG_DATA_HOME/omp/sessions`` under the XDG rule (§1.1)."""
    return _agent_subdir("sessions", "XDG_DATA_HOME", env, home, cwd, platform)


def blobs_dir(
    env: Env | None = None,
    *,
    home: StrPath | None = None,
    cwd: StrPath | None = None,
    platform: str | None = None,
) -> Path:
    """``<agent dir>/blobs``, or ``$XDG_DATA_HOME/omp/blobs`` under the XDG rule (§1.1)."""
    return _agent_subdir("blobs", "XDG_DATA_HOME", env, home, cwd, platform)


def blobs_dir_near(location: Path) -> Path:
    """The blob store that goes with sessions read from ``location`` (a sessions root, a project
    directory or a session file), for readers of stores that are not this machine's own.

    omp keeps ``blobs/`` beside ``sessions/`` (§1.1, §6.7): a root's sibling ``blobs`` directory, or
    the one beside the ``sessions`` directory a project sits in, when it exists; else the
    configured blob store (:func:`blobs_dir`). The one rule every view uses.
    """
    start = location if location.is_dir() else location.parent
    candidates = [start.parent / "blobs"]
    if start.parent.name == "sessions":  # a project directory (or a file in one) of an omp store
        candidates.append(start.parent.parent / "blobs")
    return next((c for c in candidates if c.is_dir()), None) or blobs_dir()


def terminal_sessions_dir(
    env: Env | None = None,
    *,
    home: StrPath | None = None,
    cwd: StrPath | None = None,
    platform: str | None = None,
) -> Path:
    """``<agent dir>/terminal-sessions``, or ``$XDG_STATE_HOME/omp/terminal-sessions`` (§1.1, §7.8)."""
    return _agent_subdir("terminal-sessions", "XDG_STATE_HOME", env, home, cwd, platform)


# --- per-project directory name (§1.2) --------------------------------------------------------------


def legacy_encode(path: StrPath) -> str:
    """§1.2 step 4 without the ``--`` wrapping: strip ONE leading ``/`` or ``\\``; ``/ \\ :`` → ``-``."""
    text = os.fspath(path)
    if text[:1] in ("/", "\\"):
        text = text[1:]
    return text.translate(_SEPARATORS)


def _canonical(path: str) -> str:
    """``realpath`` if the path exists, else the path itself (§1.2 step 1)."""
    return os.path.realpath(path) if os.path.exists(path) else path


def _relative_inside(path: str, base: str) -> str | None:
    """Relative path from ``base`` when ``path`` is ``base`` or inside it ("" for equal), else None."""
    try:
        rel = os.path.relpath(path, base)
    except ValueError:  # different drives on Windows
        return None
    if rel == os.curdir:
        return ""
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return None
    return rel


def _encode_canonical(path: str, home: str, tmp: str) -> str:
    """The §1.2 classification of an already canonical absolute path; home is tested before temp."""
    rel = _relative_inside(path, home)
    if rel is not None:
        return "-" + rel.translate(_SEPARATORS)
    rel = _relative_inside(path, tmp)
    if rel is not None:
        return "-tmp-" + rel.translate(_SEPARATORS) if rel else "-tmp"
    return f"--{legacy_encode(path)}--"


def encode_session_dir_name(
    cwd: StrPath,
    home: StrPath,
    tmp: StrPath,
    *,
    process_cwd: StrPath | None = None,
    canonicalize: bool = True,
) -> str:
    """The session-directory name of a project cwd (§1.2): ``-rel``, ``-tmp-rel`` or ``--<abs>--``.

    ``cwd`` is made absolute against ``process_cwd``; with ``canonicalize`` (the upstream behaviour)
    cwd, home and tmp are realpath'd when they exist, so symlinked paths classify like their targets.
    Windows' case-insensitive "inside" test is not reproduced. A lone surrogate in ``cwd`` (an
    imported transcript may record one) becomes U+FFFD, as Node writes such a string to the file
    system, instead of a name no file system call can encode.
    """
    paths = [_resolve(cwd, process_cwd), _resolve(home, process_cwd), _resolve(tmp, process_cwd)]
    if canonicalize:
        paths = [_canonical(p) for p in paths]
    return display_text(_encode_canonical(*paths))


def default_session_dir(
    cwd: StrPath,
    root: StrPath | None = None,
    *,
    env: Env | None = None,
    home: StrPath | None = None,
    tmp: StrPath | None = None,
    process_cwd: StrPath | None = None,
    platform: str | None = None,
    migrate_legacy: bool = True,
) -> Path:
    """``getDefaultSessionDir(cwd)``: ``<sessions root>/<encoded cwd>``, created with ``mkdir -p`` (§1.2).

    ``root`` defaults to :func:`sessions_root`. With ``migrate_legacy`` the legacy-directory migration
    of §1.2 runs first (:mod:`omp_session.store.legacy_dirs`: it keeps every file). Migration
    failures are logged and swallowed; failing to create the directory raises ``OSError``.
    """
    raw_home = home_dir(env, home)
    tmp_dir = temp_root(env) if tmp is None else Path(tmp)
    if root is None:
        root = sessions_root(env, home=raw_home, cwd=process_cwd, platform=platform)
    root_path = Path(root)
    target = root_path / encode_session_dir_name(cwd, raw_home, tmp_dir, process_cwd=process_cwd)
    if migrate_legacy:
        migrate_home_dirs_once(root_path, legacy_encode(os.fspath(raw_home)))
        legacy = root_path / f"--{legacy_encode(_resolve(cwd, process_cwd))}--"
        if legacy != target:
            move_legacy_dir(legacy, target)
    target.mkdir(parents=True, exist_ok=True)
    return target


# --- file names and path safety (§1.3) ---------------------------------------------------------------


def validate_name(name: str) -> str:
    """Return ``name`` if it is a single, safe path component; raise :class:`UnsafeNameError` otherwise.

    Refused: empty, ``.``, ``..``, anything containing ``/``, ``\\`` or NUL, and names longer than 255
    bytes once encoded for the filesystem (or not encodable at all). ``UnsafeNameError`` is also a
    ``ValueError``.
    """
    if name in ("", ".", ".."):
        raise UnsafeNameError(name, "empty or a dot directory")
    for bad in ("/", "\\", "\0"):
        if bad in name:
            raise UnsafeNameError(name, f"contains {bad!r}")
    try:
        size = len(os.fsencode(name))
    except UnicodeError as exc:
        raise UnsafeNameError(name, f"not encodable ({exc})") from None
    if size > _MAX_NAME_BYTES:
        raise UnsafeNameError(name, f"{size} bytes, the limit is {_MAX_NAME_BYTES}")
    return name


def safe_child(root: StrPath, name: str) -> Path:
    """``root / name`` after :func:`validate_name`: the result can only be a direct child of ``root``."""
    return Path(root) / validate_name(name)


def is_within(root: StrPath, path: StrPath) -> bool:
    """True if ``path`` is ``root`` or inside it, comparing real paths (a symlink leaving root is outside)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    try:
        return os.path.commonpath([real_root, real]) == real_root
    except ValueError:  # different drives, or mixing absolute and relative
        return False


def session_file_name(iso_timestamp: str, session_id: str) -> str:
    """``<file timestamp>_<session id>.jsonl`` (§1.3).

    Raises :class:`UnsafeNameError` if the id would make the name escape the directory.
    """
    return validate_name(f"{file_timestamp(iso_timestamp)}_{session_id}.jsonl")


def session_file_path(session_dir: StrPath, iso_timestamp: str, session_id: str) -> Path:
    """``<session dir>/<session file name>``, refusing ids that are not a plain file-name component."""
    return safe_child(session_dir, session_file_name(iso_timestamp, session_id))


def absolute(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute without resolving symlinks (omp keeps the path it was given)."""
    return Path(os.path.abspath(path))
