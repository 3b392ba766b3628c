"""Benchmark T6: the history checker against a one-pass scan, in memory and from a file.

Goal: the full black-box checker should cost at most about twice a single pure-Python pass that
only looks for duplicate values over the same records (``eos-checking.md``, target T6). Two cases:

**in memory** (``--case memory``): build a clean-ish history quickly (transactional writers
sending batches of ``BATCH`` records to one partition each, with a control marker after every
batch; several consumers each reading every partition in polls of ``POLL`` records; one aborted
transaction per partition that no one reads, and one injected duplicate), then time, in the same
process and on the same records, ``check_history`` and the duplicate scan, and print both times
and their ratio.

**end to end** (``--case e2e``): write a history file in the format of
``docs/history-format.md`` with the project's own writer (``save_jsonl``), deterministically, in a
temporary directory: ``--e2e-sends`` sends (default 1,000,000) in transactions of ``E2E_BATCH``
records over ``E2E_KEYS`` keys (4 topics x 25 partitions), from ``E2E_PRODUCERS`` producers whose
ops overlap, and as many polled records, each value read once by one of ``E2E_CONSUMERS``
assigned consumers. A few anomalies are injected (aborted transactions nobody reads, ``info``
transactions later proven by a read, one duplicate). Then two fresh interpreters run, one after
the other:

* ``check``: ``eos check FILE`` through ``engine.cli.main``, the command's own entry point
  (its output goes to a buffer; the subcommand modules are imported before the clock starts);
* ``scan``: the honest ceiling, a loop that ``json.loads`` every line of the same file and
  looks for values at two offsets of a key (parsing cannot be avoided).

It prints the wall seconds of each (timed inside the child), their ratio (target <= 2x), each
child's peak RSS (``ru_maxrss``, and ``VmHWM`` beside it) and that peak divided by the file size
(target <= 3x). The file is written by a child too, and this case runs before the in-memory one,
so the parent stays small: a child's ``ru_maxrss`` includes the parent's peak at the fork.

Usage::

    python bench/bench_checker.py                          # both cases, full size
    python bench/bench_checker.py --quick                  # smoke run: small sizes
    python bench/bench_checker.py --case e2e --e2e-sends 200000
    python bench/bench_checker.py --case memory --records 500000
    EOS_BENCH_RECORDS=500000 python bench/bench_checker.py --case memory
    # one end-to-end step in this process, e.g. under the profiler:
    python bench/bench_checker.py --child write /tmp/h.jsonl --e2e-sends 1000000
    python -m cProfile -s cumtime bench/bench_checker.py --child check /tmp/h.jsonl

Prints figures only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import io
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from _common import machine_note, peak_rss_bytes, print_child_result, run_json_child  # noqa: E402 - after the path setup

# The engine is imported inside the functions that use it, so that the scan child, which only
# parses JSON, does not carry the engine's modules in its peak RSS.
if TYPE_CHECKING:
    from engine.check import History, Op

TOPIC = "bench"
PARTITIONS = 8
BATCH = 10  # sends per transaction: one control marker after each batch makes offsets sparse
POLL = 500  # records per poll op, as a consumer with max.poll.records=500 would return

E2E_TOPICS = ("orders", "payments", "audit", "events")
E2E_PARTITIONS = 25  # per topic: 100 keys in all
E2E_KEYS = len(E2E_TOPICS) * E2E_PARTITIONS
E2E_BATCH = 10  # sends per transaction
E2E_PRODUCERS = 20  # each runs one transaction per round; their ops overlap
E2E_CONSUMERS = 4  # each assigned a quarter of the keys
E2E_POLL_EVERY = 5  # rounds between two polls of every consumer
E2E_POLL_MAX = 500  # records per poll at most
E2E_ABORT_EVERY = 997  # every so many transactions aborts (its records are never read)
E2E_INFO_EVERY = 503  # every so many transactions times out (info) but committed
E2E_SEED = 6


def build_history(records: int, readers: int) -> History:
    """Return a history of about ``records`` micro-ops (sends + polled records)."""
    from engine.check import History, Op, Poll, Send

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
    from engine.check import Send

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


# ==========================================================================================
# end to end: a history file, checked by the CLI's entry point and by a one-pass scan
# ==========================================================================================


def e2e_ops(sends: int) -> Iterator[Op]:
    """Yield, in index order, the records of a history with about ``sends`` sends and as many polls.

    Deterministic (a seeded ``random.Random``). Each round, every producer invokes a transaction
    of ``E2E_BATCH`` sends to one key, then all of them complete (so ops of several processes
    are in flight at once); each transaction's records take consecutive offsets and its commit or
    abort marker one more. Every ``E2E_POLL_EVERY`` rounds each consumer polls what is new on its
    keys, at most ``E2E_POLL_MAX`` records per poll; aborted records are skipped, as
    read_committed consumers do. Injected: aborted transactions (never read), ``info``
    transactions whose records are read (proven committed), one value read at a second offset.
    """
    from engine.check import Op, Poll, Send

    rng = random.Random(E2E_SEED)
    keys = [(t, p) for t in E2E_TOPICS for p in range(E2E_PARTITIONS)]
    next_offset = dict.fromkeys(keys, 0)
    # Per key: committed (offset, value) not yet polled, in offset order.
    unread: dict[tuple[str, int], list[tuple[int, str]]] = {k: [] for k in keys}
    consumer_keys = {100 + c: [k for i, k in enumerate(keys) if i % E2E_CONSUMERS == c] for c in range(E2E_CONSUMERS)}
    index = 0
    time_ms = 0

    def op(process: int, typ: str, f: str, mops: tuple = (), **kw: Any) -> Op:
        nonlocal index
        o = Op(index, process, typ, f, time_ms, mops, **kw)
        index += 1
        return o

    for process, assigned in consumer_keys.items():
        yield op(process, "invoke", "assign", keys=tuple(assigned))
        yield op(process, "ok", "assign", keys=tuple(assigned))
    rounds = max(1, sends // (E2E_PRODUCERS * E2E_BATCH))
    txn = 0
    duplicate_done = False
    for r in range(rounds):
        time_ms += 10
        batches = []
        for producer in range(E2E_PRODUCERS):
            key = keys[rng.randrange(E2E_KEYS)]
            values = [f"p{producer}-t{r}-s{s}" for s in range(E2E_BATCH)]
            batches.append((producer, key, values))
            yield op(producer, "invoke", "txn", tuple(Send(key[0], key[1], v) for v in values))
        time_ms += 5
        for producer, key, values in batches:
            txn += 1
            first = next_offset[key]
            next_offset[key] = first + len(values) + 1  # the records, then the marker
            acked = tuple(Send(key[0], key[1], v, first + i) for i, v in enumerate(values))
            if txn % E2E_ABORT_EVERY == 0:
                yield op(producer, "fail", "txn", acked, error="aborted")
                continue
            if txn % E2E_INFO_EVERY == 0:
                yield op(producer, "info", "txn", tuple(m._replace(offset=None) for m in acked), error="timed out")
            else:
                yield op(producer, "ok", "txn", acked)
            unread[key].extend((m.offset, m.value) for m in acked)
        if r % E2E_POLL_EVERY != E2E_POLL_EVERY - 1 and r != rounds - 1:
            continue
        time_ms += 5
        for process, assigned in consumer_keys.items():
            pending = [k for k in assigned if unread[k]]
            while pending:
                polls: list[Poll] = []
                room = E2E_POLL_MAX
                for key in pending:
                    taken = unread[key][:room]
                    del unread[key][:room]
                    polls.extend(Poll(key[0], key[1], o, v) for o, v in taken)
                    room -= len(taken)
                    if not room:
                        break
                if not duplicate_done and len(polls) > 1:
                    # One value read again further on: a duplicate, so the report is not empty.
                    t, p, _o, v = polls[0]
                    polls.append(Poll(t, p, next_offset[(t, p)], v))
                    next_offset[(t, p)] += 1
                    duplicate_done = True
                yield op(process, "invoke", "poll")
                yield op(process, "ok", "poll", tuple(polls))
                pending = [k for k in assigned if unread[k]]


def scan_file(path: str) -> tuple[int, int, int]:
    """The end-to-end ceiling: ``json.loads`` every line, and count values seen at two offsets.

    Returns (lines, micro-ops looked at, duplicate sightings).
    """
    seen: dict[tuple[str, int], dict[str, int]] = {}
    lines = mops = dups = 0
    loads = json.loads
    with open(path, encoding="utf-8") as f:
        for line in f:
            lines += 1
            obj = loads(line)
            if obj["type"] == "invoke":
                continue
            for m in obj.get("value") or ():
                mops += 1
                if m[0] == "send":
                    _f, t, p, v, o = m
                    if o is None:
                        continue
                else:
                    _f, t, p, o, v = m
                d = seen.get((t, p))
                if d is None:
                    d = seen[(t, p)] = {}
                first = d.setdefault(v, o)
                if first != o:
                    dups += 1
    return lines, mops, dups


def _vm_hwm_mb() -> float | None:
    """Peak RSS of this process's own address space (``VmHWM``, Linux), or None elsewhere.

    ``ru_maxrss`` of a child started by ``subprocess`` also counts the parent's peak at the
    moment of the fork (Linux carries it over exec); ``VmHWM`` starts afresh at exec. The parent
    of the end-to-end case stays small, so the two agree; both are printed.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def child(side: str, path: str, sends: int) -> dict[str, Any]:
    """Run one step of the end-to-end case in this process and return its figures."""
    report_sha = ""
    status = 0
    start = time.perf_counter()
    if side == "write":
        from engine.check import save_jsonl

        save_jsonl(e2e_ops(sends), path)
        seconds = time.perf_counter() - start
        summary = f"{os.path.getsize(path):,} bytes"
    elif side == "scan":
        lines, mops, dups = scan_file(path)
        seconds = time.perf_counter() - start
        summary = f"{lines:,} lines, {mops:,} micro-ops, {dups} duplicate sighting(s)"
    else:
        from engine.cli import build_parser, main

        build_parser()  # import every subcommand module now, outside the timed span
        out = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(out):
            status = main(["check", path])
        seconds = time.perf_counter() - start
        text = out.getvalue()
        summary = text.splitlines()[0] if text else "(no output)"
        # A digest of the whole printed report, to compare runs before and after a change.
        report_sha = hashlib.sha256(text.encode()).hexdigest()[:16]
    return {
        "side": side,
        "seconds": round(seconds, 3),
        "peak_rss_mb": round(peak_rss_bytes() / 2**20, 1),
        "vm_hwm_mb": _vm_hwm_mb(),
        "status": status,
        "summary": summary,
        "report_sha": report_sha,
    }


def run_e2e(args: argparse.Namespace) -> None:
    """Write the history file, run both sides in fresh interpreters, print the figures.

    This process imports no engine module and builds nothing big, so that the children's
    ``ru_maxrss`` (which includes the parent's peak at the fork) is their own.
    """
    me = [sys.executable, str(Path(__file__).resolve())]
    with tempfile.TemporaryDirectory(prefix="bench-checker-") as tmp:
        path = os.path.join(tmp, "history.jsonl")
        cmd = [*me, "--child", "write", path, "--e2e-sends", str(args.e2e_sends), "--json"]
        wrote = run_json_child(cmd, timeout=args.timeout, what="e2e write")
        size = os.path.getsize(path)
        with open(path, encoding="utf-8") as f:
            n_lines = sum(1 for _ in f)
        print(f"history file: {size / 2**20:.1f} MB, {n_lines:,} lines, written in {wrote['seconds']:.2f} s")
        best: dict[str, dict[str, Any]] = {}
        for _ in range(max(1, args.repeat)):
            # Alternate the sides and keep the best time of each (peak RSS is the same every run).
            for side in ("scan", "check"):
                r = run_json_child([*me, "--child", side, path, "--json"], timeout=args.timeout, what=f"e2e {side}")
                if side not in best or r["seconds"] < best[side]["seconds"]:
                    best[side] = r
    scan, check = best["scan"], best["check"]
    mb = size / 2**20
    for r in (scan, check):
        hwm = f"VmHWM {r['vm_hwm_mb']:.1f} MB" if r["vm_hwm_mb"] is not None else "VmHWM n/a"
        print(
            f"{r['side']:<6}: {r['seconds']:8.2f} s   peak RSS {r['peak_rss_mb']:8.1f} MB "
            f"= {r['peak_rss_mb'] / mb:5.2f} x file ({hwm})   {r['summary']}"
        )
    print(f"ratio : {check['seconds'] / scan['seconds']:8.2f} x  time check/scan (target <= 2x, T6)")
    print(f"memory: {check['peak_rss_mb'] / mb:8.2f} x  check peak RSS / file size (target <= 3x)")
    print(f"exit status of eos check: {check['status']}; report sha256[:16] {check['report_sha']}")


def run_memory(args: argparse.Namespace) -> None:
    """Build the history in memory, time both passes on it, print the figures."""
    from engine.check import check_history

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


def main(argv: list[str] | None = None) -> int:
    """Parse the options; run the cases asked for (or one end-to-end side, with --child)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("both", "memory", "e2e"), default="both", help="which case (default both)")
    parser.add_argument(
        "--records",
        type=int,
        default=int(os.environ.get("EOS_BENCH_RECORDS", "5000000")),
        help="in memory: micro-ops in the history (default 5,000,000 or $EOS_BENCH_RECORDS)",
    )
    parser.add_argument("--readers", type=int, default=4, help="in memory: consumers reading every partition (4)")
    parser.add_argument(
        "--e2e-sends",
        type=int,
        default=1_000_000,
        help="end to end: sends in the history file, and as many polled records (default 1,000,000)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="time each pass (or child) this many times, alternating, and keep the best (default 2)",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 200k micro-ops in memory, 50k sends e2e")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per child (default 900)")
    parser.add_argument("--child", choices=("write", "check", "scan"), help="run one end-to-end step in this process")
    parser.add_argument("file", nargs="?", help="with --child: the history file")
    parser.add_argument("--json", action="store_true", help="with --child: print the figures as one JSON line")
    args = parser.parse_args(argv)

    if args.child:
        if not args.file:
            parser.error("--child needs the history file")
        print_child_result(child(args.child, args.file, args.e2e_sends), as_json=args.json)
        return 0
    if args.quick:
        args.records = min(args.records, 200_000)
        args.e2e_sends = min(args.e2e_sends, 50_000)
    print(machine_note())
    # The end-to-end case runs first, while this process is still small (see run_e2e).
    if args.case in ("both", "e2e"):
        print("== end to end: eos check FILE vs a one-pass json.loads scan, fresh interpreters ==")
        run_e2e(args)
        print()
    if args.case in ("both", "memory"):
        print("== in memory: check_history vs duplicate scan, same records, same process ==")
        run_memory(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
