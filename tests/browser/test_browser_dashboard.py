"""The tour's live dashboard in a real browser: live updates, a fault button, scrubbing back.

Method: the ``jupyter_server`` fixture serves a copy of ``notebooks/``; headless Debian chromium opens
``00-tour.ipynb`` in JupyterLab and runs its cells with Shift+Enter, as a reader would.

1. Run up to the ``%eos_dashboard`` cell: the anywidget front-end renders (from the local labextension)
   and shows ``orders-0`` with LSO 0.
2. Run the idempotent producer's cell: the dashboard's LSO for ``orders-0`` becomes 3 while we only
   watch the page (the kernel's pacer thread publishes; nothing in the browser asks).
3. Run through the transactions to the zombie: the ``__transaction_state`` row of ``orders-app`` shows
   a higher producer epoch than after ``init_transactions()``, and the old instance is marked a zombie.
4. Click broker-2's **crash** button: the kernel crashes it and the row turns ``down``.
5. Drag the scrubber back to the event shown in step 1: the head reads that event, the LSO is 0 again,
   broker-2 is ``up`` again, and the dashboard says it is rewound.

Screenshots of the dashboard go to ``test-artifacts/browser/`` (``dashboard-live.png`` after step 4,
``dashboard-rewound.png`` after step 5). No console error is allowed.

A second test runs the tour as a newcomer does, Run All, twice in one kernel (Run All twice is common:
``%eos_cluster create`` and the clients then replace what the first run made):

6. After the second run the dashboard is live: its head reads "event N of N", it is not rewound, and
   the sequence chart's title says how the zombie's transaction ended ("aborted by the coordinator,
   then fenced (EndTxn PRODUCER_FENCED)"). ``tour-dashboard.png`` is taken then, 1280 px wide (the
   picture in ``docs/screenshots/``).
7. The focused time slider takes the keys: ArrowLeft three times shows the event three back, End is
   live again, Home the first event.
8. Rewound, broker-1's **crash** button asks first: the question names the event and the fork button
   says "Fork here and crash broker-1"; nothing forked (same event shown, still rewound, broker-1 up).
   Cancel hides it; asked again, the fork button forks and crashes: live, broker-1 down.
9. broker-1 leads ``orders-0``: its partition row now shows the LEO, HW and LSO as unknown ("—",
   "leader 1 is down"), never ``-1``, and so do the read_committed vs read_uncommitted panel and the
   log strip. Screenshots: ``dashboard-fork-question.png``, ``dashboard-leader-down.png``.
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow

TOUR = "00-tour.ipynb"
#: 1-based cell numbers in the tour (markdown cells count).
DASHBOARD_CELL = 6
PRODUCER_CELL = 8
INIT_TXN_CELL = 14
ZOMBIE_CELL = 21

LSO = ".eos-partitions tr[data-tp='orders-0'] td.eos-lso"
TXN_EPOCH = ".eos-txns tr[data-txn='orders-app'] td.eos-epoch"
BROKER2 = ".eos-brokers tr[data-node='broker-2']"


def _text(page, selector: str) -> str:
    return (page.locator(selector).first.text_content() or "").strip()


def _wait_text(page, selector: str, predicate_js: str, timeout: float = 20_000) -> None:
    """Wait until the first element matching ``selector`` has text for which ``predicate_js`` (on ``t``) is true.

    ``textContent``, not ``innerText``: JupyterLab skips laying out cells scrolled out of view
    (``content-visibility``), and ``innerText`` of an element not laid out is empty.
    """
    page.wait_for_function(
        f"""() => {{ const e = document.querySelector({selector!r}); if (!e) return false;
                     const t = (e.textContent || "").trim(); return {predicate_js}; }}""",
        timeout=timeout,
    )


def test_the_tour_dashboard_updates_live_breaks_on_click_and_scrubs_back(lab):
    page = lab.page
    lab.open(TOUR)
    lab.wait_for_kernel_idle()

    # 1. the dashboard renders
    lab.run_cells(DASHBOARD_CELL)
    page.wait_for_selector(".eos-dash .eos-partitions")
    _wait_text(page, LSO, "t.startsWith('0')")
    lab.wait_for_kernel_idle()
    first_index = int(page.locator(".eos-dash .eos-head").first.get_attribute("data-index"))

    # 2. the LSO moves live while the producer's cell runs
    for _ in range(DASHBOARD_CELL + 1, PRODUCER_CELL + 1):
        lab.run_next_cell()
    _wait_text(page, LSO, "t.startsWith('3')")

    # 3. the producer epoch moves: init_transactions, then the replacement fences the zombie
    for _ in range(PRODUCER_CELL + 1, INIT_TXN_CELL + 1):
        lab.run_next_cell()
    page.wait_for_selector(TXN_EPOCH)
    lab.wait_for_kernel_idle()
    epoch_after_init = int(_text(page, TXN_EPOCH))
    for _ in range(INIT_TXN_CELL + 1, ZOMBIE_CELL + 1):
        lab.run_next_cell()
    _wait_text(page, TXN_EPOCH, f"Number(t) > {epoch_after_init + 2}")
    page.wait_for_selector(".eos-producer[data-node='tx'] .eos-fenced")
    lab.wait_for_kernel_idle()
    epoch_now = int(_text(page, TXN_EPOCH))

    # 4. a fault button: the kernel crashes broker-2 and the dashboard shows it down
    page.locator(f"{BROKER2} button[data-op='crash']").click()
    page.wait_for_selector(f"{BROKER2} .eos-down")
    page.set_viewport_size({"width": 1400, "height": 2600})  # the whole dashboard fits the notebook panel
    dash = page.locator(".eos-dash").first
    dash.scroll_into_view_if_needed()
    dash.screenshot(path=str(lab.artifacts_dir / "dashboard-live.png"))

    # 5. scrub back to the first board: an earlier state, exactly
    page.evaluate(
        """(i) => { const s = document.querySelector('.eos-dash .eos-scrub');
                    s.value = String(i); s.dispatchEvent(new Event('input', {bubbles: true})); }""",
        first_index,
    )
    _wait_text(page, ".eos-dash .eos-head", f"t.includes('event {first_index} of')")
    _wait_text(page, LSO, "t.startsWith('0')")
    page.wait_for_selector(f"{BROKER2} .eos-up")
    page.wait_for_selector(".eos-dash.eos-rewound")
    assert page.locator(TXN_EPOCH).count() == 0  # no transactional id existed yet
    dash.screenshot(path=str(lab.artifacts_dir / "dashboard-rewound.png"))

    # and back to live: the crash and the epoch are there again
    page.locator(".eos-dash .eos-live").click()
    page.wait_for_selector(f"{BROKER2} .eos-down")
    assert int(_text(page, TXN_EPOCH)) == epoch_now
    assert lab.console_errors == []


HEAD = ".eos-dash .eos-head"
CONFIRM = ".eos-dash .eos-confirm"
BROKER1 = ".eos-brokers tr[data-node='broker-1']"
ORDERS0 = ".eos-partitions tr[data-tp='orders-0']"
#: ``-1`` as a number (not the end of ``orders-1``, nor the ``(HW-1)`` lag note).
MINUS_ONE = re.compile(r"(?<![\w-])-1(?!\d)")


def _head(page) -> tuple[int, int]:
    """The event shown and the latest event, from the dashboard's head ("... event N of M")."""
    found = re.search(r"event (\d+) of (\d+)", _text(page, HEAD))
    assert found, _text(page, HEAD)
    return int(found[1]), int(found[2])


def _wait_head(page, predicate_js: str) -> None:
    """Wait until the head's "event N of M" makes ``predicate_js`` (on ``n`` and ``m``) true."""
    _wait_text(page, HEAD, f"(([, n, m]) => {predicate_js})((t.match(/event (\\d+) of (\\d+)/) || []).map(Number))")


def test_the_tour_run_twice_ends_live_asks_before_forking_and_says_unknown(lab):
    page = lab.page
    lab.open(TOUR)
    lab.wait_for_kernel_idle()

    # 6. Run All, twice in one kernel: the dashboard ends live
    lab.run_all()
    lab.run_all()
    dash = page.locator(".eos-dash").first
    page.wait_for_selector(".eos-dash:not(.eos-rewound) .eos-partitions")
    _wait_head(page, "n === m")
    assert "rewound" not in _text(page, HEAD)
    # the chart is drawn at most once a second while live: wait for the zombie's whole story
    story = "aborted by the coordinator, then fenced (EndTxn PRODUCER_FENCED)"
    _wait_text(page, ".eos-dash .eos-p-msc", f"t.includes({story!r})")
    lab.screenshot_output(DASHBOARD_CELL, "tour-dashboard")

    # 7. the slider's keys
    slider = page.locator(".eos-dash .eos-scrub").first
    slider.focus()
    _, last = _head(page)
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    _wait_head(page, f"n === {last - 3}")
    page.wait_for_selector(".eos-dash.eos-rewound")
    page.keyboard.press("End")
    _wait_head(page, "n === m")
    page.keyboard.press("Home")
    _wait_head(page, f"n < {last - 3}")
    page.keyboard.press("End")
    _wait_head(page, "n === m")
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    _wait_head(page, f"n === {last - 3}")
    shown, last = _head(page)

    # 8. crash while rewound: a question, nothing forked
    page.wait_for_selector(f"{BROKER1} .eos-up")
    page.locator(f"{BROKER1} button[data-op='crash']").click()
    page.wait_for_selector(f"{CONFIRM}:not([hidden])")
    question = _text(page, f"{CONFIRM} .eos-confirm-text")
    assert question.startswith(f"Acting at event {shown} of {last} forks the run"), question
    assert question.count(". ") == 1 and "eos-check-reader" not in question, question  # two short sentences
    assert _text(page, f"{CONFIRM} .eos-confirm-fork") == "Fork here and crash broker-1"
    dash.screenshot(path=str(lab.artifacts_dir / "dashboard-fork-question.png"))
    assert _head(page) == (shown, last) and page.locator(".eos-dash.eos-rewound").count() == 1
    assert page.locator(f"{BROKER1} .eos-up").count() == 1  # not crashed: nothing forked
    page.locator(f"{CONFIRM} .eos-confirm-cancel").click()
    page.wait_for_selector(f"{CONFIRM}[hidden]", state="attached")
    assert _head(page) == (shown, last)
    page.locator(f"{BROKER1} button[data-op='crash']").click()
    page.locator(f"{CONFIRM}:not([hidden]) .eos-confirm-fork").click()
    page.wait_for_selector(".eos-dash:not(.eos-rewound)")
    page.wait_for_selector(f"{BROKER1} .eos-down")
    _wait_text(page, ".eos-dash .eos-note-bar", r"/^forked at event \d+; broker-1 crashed$/.test(t)")

    # 9. the crashed leader's offsets are unknown, not -1
    _wait_text(page, ORDERS0, "t.includes('leader 1 is down')")
    row = _text(page, ORDERS0)
    assert "—" in row and not MINUS_ONE.search(row), row
    _wait_text(page, ".eos-dash .eos-reads", "t.includes('leader 1 is down')")
    reads = _text(page, ".eos-dash .eos-reads")
    assert not MINUS_ONE.search(reads), reads
    _wait_text(page, ".eos-dash .eos-strip[data-tp='orders-0']", "t.includes('LSO, HW, LEO unknown: leader 1 is down')")
    dash.screenshot(path=str(lab.artifacts_dir / "dashboard-leader-down.png"))
    assert lab.console_errors == []
