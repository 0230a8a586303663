"""Machinery for the sample generator: a deterministic clock and ids, message builders, a PNG encoder."""

from __future__ import annotations

import base64
import random
import struct
import zlib
from collections.abc import Container
from pathlib import Path
from typing import Any

from omp_session import Runtime, SessionManager
from omp_session.format.ids import SnowflakeGenerator, iso_from_ms
from omp_session.store.paths import encode_session_dir_name

HERE = Path(__file__).resolve().parent
HOME = "/home/ada"
DAY_MS = 86_400_000
START_MS = 1_748_856_720_000  # 2025-06-02T09:32:00Z
Message = dict[str, Any]


# -- a deterministic clock and ids ---------------------------------------------------------------


class Clock:
    """Milliseconds that move forward a little on every read, and a lot when told to."""

    def __init__(self, start_ms: int, seed: int) -> None:
        self.ms = start_ms
        #: What the sample sessions are created with: this clock and seeded ids.
        self.runtime = deterministic_runtime(self, seed)

    def read(self) -> int:
        self.ms += 350
        return self.ms

    def wait(self, seconds: float) -> None:
        self.ms += int(seconds * 1000)

    def iso(self, ms: int | None = None) -> str:
        return iso_from_ms(self.read() if ms is None else ms)


def deterministic_runtime(clock: Clock, seed: int) -> Runtime:
    """Seeded stand-ins for the clock and every id source; no terminal breadcrumbs (no ~/.omp writes)."""
    rng = random.Random(seed)
    snowflakes = SnowflakeGenerator(start_seq=seed, clock=clock.read)

    def entry_id(existing: Container[str]) -> str:
        while (candidate := f"{rng.getrandbits(32):08x}") in existing:
            pass
        return candidate

    return Runtime(now=clock.iso, new_session_id=snowflakes.next_id, new_entry_id=entry_id, breadcrumbs=False)


# -- message builders ------------------------------------------------------------------------------

PRICES = {"claude-sonnet-4-5": (3.0, 15.0, 0.30, 3.75), "claude-haiku-4-5": (1.0, 5.0, 0.10, 1.25)}


class Writer:
    """Builds realistic messages and appends them to one session."""

    def __init__(self, session: SessionManager, clock: Clock, rng: random.Random) -> None:
        self.session = session
        self.clock = clock
        self.rng = rng
        self.model = "claude-sonnet-4-5"

    def call_id(self) -> str:
        return "toolu_01" + "".join(
            self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789") for _ in range(22)
        )

    def user(self, text: str, *, wait: float = 40, images: list[Message] | None = None) -> str:
        self.clock.wait(wait)
        content: Any = text if not images else [{"type": "text", "text": text}, *images]
        return self.session.append_message(
            {"role": "user", "content": content, "timestamp": self.clock.read()}
        )

    def usage(self, fresh: int, output: int, cache_read: int, cache_write: int) -> Message:
        p_in, p_out, p_cr, p_cw = PRICES[self.model]
        cost = {
            "input": round(fresh * p_in / 1e6, 6),
            "output": round(output * p_out / 1e6, 6),
            "cacheRead": round(cache_read * p_cr / 1e6, 6),
            "cacheWrite": round(cache_write * p_cw / 1e6, 6),
        }
        cost["total"] = round(sum(cost.values()), 6)
        total = fresh + output + cache_read + cache_write
        return {
            "input": fresh,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "totalTokens": total,
            "cost": cost,
        }

    def assistant(
        self,
        text: str = "",
        *,
        thinking: str = "",
        calls: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
        tokens: tuple[int, int, int, int] = (3, 400, 12_000, 900),
        wait: float = 6,
        stop: str | None = None,
        error: str | None = None,
    ) -> tuple[str, list[str]]:
        self.clock.wait(wait)
        content: list[Message] = []
        if thinking:
            content.append(
                {
                    "type": "thinking",
                    "thinking": thinking,
                    "thinkingSignature": "EqQBCkYIBRgCKkD" + self.call_id()[8:],
                }
            )
        if text:
            content.append({"type": "text", "text": text})
        ids = []
        for name, arguments in calls:
            ids.append(self.call_id())
            content.append({"type": "toolCall", "id": ids[-1], "name": name, "arguments": arguments})
        message: Message = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": self.model,
            "usage": self.usage(*tokens),
            "stopReason": stop or ("toolUse" if calls else "stop"),
            "timestamp": self.clock.read(),
        }
        if error:
            message["errorMessage"] = error
        return self.session.append_message(message), ids

    def result(
        self,
        call_id: str,
        name: str,
        text: str,
        *,
        error: bool = False,
        wait: float = 1.5,
        images: list[Message] | None = None,
    ) -> str:
        self.clock.wait(wait)
        content: list[Message] = [{"type": "text", "text": text}, *(images or [])]
        return self.session.append_message(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": name,
                "content": content,
                "isError": error,
                "timestamp": self.clock.read(),
            }
        )

    def turn(
        self,
        text: str,
        calls: list[tuple[str, dict[str, Any], str]],
        *,
        thinking: str = "",
        tokens: tuple[int, int, int, int] = (3, 380, 14_000, 700),
    ) -> str:
        """One assistant message with tool calls, followed by their results."""
        entry, ids = self.assistant(
            text, thinking=thinking, calls=[(n, a) for n, a, _ in calls], tokens=tokens
        )
        for call_id, (name, _args, output) in zip(ids, calls, strict=True):
            entry = self.result(call_id, name, output)
        return entry

    def bash(self, command: str, output: str, exit_code: int = 0, *, wait: float = 20) -> str:
        self.clock.wait(wait)
        return self.session.append_message(
            {
                "role": "bashExecution",
                "command": command,
                "output": output,
                "exitCode": exit_code,
                "cancelled": False,
                "truncated": False,
                "timestamp": self.clock.read(),
            }
        )


# -- images (plain Python PNG encoder: palette colours, stored deflate, so bytes never vary) ------


def png(width: int, height: int, palette: list[tuple[int, int, int]], pixel: Any) -> bytes:
    rows = b"".join(b"\x00" + bytes(pixel(x, y) for x in range(width)) for y in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)
    plte = b"".join(bytes(colour) for colour in palette)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"PLTE", plte)
        + chunk(b"IDAT", zlib.compress(rows, 0))
        + chunk(b"IEND", b"")
    )


def latency_chart() -> bytes:
    """A 240×140 bar chart: p50/p95/p99 latency before (grey) and after (blue) the change."""
    palette = [(255, 255, 255), (208, 215, 222), (140, 149, 159), (9, 105, 218), (36, 41, 47)]
    bars = [(30, 52, 1), (58, 30, 3), (100, 112, 1), (128, 46, 3), (170, 128, 2), (198, 64, 3)]

    def pixel(x: int, y: int) -> int:
        if (y == 125 and 20 <= x <= 230) or (x == 20 and 10 <= y <= 125):
            return 4
        if y % 25 == 0 and 20 < x <= 230 and y < 125:
            return 1
        for left, height, colour in bars:
            if left <= x < left + 22 and 125 - height <= y < 125:
                return colour
        return 0

    return png(240, 140, palette, pixel)


def tiny_icon() -> bytes:
    """A 12×12 green check mark: small enough to stay inline in the session file."""
    palette = [(255, 255, 255), (26, 127, 55)]
    return png(
        12,
        12,
        palette,
        lambda x, y: 1 if (y == 8 - (x - 4) and 4 <= x <= 10) or (y == x + 3 and 1 <= x <= 5) else 0,
    )


def image_block(data: bytes) -> Message:
    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": "image/png"}


# -- the sessions ---------------------------------------------------------------------------------


def session_dir(root: Path, cwd: str) -> Path:
    return root / encode_session_dir_name(cwd, HOME, "/tmp", canonicalize=False)
