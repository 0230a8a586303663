"""The shop-api project: pagination (two branches, a label, a branch summary), a flaky test
investigation with a compaction, and a session forked from the first."""

from __future__ import annotations

import random
from pathlib import Path

from _kit import Clock, Writer, session_dir

from omp_session import SessionManager

ORDERS_PY = '''from fastapi import APIRouter, Depends
from sqlalchemy.orm import Session

from app.db import get_db
from app.models import Order
from app.schemas import OrderOut

router = APIRouter(prefix="/orders", tags=["orders"])


@router.get("", response_model=list[OrderOut])
def list_orders(customer_id: int, db: Session = Depends(get_db)) -> list[Order]:
    """Every order of a customer, newest first."""
    return (
        db.query(Order)
        .filter(Order.customer_id == customer_id)
        .order_by(Order.created_at.desc())
        .all()
    )
'''

PYTEST_FAIL = """....F
=================================== FAILURES ===================================
______________________ test_limit_is_capped_at_200 _____________________________

client = <starlette.testclient.TestClient object at 0x7f3a2c1b9d50>

    def test_limit_is_capped_at_200(client):
        response = client.get("/orders", params={"customer_id": 7, "limit": 5000})
>       assert response.status_code == 422
E       assert 200 == 422
E        +  where 200 = <Response [200 OK]>.status_code

tests/test_orders_pagination.py:31: AssertionError
=========================== short test summary info ============================
FAILED tests/test_orders_pagination.py::test_limit_is_capped_at_200 - assert 200 == 422
1 failed, 4 passed in 0.52s"""

FINAL_SUMMARY = """Pagination is in. `GET /orders` now takes two query parameters:

| parameter | default | bounds | meaning |
|-----------|---------|--------|---------|
| `limit`   | 50      | 1–200  | orders per page |
| `offset`  | 0       | ≥ 0    | orders to skip |

The response carries the page and where to continue:

```json
{"items": [...], "next_offset": 100}
```

`next_offset` is `null` on the last page. Five tests cover the defaults, the bounds, and an
empty customer; all pass. For very deep pages an offset scan gets slow — if that matters, keyset
pagination on `(created_at, id)` is the next step."""


def _offset_attempt(session: SessionManager, w: Writer) -> str:
    """The first try: offset pagination; returns the question."""
    ask = w.user(
        "`GET /orders` returns every order at once and times out for our biggest customers. "
        "Add limit/offset pagination (default 50, max 200) and tests."
    )
    w.turn(
        "Let me look at the current endpoint first.",
        [("read", {"path": "app/routes/orders.py"}, ORDERS_PY)],
        thinking="The user wants pagination on the orders list. I should read the route before changing "
        "anything, and check how the other list endpoints validate query parameters.",
        tokens=(3, 96, 0, 11_840),
    )
    w.turn(
        "The handler loads everything with `.all()`. I'll add `limit` and `offset` query parameters "
        "validated by FastAPI, and return the page together with the next offset.",
        [
            (
                "edit",
                {
                    "path": "app/routes/orders.py",
                    "oldText": "def list_orders(customer_id: int, db: Session = Depends(get_db)) -> "
                    "list[Order]:",
                    "newText": "def list_orders(\n    customer_id: int,\n    limit: int = Query(50, ge=1),\n"
                    "    offset: int = Query(0, ge=0),\n    db: Session = Depends(get_db),\n) -> OrderPage:",
                },
                "Successfully replaced 1 occurrence in app/routes/orders.py",
            ),
            (
                "write",
                {
                    "path": "tests/test_orders_pagination.py",
                    "content": "def test_default_page_size(client):\n    ...\n",
                },
                "Wrote 41 lines to tests/test_orders_pagination.py",
            ),
        ],
        thinking="Query(50, ge=1) gives the default; I also need an upper bound. Let me write the tests "
        "first and see them fail where they should.",
        tokens=(4, 612, 11_840, 1_930),
    )
    _test_until_green(session, w)
    return ask


def _test_until_green(session: SessionManager, w: Writer) -> None:
    """A failing test run, the fix, a passing run, the summary (labelled) and the user's git diff."""
    w.turn(
        "",
        [("bash", {"command": "pytest -q tests/test_orders_pagination.py"}, PYTEST_FAIL)],
        tokens=(3, 48, 13_770, 420),
    )
    w.turn(
        "One test fails: the maximum of 200 is not enforced. `Query(50, ge=1)` has no upper bound — "
        "adding `le=200`.",
        [
            (
                "edit",
                {
                    "path": "app/routes/orders.py",
                    "oldText": "Query(50, ge=1)",
                    "newText": "Query(50, ge=1, le=200)",
                },
                "Successfully replaced 1 occurrence in app/routes/orders.py",
            ),
            ("bash", {"command": "pytest -q tests/test_orders_pagination.py"}, ".....\n5 passed in 0.41s"),
        ],
        tokens=(3, 174, 14_190, 880),
    )
    done, _ = w.assistant(FINAL_SUMMARY, tokens=(3, 389, 15_070, 512))
    session.append_label_change(done, "offset pagination")
    w.bash(
        "git diff --stat",
        " app/routes/orders.py            | 24 ++++++++++++++++++------\n "
        "tests/test_orders_pagination.py | 41 +++++++++++++++++++++++++++++++++\n 2 files changed, "
        "59 insertions(+), 6 deletions(-)",
    )


def _keyset_attempt(session: SessionManager, w: Writer, clock: Clock, ask: str) -> None:
    """Back to the question with a branch summary: keyset pagination instead."""
    # The user goes back to the first question and asks for keyset pagination instead.
    clock.wait(300)
    session.branch_with_summary(
        ask,
        "Offset pagination was implemented on `GET /orders` (limit 1–200, default 50, `next_offset` in the "
        "response) with five passing tests, but deep pages stay slow because the database still scans "
        "the skipped rows.",
    )
    w.user(
        "Actually, let's do keyset pagination on (created_at, id) instead — offsets get slow on page 400.",
        wait=5,
    )
    w.turn(
        "Keyset pagination it is. The cursor will be an opaque token encoding the last `(created_at, id)` of "
        "the page, and the query continues strictly after it:",
        [
            (
                "edit",
                {
                    "path": "app/routes/orders.py",
                    "oldText": ".order_by(Order.created_at.desc())\n        .all()",
                    "newText": ".filter(tuple_(Order.created_at, Order.id) < cursor)\n"
                    "        .order_by(Order.created_at.desc(), Order.id.desc())\n        .limit(limit + 1)",
                },
                "Successfully replaced 1 occurrence in app/routes/orders.py",
            ),
            ("bash", {"command": "pytest -q tests/test_orders_pagination.py"}, "......\n6 passed in 0.44s"),
        ],
        thinking="Fetching limit + 1 rows tells us whether there is a next page without a COUNT query. "
        "The composite index on (customer_id, created_at, id) already exists.",
        tokens=(3, 701, 16_020, 2_210),
    )
    answer, _ = w.assistant(
        "Done: `GET /orders?limit=50&cursor=…` now returns `{items, next_cursor}`. Each page is one index "
        "range scan, so page 400 costs the same as page 1. The cursor is base64 of `created_at|id`; clients "
        "should treat it as opaque.",
        tokens=(3, 122, 18_230, 240),
    )
    session.append_label_change(answer, "keyset pagination")


def pagination_session(root: Path, clock: Clock, rng: random.Random) -> Path:
    """Tool calls, a failing then passing test run, a label, and an abandoned branch with a summary."""
    cwd = "/home/ada/projects/shop-api"
    session = SessionManager.create(cwd, session_dir(root, cwd), runtime=clock.runtime)
    w = Writer(session, clock, rng)
    session.append_model_change("anthropic/claude-sonnet-4-5")
    session.append_thinking_level_change("medium")
    _keyset_attempt(session, w, clock, _offset_attempt(session, w))
    session.close()
    return Path(str(session.get_session_file()))


def _investigate(w: Writer) -> str:
    """Reproduce, grep, read, find the cause; returns the entry the compaction keeps from."""
    w.user("`test_payment_webhook_retries` fails about one run in ten on CI. Can you find out why?")
    w.turn(
        "Let me run it a few times to see how it fails.",
        [
            (
                "bash",
                {
                    "command": "for i in $(seq 20); do pytest -q tests/test_webhooks.py -k retries -p "
                    "no:randomly || break; done"
                },
                "." * 13 + "F\nFAILED tests/test_webhooks.py::test_payment_webhook_retries - AssertionError: "
                "expected 3 attempts, got 2\n1 failed in 2.11s",
            )
        ],
        thinking="Intermittent: probably timing. Reproduce first, then read the retry code.",
        tokens=(3, 210, 0, 12_400),
    )
    w.turn(
        "Reproduced on run 14. The assertion counts delivery attempts; let me read the retry queue.",
        [
            (
                "grep",
                {"pattern": "def schedule_retry", "path": "app/"},
                "app/webhooks/queue.py:48:def schedule_retry(event: WebhookEvent, attempt: int) -> None:",
            ),
            (
                "read",
                {"path": "app/webhooks/queue.py", "offset": 40, "limit": 30},
                "    def schedule_retry(event: WebhookEvent, attempt: int) -> None:\n        delay = "
                "BACKOFF[attempt]\n"
                "        loop = asyncio.get_event_loop()\n        loop.call_later(delay, lambda: "
                "asyncio.create_task(deliver(event, attempt + 1)))\n",
            ),
        ],
        tokens=(3, 160, 12_400, 1_200),
    )
    kept = w.user("Is it the `call_later`? The test uses a fake clock.", wait=90)
    w.assistant(
        "Yes. `call_later` uses the loop's real monotonic clock, but the test advances `freezegun`'s clock. "
        "When the machine is slow the second retry has not fired yet when the test checks, so it sees two "
        "attempts instead of three.",
        thinking="freezegun does not patch the event loop's time(); the retry fires on wall-clock time. "
        "The fix is to inject the scheduler so the test can drive it.",
        tokens=(3, 240, 13_600, 300),
    )
    return kept


def _compact_and_fix(session: SessionManager, w: Writer, clock: Clock, kept: str) -> None:
    """A compaction of the investigation, then the fix on top of its summary."""
    clock.wait(600)
    session.append_compaction(
        "## Goal\nFix the flaky `test_payment_webhook_retries`.\n\n## Findings\n- Fails ~1 in 10: sees 2 "
        "delivery attempts instead of 3.\n- `schedule_retry` in `app/webhooks/queue.py` uses "
        "`loop.call_later`, which runs on the loop's real clock; the test advances freezegun's fake "
        "clock.\n\n"
        "## Next\nInject a scheduler into the retry queue so the test can run due retries deterministically.",
        "flaky webhook test: retries run on the real clock",
        kept,
        48_213,
    )
    w.user("Go ahead and make the scheduler injectable.", wait=30)
    w.turn(
        "I'll add a small `Scheduler` protocol with a real implementation and a manual one for tests.",
        [
            (
                "write",
                {
                    "path": "app/webhooks/scheduler.py",
                    "content": "class Scheduler(Protocol):\n    def call_later(self, delay: float, "
                    "callback: Callable[[], None]) -> None: ...\n",
                },
                "Wrote 38 lines to app/webhooks/scheduler.py",
            ),
            (
                "bash",
                {
                    "command": "for i in $(seq 50); do pytest -q tests/test_webhooks.py -k retries || "
                    "break; done | tail -1"
                },
                "1 passed in 0.09s",
            ),
        ],
        tokens=(3, 820, 4_100, 2_600),
    )
    w.assistant(
        "Fixed. The retry queue takes a `Scheduler`; production uses the event loop, the test uses "
        "`ManualScheduler.run_due()`. Fifty runs in a row pass, and the test now takes 0.09 s instead of 2.",
        tokens=(3, 95, 6_700, 150),
    )
    session.set_session_name("Flaky payment webhook test")


def flaky_test_session(root: Path, clock: Clock, rng: random.Random) -> Path:
    """A long investigation compacted half way; a title; greps, reads and test runs."""
    cwd = "/home/ada/projects/shop-api"
    session = SessionManager.create(cwd, session_dir(root, cwd), runtime=clock.runtime)
    w = Writer(session, clock, rng)
    session.append_model_change("anthropic/claude-sonnet-4-5")
    session.append_thinking_level_change("high")
    _compact_and_fix(session, w, clock, _investigate(w))
    session.close()
    return Path(str(session.get_session_file()))


def invoices_fork(root: Path, clock: Clock, rng: random.Random, source: Path) -> Path:
    """A new session forked from the offset-pagination branch of the first sample."""
    session = SessionManager.open(source, runtime=clock.runtime)
    labels = {label: entry_id for entry_id, label in session.get_labels().items()}
    session.create_branched_session(labels["offset pagination"])
    w = Writer(session, clock, rng)
    w.user("Same thing for `GET /invoices`, please — offset pagination is fine there, the lists are short.")
    w.turn(
        "Applying the same pattern to invoices.",
        [
            (
                "edit",
                {
                    "path": "app/routes/invoices.py",
                    "oldText": ".all()",
                    "newText": ".offset(offset).limit(limit + 1).all()",
                },
                "Successfully replaced 1 occurrence in app/routes/invoices.py",
            ),
            ("bash", {"command": "pytest -q tests/test_invoices.py"}, "........\n8 passed in 0.37s"),
        ],
        tokens=(3, 210, 15_600, 800),
    )
    w.assistant(
        "`GET /invoices` is paginated the same way as orders; all 8 tests pass.", tokens=(3, 30, 16_400, 60)
    )
    session.close()
    return Path(str(session.get_session_file()))
