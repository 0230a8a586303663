"""Listing through cheap summaries and the metadata cache gives what reading every file gives."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session import SessionManager
from omp_session.tools import listing, listing_cache
from omp_session.tools.listing import list_all_sessions, list_sessions, session_info
from omp_session.tools.listing_cache import ListingCache, cache_path
from omp_session.tools.listing_cache import read_file as real_read

from .sessions import session_lines

CORPUS = sorted((Path(__file__).parents[1] / "conformance" / "load").glob("*.jsonl"))


def _reference(directory: Path) -> list[dict[str, Any]]:
    # What the listing gave before it had a cache: every file read in full.
    infos = [session_info(p) for p in sorted(directory.iterdir()) if p.suffix == ".jsonl" and p.is_file()]
    ordered = sorted((i for i in infos if i is not None), key=lambda i: (-i.modified.timestamp(), i.path))
    return [i.to_dict() for i in ordered]


def _listed(directory: Path) -> list[dict[str, Any]]:
    infos = list_sessions(directory)
    return [i.to_dict() for i in sorted(infos, key=lambda i: (-i.modified.timestamp(), i.path))]


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    for number, source in enumerate(CORPUS):
        target = directory / source.name
        shutil.copy(source, target)
        os.utime(target, (1_700_000_000 + number, 1_700_000_000 + number))
    (directory / "notes.txt").write_text("not a session")
    (directory / ".jsonl").write_text('{"type":"session","id":"hidden"}\n')  # no suffix: not listed
    return directory


def test_cold_and_warm_listings_equal_reading_every_file(corpus_dir: Path) -> None:
    expected = _reference(corpus_dir)
    assert _listed(corpus_dir) == expected  # cold: cheap summaries, details read on use
    assert cache_path().exists()
    assert _listed(corpus_dir) == expected  # warm: from the cache (message counts included now)
    cached = ListingCache().infos(os.fspath(corpus_dir))
    remembered = [info.to_dict() for _key, info in cached.values() if info is not None]
    assert sorted(remembered, key=lambda i: i["path"]) == sorted(expected, key=lambda i: i["path"])


def test_a_warm_listing_reads_no_file(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [info.to_dict() for info in list_sessions(corpus_dir)]  # cold, and every detail used once
    read: list[str] = []

    def counted(path: str) -> Any:
        read.append(path)
        return real_read(path)

    monkeypatch.setattr(listing_cache, "read_file", counted)
    warm = list_sessions(corpus_dir)
    assert read == []  # the listing itself reads no file
    texts = [info.all_messages_text for info in warm]  # each text: read from its file once...
    plain = [session_info(info.path) for info in warm]
    assert len(read) == len(warm) and texts == [info.all_messages_text for info in plain if info is not None]
    expected = _reference(corpus_dir)

    def no_reading(*args: object) -> None:
        raise AssertionError("a file was read")

    monkeypatch.setattr(listing, "read_file", no_reading)
    monkeypatch.setattr(listing_cache, "read_file", no_reading)
    assert _listed(corpus_dir) == expected  # ...then kept in the cache


@pytest.mark.parametrize("change", ["append", "same-size", "replace", "touch"])
def test_a_changed_file_is_never_served_from_the_cache(tmp_path: Path, change: str) -> None:
    with SessionManager.create("/proj", tmp_path) as session:
        session.append_message({"role": "user", "content": "first question", "timestamp": 1})
        session.append_message(
            {"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2}
        )
        path = Path(str(session.get_session_file()))
    _listed(tmp_path)
    stat = os.stat(path)
    data = path.read_bytes()
    if change == "append":
        with path.open("ab") as handle:
            handle.write(data.splitlines(keepends=True)[1].replace(b"first question", b"second one!!!!"))
    elif change == "same-size":
        path.write_bytes(data.replace(b"first question", b"other question"))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even with the old mtime
    elif change == "replace":
        other = tmp_path / "other.tmp"
        other.write_bytes(data.replace(b"first question", b"swapped in"))
        os.replace(other, path)
    else:
        os.utime(path, (2_000_000_000, 2_000_000_000))
    assert _listed(tmp_path) == _reference(tmp_path)


def test_a_corrupt_cache_is_replaced(corpus_dir: Path) -> None:
    cache_path().parent.mkdir(parents=True, exist_ok=True)
    cache_path().write_bytes(b"this is not a database" * 100)
    assert _listed(corpus_dir) == _reference(corpus_dir)
    assert ListingCache().infos(os.fspath(corpus_dir))  # a working cache again


def test_a_locked_cache_is_bypassed(corpus_dir: Path) -> None:
    _listed(corpus_dir)
    (corpus_dir / "later.jsonl").write_bytes((corpus_dir / "unicode.jsonl").read_bytes())
    holder = sqlite3.connect(cache_path(), isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")
    holder.execute("BEGIN EXCLUSIVE")  # another process in the middle of a write
    try:
        assert _listed(corpus_dir) == _reference(corpus_dir)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _listed(corpus_dir) == _reference(corpus_dir)


def test_list_all_uses_the_same_cache(isolated_agent_dir: Path) -> None:
    root = isolated_agent_dir / "sessions"
    for name, source in (("-a", CORPUS[0]), ("-b", CORPUS[-1])):
        (root / name).mkdir(parents=True)
        shutil.copy(source, root / name / source.name)
    expected = [i.to_dict() for i in list_all_sessions(root)]
    assert [i.to_dict() for i in list_all_sessions(root)] == expected
    assert [i.to_dict() for i in SessionManager.list_all()] == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=session_lines(), prefix=st.sampled_from([b"", b"\xef\xbb\xbf", b"\n", b"{}\n", b"[1]\n", b"junk\n"])
)
def test_cheap_summaries_equal_full_ones(lines: list[bytes], prefix: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "s.jsonl"
        path.write_bytes(prefix + b"".join(lines))
        expected = _reference(Path(directory))
        assert _listed(Path(directory)) == expected  # cold
        assert _listed(Path(directory)) == expected  # warm


def test_escaped_words_are_not_missed(tmp_path: Path) -> None:
    header = b'{"type":"session","version":3,"id":"esc","timestamp":"2025-06-02T14:00:00.000Z","cwd":"/p"}\n'
    user = b'{"type":"message","id":"u","parentId":null,"message":{"role":"\\u0075ser","content":"hidden"}}\n'
    compaction = b'{"type":"\\u0063ompaction","id":"c","parentId":"u","summary":"s","shortSummary":"T"}\n'
    (tmp_path / "s.jsonl").write_bytes(header + user + compaction)
    (info,) = list_sessions(tmp_path)
    assert (info.first_message, info.title) == ("hidden", "T")
    assert _listed(tmp_path) == _reference(tmp_path)


@pytest.mark.parametrize("state", ["cold", "warm"])
def test_listed_infos_behave_like_plain_ones(corpus_dir: Path, state: str) -> None:
    import copy
    import dataclasses
    import pickle

    if state == "warm":
        list_sessions(corpus_dir)  # fills the cache: the next listing's texts are read on use
    info = list_sessions(corpus_dir)[0]
    plain = session_info(Path(info.path))
    assert info == plain and repr(info) == repr(plain)
    assert dataclasses.replace(info, title="renamed").to_dict() == {**plain.to_dict(), "title": "renamed"}
    assert pickle.loads(pickle.dumps(info)) == plain and copy.copy(info) == plain


@pytest.mark.parametrize("state", ["cold", "warm"])
def test_an_info_is_complete_and_plain(corpus_dir: Path, state: str) -> None:
    # Every field but a warm info's text is computed by the listing, and that text comes from the
    # cache: deleting the files afterwards changes nothing.
    import dataclasses

    if state == "warm":
        list_sessions(corpus_dir)
    infos = list_sessions(corpus_dir)
    before = [(repr(info), info.message_count, info.all_messages_text) for info in infos]
    shutil.rmtree(corpus_dir)
    assert [(repr(info), info.message_count, info.all_messages_text) for info in infos] == before
    with pytest.raises(dataclasses.FrozenInstanceError):
        infos[0].title = "changed"  # type: ignore[misc]


def test_the_cache_can_be_switched_off_or_kept_in_memory(corpus_dir: Path) -> None:
    expected = _reference(corpus_dir)
    for cache in (ListingCache.disabled(), ListingCache.in_memory()):
        assert _sorted(list_sessions(corpus_dir, cache=cache)) == expected
        assert _sorted(list_sessions(corpus_dir, cache=cache)) == expected
    assert not cache_path().exists()  # neither wrote the on-disk cache


def _sorted(infos: list[listing.SessionInfo]) -> list[dict[str, Any]]:
    return [i.to_dict() for i in sorted(infos, key=lambda i: (-i.modified.timestamp(), i.path))]


def test_a_warm_text_lost_by_the_cache_is_read_from_the_file(corpus_dir: Path) -> None:
    expected = {info.path: info.all_messages_text for info in list_sessions(corpus_dir)}
    warm = list_sessions(corpus_dir)
    with sqlite3.connect(cache_path()) as db:
        db.execute("DELETE FROM texts")
    db.close()
    assert {info.path: info.all_messages_text for info in warm} == expected
    assert any(expected.values())


def _open_databases() -> set[str]:
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
        if os.path.basename(target).startswith("session-list.sqlite3"):
            found.add(name)
    return found


def test_a_text_read_after_the_listing_leaves_no_database_open(corpus_dir: Path) -> None:
    """A summary outlives the cache it came from (the listing closed it): reading its text then
    opens the database for that text only (it kept the connection open for good, one per
    listing, until the process ended: a long-running viewer or agent leaked descriptors)."""
    before = _open_databases()
    warm = list_sessions(corpus_dir)
    warm = list_sessions(corpus_dir)  # from the cache: the texts are read on first use
    assert _open_databases() == before
    plain = [session_info(info.path) for info in warm]
    assert [info.all_messages_text for info in warm] == [info.all_messages_text for info in plain if info]
    assert _open_databases() == before


def test_a_dict_without_the_text_never_reads_it(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    infos = list_sessions(corpus_dir)
    read: list[str] = []

    def counted(path: str) -> Any:
        read.append(path)
        return real_read(path)

    monkeypatch.setattr(listing_cache, "read_file", counted)
    dicts = [info.to_dict(with_text=False) for info in infos]
    assert read == [] and all("allMessagesText" not in data for data in dicts)
    assert [dict(info.to_dict(), allMessagesText=None) for info in infos] == [
        dict(data, allMessagesText=None) for data in dicts
    ]
