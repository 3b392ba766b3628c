"""Property tests of the history checkers against a reference log model.

Goal (``eos-checking.md`` §5.6): the checker must pass every history a correct Kafka could
produce, and must catch a single corrupted record. Method: Hypothesis draws a sequence of client
actions (non-transactional sends, transactions that commit, abort or end ``info``, ``info``
sends that did or did not happen, polls, assigns, crashes) for a few processes; an in-test
model of partition logs with read_committed semantics executes them *serially* and records a
history with :class:`~engine.check.HistoryRecorder`. Control markers and aborted records take
offsets, so reads skip offsets exactly as in Kafka. A final fresh consumer reads everything.

* Property 1: every such history checks clean under the EOS mode.
* Property 2: one mutation (a value read again at a new offset, an aborted value read, the
  reads of a committed value removed, a read's value replaced, a read dropped from the middle of
  a poll) makes the checker report the matching anomaly.

Runs are derandomized, so a failure reproduces on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine.check import History, HistoryRecorder, Op, Poll, Send, check_history

KEYS = [("t", 0), ("t", 1), ("u", 0)]
PROCESSES = 3
FINAL_PROCESS = 99


@dataclass
class Entry:
    """One log slot: a data record (value, visible?) or a control marker (value None)."""

    value: str | None
    visible: bool


@dataclass
class Model:
    """Partition logs with read_committed visibility, and consumers with positions."""

    logs: dict[tuple[str, int], list[Entry]] = field(default_factory=lambda: {k: [] for k in KEYS})
    positions: dict[int, dict[tuple[str, int], int]] = field(default_factory=dict)
    counter: int = 0
    rec: HistoryRecorder = field(default_factory=HistoryRecorder)
    time_ms: int = 0

    def fresh(self, process: int) -> str:
        self.counter += 1
        return f"p{process}-v{self.counter}"

    def append(self, key, value, visible) -> int:
        log = self.logs[key]
        log.append(Entry(value, visible))
        return len(log) - 1

    def marker(self, key) -> None:
        self.logs[key].append(Entry(None, False))

    def read(self, process, limit) -> tuple[list[Poll], dict]:
        """Read up to ``limit`` visible records per assigned key; return reads and new positions."""
        pos = dict(self.positions.setdefault(process, dict.fromkeys(KEYS, 0)))
        reads = []
        for key in sorted(pos):
            log = self.logs[key]
            o = pos[key]
            n = 0
            while o < len(log) and n < limit:
                e = log[o]
                if e.visible:
                    reads.append(Poll(key[0], key[1], o, e.value))
                    n += 1
                o += 1
            pos[key] = o
        return reads, pos

    def record(self, process, f, typ, mops, *, keys=(), error=None) -> None:
        inv = self.rec.invoke(process, f, [m._replace(offset=None) for m in mops if type(m) is Send], self.time_ms)
        self.rec.complete(inv, typ, mops, self.time_ms + 1, error=error, keys=keys)
        self.time_ms += 2


actions = st.one_of(
    st.tuples(st.just("send"), st.integers(0, PROCESSES - 1), st.sampled_from(KEYS), st.integers(1, 3)),
    st.tuples(
        st.just("txn"),
        st.integers(0, PROCESSES - 1),
        st.lists(st.sampled_from(KEYS), min_size=0, max_size=3),
        st.booleans(),
        st.sampled_from(["commit", "abort", "info-commit", "info-abort"]),
    ),
    st.tuples(st.just("info-send"), st.integers(0, PROCESSES - 1), st.sampled_from(KEYS), st.booleans()),
    st.tuples(st.just("poll"), st.integers(0, PROCESSES - 1), st.integers(1, 4)),
    st.tuples(st.just("assign"), st.integers(0, PROCESSES - 1), st.sets(st.sampled_from(KEYS), min_size=1)),
    st.tuples(st.just("crash"), st.integers(0, PROCESSES - 1)),
)


def run(model: Model, action) -> None:
    kind, process = action[0], action[1]
    if kind == "send":
        _, _, key, n = action
        mops = []
        for _ in range(n):
            v = model.fresh(process)
            mops.append(Send(key[0], key[1], v, model.append(key, v, True)))
        model.record(process, "send", "ok", mops)
    elif kind == "info-send":
        _, _, key, happened = action
        v = model.fresh(process)
        if happened:
            model.append(key, v, True)
        model.record(process, "send", "info", [Send(key[0], key[1], v)], error="request timed out")
    elif kind == "txn":
        _, _, send_keys, polls, outcome = action
        reads, new_pos = model.read(process, 2) if polls else ([], None)
        committed = outcome in ("commit", "info-commit")
        sends = []
        for key in send_keys:
            v = model.fresh(process)
            sends.append(Send(key[0], key[1], v, model.append(key, v, False)))
        for key in sorted(set(send_keys)):
            log = model.logs[key]
            for e in log:
                if e.value is not None and not e.visible and any(s.value == e.value for s in sends):
                    e.visible = committed
            model.marker(key)
        if outcome == "commit":
            if new_pos is not None:
                model.positions[process] = new_pos
            model.record(process, "txn", "ok", [*reads, *sends])
        elif outcome == "abort":
            # Aborted: the client rewinds its consumer, so the position does not move.
            model.record(process, "txn", "fail", [*reads, *sends], error="aborted")
        else:
            info_sends = [s._replace(offset=None) for s in sends]
            model.record(process, "txn", "info", [*reads, *info_sends], error="commit timed out")
    elif kind == "poll":
        _, _, limit = action
        reads, new_pos = model.read(process, limit)
        model.positions[process] = new_pos
        model.record(process, "poll", "ok", reads)
    elif kind == "assign":
        _, _, keys = action
        old = model.positions.get(process, dict.fromkeys(KEYS, 0))
        model.positions[process] = {k: old.get(k, 0) for k in sorted(keys)}
        model.record(process, "assign", "ok", [], keys=sorted(keys))
    else:
        model.positions.pop(process, None)
        model.record(process, "crash", "info", [], error="crashed")


def final_reads(model: Model) -> None:
    reads, _ = model.read(FINAL_PROCESS, 10_000)
    model.record(FINAL_PROCESS, "poll", "ok", reads)


@st.composite
def serial_histories(draw, min_actions=0, with_abort=False):
    model = Model()
    plan = draw(st.lists(actions, min_size=min_actions, max_size=30))
    if with_abort:
        # Make sure there is an aborted transaction to read from.
        at = draw(st.integers(0, len(plan)))
        plan.insert(at, ("txn", draw(st.integers(0, PROCESSES - 1)), [draw(st.sampled_from(KEYS))], False, "abort"))
    for action in plan:
        run(model, action)
    final_reads(model)
    return model


PROFILE = settings(derandomize=True, max_examples=200, deadline=None)


@PROFILE
@given(serial_histories())
def test_serial_histories_of_a_correct_log_check_clean(model):
    report = check_history(model.rec.history())
    assert report.ok, str(report)
    assert report.anomalies == (), str(report)


# -- mutations --------------------------------------------------------------------------------


def replace_op(h: History, index: int, op: Op) -> History:
    return History([op if o.index == index else o for o in h])


def final_op(h: History) -> Op:
    return h[-1]


def committed_send_offsets(h: History) -> dict[tuple[tuple[str, int], str], int]:
    out = {}
    for op in h.completions():
        if op.type == "ok":
            for m in op.mops:
                if type(m) is Send and m.offset is not None:
                    out[((m.topic, m.partition), m.value)] = m.offset
    return out


def forbidden_kinds(h: History) -> set[str]:
    return {a.kind for a in check_history(h).forbidden}


@PROFILE
@given(serial_histories(min_actions=3), st.data())
def test_a_value_read_again_at_a_new_offset_is_exactly_a_duplicate(model, data):
    h = model.rec.history()
    last = final_op(h)
    assume(last.mops)
    victim = data.draw(st.sampled_from(last.mops))
    end = len(model.logs[(victim.topic, victim.partition)])
    mutated = last._replace(mops=(*last.mops, victim._replace(offset=end + 5)))
    assert forbidden_kinds(replace_op(h, last.index, mutated)) == {"duplicate"}


@PROFILE
@given(serial_histories(min_actions=3, with_abort=True), st.data())
def test_reading_an_aborted_value_is_a_g1a(model, data):
    h = model.rec.history()
    aborted = [(op, m) for op in h.completions() if op.type == "fail" for m in op.mops if type(m) is Send]
    assume(aborted)
    _op, victim = data.draw(st.sampled_from(aborted))
    last = final_op(h)
    read = Poll(victim.topic, victim.partition, victim.offset, victim.value)
    mutated = last._replace(mops=tuple(sorted((*last.mops, read), key=lambda m: (m.topic, m.partition, m.offset))))
    assert "G1a" in forbidden_kinds(replace_op(h, last.index, mutated))


@PROFILE
@given(serial_histories(min_actions=3), st.data())
def test_removing_every_read_of_a_committed_value_below_a_read_one_is_a_lost_write(model, data):
    h = model.rec.history()
    sent = committed_send_offsets(h)
    last = final_op(h)
    final_max = {}
    for m in last.mops:
        final_max[(m.topic, m.partition)] = max(final_max.get((m.topic, m.partition), -1), m.offset)
    candidates = sorted(kv for kv, o in sent.items() if o < final_max.get(kv[0], -1))
    assume(candidates)
    key, value = data.draw(st.sampled_from(candidates))
    ops = []
    for op in h:
        if op.type == "ok" and any(type(m) is Poll for m in op.mops):
            kept = tuple(
                m for m in op.mops if not (type(m) is Poll and (m.topic, m.partition) == key and m.value == value)
            )
            op = op._replace(mops=kept)
        ops.append(op)
    assert "lost-write" in forbidden_kinds(History(ops))


@PROFILE
@given(serial_histories(min_actions=3), st.data())
def test_replacing_the_value_of_a_read_at_an_acknowledged_offset_is_an_inconsistent_offset(model, data):
    h = model.rec.history()
    sent = committed_send_offsets(h)
    last = final_op(h)
    positions = [i for i, m in enumerate(last.mops) if ((m.topic, m.partition), m.value) in sent]
    assume(positions)
    i = data.draw(st.sampled_from(positions))
    mops = list(last.mops)
    mops[i] = mops[i]._replace(value="mutant")
    assert "inconsistent-offsets" in forbidden_kinds(replace_op(h, last.index, last._replace(mops=tuple(mops))))


@PROFILE
@given(serial_histories(min_actions=3), st.data())
def test_dropping_a_read_from_the_middle_of_a_poll_is_an_int_poll_skip(model, data):
    h = model.rec.history()
    sent = committed_send_offsets(h)
    last = final_op(h)
    mops = last.mops
    middles = [
        i
        for i in range(1, len(mops) - 1)
        if (mops[i - 1].topic, mops[i - 1].partition) == (mops[i].topic, mops[i].partition)
        and (mops[i + 1].topic, mops[i + 1].partition) == (mops[i].topic, mops[i].partition)
        and ((mops[i].topic, mops[i].partition), mops[i].value) in sent
    ]
    assume(middles)
    i = data.draw(st.sampled_from(middles))
    mutated = last._replace(mops=mops[:i] + mops[i + 1 :])
    assert "int-poll-skip" in forbidden_kinds(replace_op(h, last.index, mutated))
