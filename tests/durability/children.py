"""Child processes for crash and concurrency tests: ``python -m tests.durability.children MODE PATH``.

Each prints one line per acknowledged operation, flushed as soon as the library call returned.
The parent kills them with SIGKILL at random moments and checks that nothing acknowledged is lost.
"""

from __future__ import annotations

import sys

from omp_session import SessionChangedError, SessionLockedError, SessionManager


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def append_forever(path: str, policy: str) -> None:
    session = SessionManager.open(path, durability=policy)  # type: ignore[arg-type]
    number = 0
    while True:
        _say(session.append_message({"role": "user", "content": f"message {number}", "timestamp": number}))
        number += 1


def rename_forever(path: str) -> None:
    session = SessionManager.open(path)
    number = 0
    while True:
        session.set_session_name(f"name {number}")
        _say(f"name {number}")
        number += 1


def append_once(path: str) -> None:
    session = SessionManager.open(path)
    _say(session.append_message({"role": "user", "content": "after migration", "timestamp": 1}))


def branch_forever(path: str) -> None:
    while True:
        session = SessionManager.open(path)
        leaf = session.get_leaf_id()
        assert leaf is not None
        _say(str(session.create_branched_session(leaf)))
        session.close()


def hold_lock(path: str) -> None:
    try:
        session = SessionManager.open(path)
    except SessionLockedError as exc:
        _say(f"locked {exc.holder_pid}")
        return
    _say("opened")
    sys.stdin.readline()  # keep the lock until the parent says so
    session.close()


def write_many(path: str, count: str) -> None:
    session = SessionManager.open(path)
    for number in range(int(count)):
        _say(session.append_message({"role": "user", "content": f"live {number}", "timestamp": number}))
    session.close()


def append_on_command(path: str) -> None:
    """One append per line on stdin; prints the id, or ``changed`` when the library refused."""
    session = SessionManager.open(path)
    _say("ready")
    for number, _line in enumerate(sys.stdin):
        try:
            _say(session.append_message({"role": "user", "content": f"cmd {number}", "timestamp": number}))
        except SessionChangedError:
            _say("changed")
    session.close()


def create_on_go(path: str) -> None:
    """Wait for a line on stdin, then open (creating) ``path`` and append twice."""
    _say("ready")
    sys.stdin.readline()
    try:
        session = SessionManager.open(path)
    except SessionLockedError:
        _say("locked")
        return
    for number in range(2):
        _say(session.append_message({"role": "user", "content": f"race {number}", "timestamp": number}))
    session.close()


def repair_on_go(path: str) -> None:
    """Wait for a line on stdin, then repair ``path``."""
    from omp_session.tools.repair import repair

    _say("ready")
    sys.stdin.readline()
    repair(path)
    _say("repaired")


def move_and_die(path: str, new_cwd: str) -> None:
    """``move_to(new_cwd)``, SIGKILLed by itself between the file's and the artifacts' renames."""
    import os
    import signal
    from pathlib import Path

    session = SessionManager.open(path)
    real_rename = os.rename

    def rename(source: str, target: str) -> None:
        if Path(source).is_dir():  # the artifacts: the session file has just been moved
            os.kill(os.getpid(), signal.SIGKILL)
        real_rename(source, target)

    os.rename = rename  # type: ignore[assignment]
    session.move_to(new_cwd)


MODES = {
    "append": lambda args: append_forever(args[0], args[1] if len(args) > 1 else "os"),
    "rename": lambda args: rename_forever(args[0]),
    "append-once": lambda args: append_once(args[0]),
    "branch": lambda args: branch_forever(args[0]),
    "hold": lambda args: hold_lock(args[0]),
    "write-many": lambda args: write_many(args[0], args[1]),
    "append-on-command": lambda args: append_on_command(args[0]),
    "create-on-go": lambda args: create_on_go(args[0]),
    "repair-on-go": lambda args: repair_on_go(args[0]),
    "move-and-die": lambda args: move_and_die(args[0], args[1]),
}

if __name__ == "__main__":
    MODES[sys.argv[1]](sys.argv[2:])
