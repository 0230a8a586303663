"""Deterministic synthetic sessions with realistic shapes (benchmark-only code).

A session is a v3 omp file: a header, a few state entries (model, thinking level, session init),
then turns of a user prompt, assistant messages with thinking, text and tool calls, tool results of
a few hundred bytes to a few KB, occasional images (as ``blob:sha256:`` references, as omp writes
them, with the blob in the store), labels, custom entries, compactions every few thousand entries
and, unless ``linear``, side branches left behind with a branch summary. The same shape always
gives the same bytes, so files are generated once into ``bench/data/`` and reused.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

#: Bump when the shapes change so cached files are regenerated.
GENERATOR_VERSION = 4
_WORD_TEXT = (
    "the a session file entry tree branch leaf compaction summary context model token cache read "
    "write function return value error test build install config path import module class method "
    "string number list dict parse decode encode append index offset byte line stream buffer lock "
    "fsync rename atomic crash recover agent tool call result assistant user thinking plan step next "
    "check refactor rename extract inline migrate upgrade version header parent child root label "
    "custom python typescript bun node rust go shell bash grep find sed awk make cargo pip npm yarn "
    "git diff naïve café résumé 数据 ファイル"
)
_WORDS = _WORD_TEXT.split()
_TOOLS = ("read", "bash", "edit", "grep", "find", "write")
_BASE_TIME = datetime(2025, 6, 1, 9, 0, 0, tzinfo=timezone.utc)
_IMAGE_BYTES = 3000  # large enough that omp moves the image to the blob store


def _text_pool() -> list[str]:
    rng = random.Random(20250601)
    return [" ".join(rng.choices(_WORDS, k=rng.randint(4, 14))).capitalize() + "." for _ in range(4096)]


_POOL = _text_pool()


@dataclass(frozen=True)
class Shape:
    """Knobs of one generated session."""

    target_bytes: int
    seed: int = 1
    target_messages: int = 0  # when set, stop at this many messages instead of at a size
    linear: bool = False
    compaction_every: int = 3000  # entries between compactions (0: never)
    branch_every: int = 700  # entries between side branches (ignored when linear)
    image_every: int = 400  # messages between images

    def file_name(self) -> str:
        kind = "linear" if self.linear else "branched"
        compactions = f"c{self.compaction_every}" if self.compaction_every else "nocompaction"
        target = f"{self.target_messages}msg" if self.target_messages else str(self.target_bytes)
        return f"v{GENERATOR_VERSION}-{kind}-{compactions}-{target}-s{self.seed}.jsonl"


@dataclass
class Stats:
    """What was generated."""

    path: Path
    size: int
    entries: int
    messages: int
    compactions: int


class _Writer:
    """Builds entries and keeps the tree bookkeeping (ids, current path) of one session."""

    def __init__(self, shape: Shape, blobs_dir: Path | None) -> None:
        self.shape = shape
        self.rng = random.Random(shape.seed)
        self.ids: set[str] = set()
        self.path: list[str] = []  # ids from the root to the current leaf
        self.clock = _BASE_TIME + timedelta(days=shape.seed % 365)
        self.out: list[bytes] = []
        self.size = 0
        self.entries = 0
        self.messages = 0
        self.compactions = 0
        self.since_compaction = 0
        self.since_branch = 0
        self.since_image = 0
        self.blobs_dir = blobs_dir

    # -- helpers -----------------------------------------------------------------------------

    def text(self, approx_bytes: int) -> str:
        parts: list[str] = []
        size = 0
        pool, randrange = _POOL, self.rng.randrange
        while size < approx_bytes:
            piece = pool[randrange(len(pool))]
            parts.append(piece)
            size += len(piece) + 1
        return " ".join(parts)

    def new_id(self) -> str:
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def tick(self) -> str:
        self.clock += timedelta(milliseconds=self.rng.randint(200, 20_000))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def ms(self) -> int:
        return int(self.clock.timestamp() * 1000)

    def write(self, value: dict[str, Any]) -> None:
        line = orjson.dumps(value) + b"\n"
        self.out.append(line)
        self.size += len(line)

    def emit(self, kind: str, **fields: Any) -> str:
        entry_id = self.new_id()
        parent = self.path[-1] if self.path else None
        self.write({"type": kind, "id": entry_id, "parentId": parent, "timestamp": self.tick(), **fields})
        self.entries += 1
        self.since_compaction += 1
        self.since_branch += 1
        self.messages += kind == "message"
        self.path.append(entry_id)
        return entry_id

    def image_block(self) -> dict[str, Any]:
        raw = self.rng.randbytes(_IMAGE_BYTES)
        digest = hashlib.sha256(raw).hexdigest()
        if self.blobs_dir is not None:
            target = self.blobs_dir / digest
            if not target.exists():
                self.blobs_dir.mkdir(parents=True, exist_ok=True)
                target.write_bytes(raw)
        return {"type": "image", "data": f"blob:sha256:{digest}", "mimeType": "image/png"}

    def want_image(self) -> bool:
        self.since_image += 1
        if self.since_image >= self.shape.image_every:
            self.since_image = 0
            return True
        return False

    # -- entries -----------------------------------------------------------------------------

    def user(self) -> None:
        text = self.text(self.rng.choice((30, 60, 120, 250)))
        content: Any = text
        if self.want_image():
            content = [{"type": "text", "text": text}, self.image_block()]
        self.emit("message", message={"role": "user", "content": content, "timestamp": self.ms()})

    def usage(self) -> dict[str, Any]:
        rng = self.rng
        inp, out, cached = rng.randint(10, 4000), rng.randint(10, 2000), rng.randint(0, 90_000)
        cost = {
            "input": round(inp * 3e-6, 6),
            "output": round(out * 1.5e-5, 6),
            "cacheRead": round(cached * 3e-7, 6),
            "cacheWrite": 0,
        }
        cost["total"] = round(sum(cost.values()), 6)
        return {
            "input": inp,
            "output": out,
            "cacheRead": cached,
            "cacheWrite": 0,
            "totalTokens": inp + out + cached,
            "cost": cost,
        }

    def assistant(self, tool: str | None) -> str | None:
        content: list[dict[str, Any]] = []
        if self.rng.random() < 0.4:
            content.append({"type": "thinking", "thinking": self.text(self.rng.choice((20, 60, 160)))})
        if tool is None or self.rng.random() < 0.3:
            content.append({"type": "text", "text": self.text(self.rng.choice((20, 60, 200)))})
        call_id = None
        if tool is not None:
            call_id = f"toolu_{self.rng.getrandbits(48):012x}"
            arguments = {"path": f"src/{self.rng.choice(_WORDS)}/{self.rng.choice(_WORDS)}.py"}
            if tool == "bash":
                arguments = {"command": f"{self.rng.choice(_WORDS)} --{self.rng.choice(_WORDS)}"}
            content.append({"type": "toolCall", "id": call_id, "name": tool, "arguments": arguments})
        self.emit(
            "message",
            message={
                "role": "assistant",
                "content": content,
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": self.rng.choice(("claude-sonnet-4-5", "claude-sonnet-4-5", "claude-opus-4-1")),
                "usage": self.usage(),
                "stopReason": "toolUse" if tool else "stop",
                "timestamp": self.ms(),
            },
        )
        return call_id

    def tool_result(self, tool: str, call_id: str) -> None:
        size = int(
            self.rng.lognormvariate(4.4, 1.0)
        )  # median ~80 B, tail to a few KB, long tail to several KB
        blocks: list[dict[str, Any]] = [{"type": "text", "text": self.text(min(size, 16_000))}]
        if tool == "read" and self.want_image():
            blocks.append(self.image_block())
        message = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": tool,
            "content": blocks,
            "isError": self.rng.random() < 0.03,
            "timestamp": self.ms(),
        }
        self.emit("message", message=message)

    def turn(self) -> None:
        self.user()
        for _ in range(self.rng.choice((0, 1, 1, 2, 3))):
            tool = self.rng.choice(_TOOLS)
            call_id = self.assistant(tool)
            assert call_id is not None
            self.tool_result(tool, call_id)
        self.assistant(None)
        self.occasional()

    def occasional(self) -> None:
        roll = self.rng.random()
        if roll < 0.02:
            self.emit("thinking_level_change", thinkingLevel=self.rng.choice(("low", "medium", "high")))
        elif roll < 0.03:
            self.emit("model_change", model="openai/gpt-5-mini", role="smol")
        elif roll < 0.04 and len(self.path) > 10:
            self.emit("label", targetId=self.path[-self.rng.randint(2, 10)], label=self.rng.choice(_WORDS))
        elif roll < 0.05:
            self.emit("custom", customType="plan-state", data={"step": self.rng.randint(1, 9)})
        elif roll < 0.055:
            self.emit("ttsr_injection", injectedRules=[self.rng.choice(("no-generated", "tests-first"))])
        elif roll < 0.06:
            self.emit(
                "custom_message",
                customType="note",
                content=self.text(80),
                display=True,
                attribution="agent",
            )

    def compaction(self) -> None:
        keep = min(len(self.path) - 1, self.rng.randint(8, 40))
        self.emit(
            "compaction",
            summary=self.text(self.rng.choice((1200, 2500, 4000))),
            shortSummary=self.text(40)[:60],
            firstKeptEntryId=self.path[-keep],
            tokensBefore=self.rng.randint(80_000, 180_000),
            details={"readFiles": ["src/a.py", "src/b.py"], "modifiedFiles": ["src/a.py"]},
        )
        self.compactions += 1
        self.since_compaction = 0

    def side_branch(self) -> None:
        back = self.rng.randint(2, 8)
        target = self.path[-back]
        del self.path[len(self.path) - back + 1 :]
        self.emit("branch_summary", fromId=target, summary=self.text(300))
        self.since_branch = 0

    def header(self) -> None:
        self.write(
            {
                "type": "session",
                "version": 3,
                "id": f"{self.rng.getrandbits(64):016x}",
                "timestamp": self.tick(),
                "cwd": f"/home/dev/project-{self.shape.seed % 50}",
            }
        )
        self.emit("model_change", model="anthropic/claude-sonnet-4-5")
        self.emit("thinking_level_change", thinkingLevel="medium")


def generate(path: Path, shape: Shape, blobs_dir: Path | None = None) -> Stats:
    """Write the session described by ``shape`` to ``path`` (overwriting it)."""
    writer = _Writer(shape, blobs_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".partial")
    with open(temp, "wb") as handle:
        writer.header()
        while (
            writer.messages < shape.target_messages
            if shape.target_messages
            else writer.size < shape.target_bytes
        ):
            writer.turn()
            if shape.compaction_every and writer.since_compaction >= shape.compaction_every:
                writer.compaction()
            if not shape.linear and shape.branch_every and writer.since_branch >= shape.branch_every:
                writer.side_branch()
            if len(writer.out) >= 20_000:
                handle.writelines(writer.out)
                writer.out.clear()
        handle.writelines(writer.out)
    temp.replace(path)
    return Stats(path, writer.size, writer.entries, writer.messages, writer.compactions)


def ensure(directory: Path, shape: Shape, blobs_dir: Path | None = None) -> Path:
    """The generated file for ``shape`` in ``directory``, generated only if missing."""
    path = directory / shape.file_name()
    if not path.exists():
        generate(path, shape, blobs_dir)
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.generate OUT.jsonl [--messages N | --bytes N] ...``: one synthetic session
    (the benchmarks' shapes) written to a file, to try the CLI and the viewer on a big session."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m bench.generate",
        description="Write a deterministic synthetic omp session (v3) of a realistic shape.",
        epilog="Example: python -m bench.generate /tmp/big.jsonl --messages 49300  "
        "(about 50,000 entries, 71 forks, 16 compactions)",
    )
    parser.add_argument("output", type=Path, help="the session file to write (overwritten)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--messages", type=int, default=0, help="stop at this many messages")
    size.add_argument("--bytes", type=int, default=5_000_000, help="stop at this size (default 5 MB)")
    parser.add_argument("--seed", type=int, default=1, help="the same seed gives the same bytes")
    parser.add_argument("--linear", action="store_true", help="no side branches")
    parser.add_argument("--branch-every", type=int, default=700, help="entries between side branches")
    parser.add_argument(
        "--compaction-every", type=int, default=3000, help="entries between compactions (0: none)"
    )
    parser.add_argument(
        "--blobs",
        type=Path,
        help="write the images' blobs here (default: the references only, no blob files)",
    )
    args = parser.parse_args(argv)
    shape = Shape(
        target_bytes=0 if args.messages else args.bytes,
        seed=args.seed,
        target_messages=args.messages,
        linear=args.linear,
        compaction_every=args.compaction_every,
        branch_every=args.branch_every,
    )
    stats = generate(args.output, shape, args.blobs)
    print(
        f"{stats.path}: {stats.entries} entries, {stats.messages} messages, "
        f"{stats.compactions} compactions, {stats.size} bytes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
