"""Benchmark T6: ``check_history`` over a multi-million-record history vs a one-pass scan.

Goal: the full black-box checker should cost at most about twice a single pure-Python pass that
only looks for duplicate values over the same records (``eos-checking.md``, target T6). Method:
build a clean-ish history quickly (transactional writers sending batches of ``BATCH`` records to
one partition each, with a control marker after every batch; several consumers each reading
every partition in polls of ``POLL`` records; one aborted transaction per partition that no
one reads, and one injected duplicate), then time, in the same process and on the same
records, ``check_history`` and the duplicate scan, and print both times and their ratio.

Usage::

    python bench/bench_checker.py [--records N] [--readers R] [--repeat K]
    EOS_BENCH_RECORDS=500000 python bench/bench_checker.py

Prints figures only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.check import History, Op, Poll, Send, check_history

TOPIC = "bench"
PARTITIONS = 8
BATCH = 10  # sends per transaction: one control marker after each batch makes offsets sparse
POLL = 500  # records per poll op, as a consumer with max.poll.records=500 would return


def build_history(records: int, readers: int) -> History:
    """Return a history of about ``records`` micro-ops (sends + polled records)."""
    values_total = max(PARTITIONS * BATCH, records // (1 + readers))
    per_key = values_total // PARTITIONS
    ops: list[Op] = []
    index = 0
    logs: list[list[tuple[int, str]]] = []
    for p in range(PARTITIONS):
        writer = p  # one transactional producer per partition
        log: list[tuple[int, str]] = []
        offset = 0
        seq = 0
        while seq < per_key:
            n = min(BATCH, per_key - seq)
            sends = []
            for _ in range(n):
                v = f"p{writer}-s{seq}"
                sends.append(Send(TOPIC, p, v, offset))
                log.append((offset, v))
                offset += 1
                seq += 1
            offset += 1  # the commit marker
            ops.append(Op(index, writer, "invoke", "txn", index, tuple(s._replace(offset=None) for s in sends)))
            ops.append(Op(index + 1, writer, "ok", "txn", index + 1, tuple(sends)))
            index += 2
        # One aborted transaction per partition: it takes offsets, and nobody may read it.
        aborted = (Send(TOPIC, p, f"p{writer}-aborted", offset),)
        offset += 2
        ops.append(Op(index, writer, "invoke", "txn", index, (aborted[0]._replace(offset=None),)))
        ops.append(Op(index + 1, writer, "fail", "txn", index + 1, aborted, error="aborted"))
        index += 2
        logs.append(log)
    for r in range(readers):
        process = 100 + r
        for p, log in enumerate(logs):
            for start in range(0, len(log), POLL):
                polls = tuple(Poll(TOPIC, p, o, v) for o, v in log[start : start + POLL])
                if r == 0 and p == 0 and start + POLL >= len(log):
                    # One injected duplicate so the report is not empty ("clean-ish").
                    _o, v = log[0]
                    polls = (*polls, Poll(TOPIC, p, log[-1][0] + 10, v))
                ops.append(Op(index, process, "invoke", "poll", index))
                ops.append(Op(index + 1, process, "ok", "poll", index + 1, polls))
                index += 2
    return History(ops)


def duplicate_scan(history: History) -> int:
    """The baseline: one pure-Python pass over every micro-op, counting values at two offsets."""
    seen: dict[tuple[str, int], dict[str, int]] = {}
    dups = 0
    for op in history:
        if op.type == "invoke":
            continue
        for m in op.mops:
            if type(m) is Send:
                t, p, v, o = m
                if o is None:
                    continue
            else:
                t, p, o, v = m
            d = seen.get((t, p))
            if d is None:
                d = seen[(t, p)] = {}
            first = d.setdefault(v, o)
            if first != o:
                dups += 1
    return dups


def timed(fn, *args):
    gc.collect()
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Build the history, time both passes, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--records",
        type=int,
        default=int(os.environ.get("EOS_BENCH_RECORDS", "5000000")),
        help="micro-ops in the history (default 5,000,000 or $EOS_BENCH_RECORDS)",
    )
    parser.add_argument("--readers", type=int, default=4, help="consumers reading every partition (default 4)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="time each pass this many times, alternating, and keep the best (default 2)",
    )
    args = parser.parse_args(argv)

    history, build_s = timed(build_history, args.records, args.readers)
    n_mops = sum(len(op.mops) for op in history if op.type != "invoke")
    print(f"history: {len(history):,} records, {n_mops:,} micro-ops, built in {build_s:.2f} s")

    # Alternate the two passes and keep the best time of each, so that a burst of load from
    # other processes on the machine does not land on one side only.
    scan_s = check_s = float("inf")
    for _ in range(max(1, args.repeat)):
        dups, t = timed(duplicate_scan, history)
        scan_s = min(scan_s, t)
        report, t = timed(check_history, history)
        check_s = min(check_s, t)
    print(f"duplicate scan : {scan_s:8.2f} s  ({dups} duplicate sighting(s))")
    verdict = f"{len(report.forbidden)} forbidden, {len(report.allowed)} allowed"
    print(f"check_history  : {check_s:8.2f} s  ({verdict})")
    print(f"ratio          : {check_s / scan_s:8.2f} x  (target <= 2x, T6)")
    print(f"throughput     : {n_mops / check_s / 1e6:8.2f} M micro-ops/s checked")
    print()
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
