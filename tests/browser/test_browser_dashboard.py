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
"""

from __future__ import annotations

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
