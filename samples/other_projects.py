"""The other projects: a blog post with images, a quick question with a model switch and an aborted
turn, a plan-mode session with an injected rule, and an ops session with three tries at one question."""

from __future__ import annotations

import random
from pathlib import Path

from _kit import Clock, Writer, image_block, latency_chart, session_dir, tiny_icon

from omp_session import SessionManager


def _post_edits(session: SessionManager, w: Writer, clock: Clock) -> None:
    """The numbers computed in Python, the post mentioned, edited and previewed (an inline icon)."""
    clock.wait(120)
    session.append_message(
        {
            "role": "pythonExecution",
            "code": "before = [52, 112, 128]\nafter = [30, 46, 64]\nprint([f'{1 - a / b:.0%}' for a, b "
            "in zip(after, before)])",
            "output": "['42%', '59%', '50%']\n",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": clock.read(),
        }
    )
    clock.wait(30)
    session.append_message(
        {
            "role": "fileMention",
            "files": [
                {
                    "path": "posts/2025-06-pool-sizing.md",
                    "lineCount": 9,
                    "content": "---\ntitle: Sizing the connection pool\ndate: 2025-06-04\n---\n\nOur API "
                    "spent more time waiting for database connections than talking to the "
                    "database.\n\n## Results\n\nTODO\n",
                }
            ],
            "timestamp": clock.read(),
        }
    )
    w.user(
        "Put it under Results in @posts/2025-06-pool-sizing.md, with the percentages I just computed.", wait=5
    )
    _entry, ids = w.assistant(
        "Adding the paragraph with the relative improvements (42 %, 59 %, 50 %).",
        calls=[
            (
                "edit",
                {
                    "path": "posts/2025-06-pool-sizing.md",
                    "oldText": "TODO",
                    "newText": "p50 −42 %, p95 −59 %, p99 −50 %.",
                },
            ),
            ("preview", {"path": "posts/2025-06-pool-sizing.md"}),
        ],
        tokens=(3, 260, 5_900, 400),
    )
    w.result(ids[0], "edit", "Successfully replaced 1 occurrence in posts/2025-06-pool-sizing.md")
    w.result(
        ids[1],
        "preview",
        "Rendered posts/2025-06-pool-sizing.md: build ok",
        images=[image_block(tiny_icon())],
    )
    w.assistant("The post builds and the Results section is filled in.", tokens=(3, 40, 6_400, 90))


def blog_session(root: Path, clock: Clock, rng: random.Random) -> Path:
    """An image from the user (moved to the blob store), a Python run, a file mention, an inline icon."""
    cwd = "/home/ada/projects/blog"
    session = SessionManager.create(cwd, session_dir(root, cwd), runtime=clock.runtime)
    w = Writer(session, clock, rng)
    session.append_model_change("anthropic/claude-sonnet-4-5")
    w.user(
        "Here is the latency chart from yesterday's load test (grey: before, blue: after the connection-pool "
        "change). Write the paragraph for the post that explains it.",
        images=[image_block(latency_chart())],
    )
    w.assistant(
        "**What changed.** With the connection pool sized to the worker count, requests no longer queue "
        "for a "
        "database connection. The chart shows it at every percentile: p50 drops from 52 ms to 30 ms, p95 "
        "from 112 ms to 46 ms, and the tail improves most — p99 falls from 128 ms to 64 ms.\n\n"
        "> The slowest requests were the ones waiting for a connection, so they gained the most.",
        thinking="Three groups of bars: p50, p95, p99; grey before, blue after. Read off the heights and "
        "describe the tail effect, since that is the interesting part.",
        tokens=(1_650, 310, 0, 4_200),
    )
    _post_edits(session, w, clock)
    session.close()
    return Path(str(session.get_session_file()))


def quick_question_session(root: Path, clock: Clock, rng: random.Random) -> Path:
    """A short question, a model switch to a small model, and an aborted answer."""
    cwd = "/home/ada/projects/blog"
    session = SessionManager.create(cwd, session_dir(root, cwd), runtime=clock.runtime)
    w = Writer(session, clock, rng)
    session.append_model_change("anthropic/claude-sonnet-4-5")
    w.user("What's the difference between `git rebase --onto` and a plain rebase, in two sentences?")
    w.assistant(
        "A plain `git rebase main` replays the commits of your branch that are not on `main` on top of it. "
        "`git rebase --onto new-base old-base` replays only the commits after `old-base`, so you can "
        "move part "
        "of a branch, or drop its first commits, onto any other base.",
        tokens=(820, 96, 0, 0),
    )
    session.append_model_change("anthropic/claude-haiku-4-5", "smol")
    w.model = "claude-haiku-4-5"
    w.user("And `--fork-point`?", wait=25)
    w.assistant("", tokens=(0, 0, 0, 0), stop="aborted", error="Request was aborted", wait=2)
    w.user("Never mind, found it in the docs.", wait=15)
    w.assistant(
        "👍 The man page example for `--fork-point` is the clearest explanation.", tokens=(900, 20, 0, 0)
    )
    session.close()
    return Path(str(session.get_session_file()))


def plan_session(root: Path, clock: Clock, rng: random.Random) -> Path:
    """Plan mode, an injected rule (TTSR), MCP tool selection and a plan in Markdown."""
    cwd = "/tmp/scratch"
    session = SessionManager.create(cwd, session_dir(root, cwd), runtime=clock.runtime)
    w = Writer(session, clock, rng)
    session.append_model_change("anthropic/claude-sonnet-4-5")
    session.append_thinking_level_change("high")
    session.append_mcp_tool_selection(["postgres.query", "github.search_code"])
    session.append_mode_change("plan", {"planFile": "PLAN.md"})
    w.user("Plan the migration of the shop from SQLite to Postgres. Don't change anything yet.")
    session.append_custom_message_entry(
        "ttsr-injection",
        "Rule `no-destructive-sql`: never run DROP, TRUNCATE or DELETE without a WHERE clause.",
        False,
        {"rules": ["no-destructive-sql"]},
    )
    session.append_ttsr_injection(["no-destructive-sql"])
    w.assistant(
        "## Migration plan\n\n1. **Schema** — generate the Postgres schema with Alembic from the models; "
        "replace `INTEGER PRIMARY KEY` autoincrement with identity columns.\n2. **Data** — copy with "
        "`pgloader` into a staging database; compare row counts and checksums per table.\n3. **Code** — "
        "remove the two SQLite-only queries (`GLOB` in search, `julianday()` in reports).\n4. **Cut-over** — "
        "read-only window of ~10 minutes, final sync, switch `DATABASE_URL`, smoke tests.\n5. **Rollback** — "
        "keep SQLite read-only for a week.\n\n```sql\nSELECT count(*), md5(string_agg(id::text, ',' "
        "ORDER BY id)) FROM orders;\n```\n\n"
        "Risks: `julianday()` arithmetic in the monthly report, and case-sensitive `LIKE` in Postgres.",
        thinking="Plan mode: no edits. Look for SQLite-specific SQL first. The report uses julianday, the "
        "search uses GLOB. pgloader handles types; the sequence reset is the classic trap.",
        tokens=(5, 890, 0, 9_800),
    )
    session.append_mode_change("none")
    w.user("Looks good. Save it as PLAN.md later; that's all for now.", wait=60)
    w.assistant("Noted — I'll write PLAN.md when we leave plan mode.", tokens=(3, 24, 9_800, 60))
    session.close()
    return Path(str(session.get_session_file()))


DF_OUTPUT = """Filesystem      Size  Used Avail Use% Mounted on
/dev/nvme0n1p1  200G  197G  3.1G  99% /
tmpfs            16G     0   16G   0% /dev/shm"""

DU_OUTPUT = "\n".join(
    [
        f"{size}\t/var/lib/docker/overlay2/{digest}"
        for size, digest in [("61G", "3f9c2a…"), ("38G", "b71e04…"), ("22G", "9d0a57…"), ("9.1G", "c2f4e8…")]
    ]
    + ["131G\t/var/lib/docker/overlay2", "44G\t/home/ci/.cache", "4.2G\t/var/log"]
)


def infra_session(root: Path, clock: Clock, rng: random.Random) -> Path:
    """Three tries at the same question (two abandoned branches), a label, a failing command."""
    cwd = "/srv/infra"
    session = SessionManager.create(cwd, session_dir(root, cwd), runtime=clock.runtime)
    w = Writer(session, clock, rng)
    session.append_model_change("anthropic/claude-sonnet-4-5")
    question = w.user(
        "The build box is out of disk again. Find what's using the space, but don't delete anything."
    )
    w.turn("", [("bash", {"command": "df -h / /dev/shm"}, DF_OUTPUT)], tokens=(3, 60, 0, 8_100))
    w.turn(
        "The root filesystem is 99 % full. Looking at the biggest directories:",
        [("bash", {"command": "sudo du -xh --max-depth=3 / 2>/dev/null | sort -rh | head -8"}, DU_OUTPUT)],
        tokens=(3, 90, 8_100, 700),
    )
    found, _ = w.assistant(
        "Docker's overlay storage takes **131 GB**, mostly from four image layers of old CI builds; "
        "the CI cache is another 44 GB. `docker system prune --filter until=168h` would free most of it.",
        tokens=(3, 130, 8_800, 300),
    )
    session.append_label_change(found, "root cause")
    # Second try, from the question: a different first command that fails.
    clock.wait(200)
    session.branch(question)
    _entry, ids = w.assistant(
        calls=[("bash", {"command": "ncdu -x / -o /tmp/ncdu.json"})], tokens=(3, 50, 0, 8_100)
    )
    w.result(ids[0], "bash", "bash: ncdu: command not found\n\nCommand exited with code 127", error=True)
    w.assistant("`ncdu` is not installed here; I'll fall back to `du`.", tokens=(3, 30, 8_100, 100))
    # Third try: the user answers the question themselves.
    clock.wait(200)
    session.branch(question)
    w.bash(
        "docker system df",
        "TYPE            TOTAL     ACTIVE    SIZE      RECLAIMABLE\nImages          212       9         "
        "131.2GB   124.8GB (95%)\nContainers      14        2         1.1GB     1.0GB (90%)\nLocal "
        "Volumes   31        4         12.4GB    10.9GB (87%)\nBuild Cache     0         0       "
        "  0B        0B",
        wait=10,
    )
    w.user("Yes, it's docker. What's safe to prune?", wait=15)
    w.assistant(
        "Safe: images not used by a running container and older than a week —\n\n"
        "```bash\ndocker image prune --all --filter until=168h\n```\n\nThat reclaims most of the 124.8 GB. "
        "Volumes hold data (the Postgres test fixtures live in one), so leave `docker volume prune` for "
        "later.",
        tokens=(3, 150, 8_100, 900),
    )
    session.close()
    return Path(str(session.get_session_file()))
