"""Views of the admin tools: ``kafka-transactions.sh`` and ``kafka-consumer-groups.sh``.

Role
----
:func:`transactions` runs one ``kafka-transactions.sh`` subcommand (``list``, ``describe``,
``describe-producers``, ``find-hanging``, ``abort``); :func:`consumer_groups` describes a group
(``--describe`` with ``--members``/``--state``/``--verbose``) or lists the groups (``--list``).
The text is the engine's, unchanged (``TransactionsAdmin`` and ``Cluster.describe_group``); the
rows are the same cells with their types (ints, None where the tool prints ``None`` or ``-``).

Invariants
----------
* Read-only subcommands read the engine's views directly, never through ``Cluster.admin()``,
  which would add an admin node to the world; only ``abort`` creates it (and runs simulated
  time until the partition leader answers), exactly as ``TransactionsAdmin.abort`` does.
* Errors are the engine's (``TransactionalIdNotFoundException``, ``UnknownTopicOrPartitionException``,
  ``AbortTransactionError`` ...) and pass through; an unknown action or keyword is a ``ValueError``
  / ``TypeError`` naming the accepted ones.
* ``consumer_groups`` rows are cut from the engine's text at the header's column positions (the
  tool pads every column but the last to the width of its longest value), so rows and text
  cannot disagree.

What it does not do
-------------------
No table format is re-implemented: the engine prints, this module only types the cells.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from engine.views import consumer_groups as consumer_groups_text
from engine.views import transactions as txn_views
from engine.views.log_batches import replica_log
from eos_magics.views.base import TableView
from eos_magics.views.logs import strip
from widgets import svg

if TYPE_CHECKING:
    from engine import Cluster

__all__ = ["ACTIONS", "consumer_groups", "transactions"]

#: The subcommands, and the keywords each takes.
ACTIONS: dict[str, tuple[str, ...]] = {
    "list": ("duration_filter",),
    "describe": ("transactional_id",),
    "describe-producers": ("topic", "partition", "broker"),
    "find-hanging": ("broker", "topic", "partition", "max_transaction_timeout"),
    "abort": ("topic", "partition", "start_offset"),
}
ABORT_COLUMNS = ("Topic", "Partition", "StartOffset", "ProducerId", "ProducerEpoch", "CoordinatorEpoch")


def _check_action(action: Any, kw: dict[str, Any]) -> str:
    if not isinstance(action, str):
        msg = f"action must be a str, one of {', '.join(ACTIONS)}; got {action!r}"
        raise TypeError(msg)
    name = action.replace("_", "-")
    if name not in ACTIONS:
        msg = f"no kafka-transactions.sh subcommand {action!r}; use one of {', '.join(ACTIONS)}"
        raise ValueError(msg)
    unknown = sorted(set(kw) - set(ACTIONS[name]))
    if unknown:
        takes = ", ".join(ACTIONS[name])
        msg = f"transactions({name!r}) takes {takes}; not {', '.join(unknown)}"
        raise TypeError(msg)
    return name


def transactions(cluster: Cluster, action: str, **kw: Any) -> TableView:
    """``kafka-transactions.sh ACTION``; keywords per action in :data:`ACTIONS`.

    ======================  ======================================================================
    action                  keywords (and the tool's option)
    ======================  ======================================================================
    ``list``                ``duration_filter`` ms (``--duration-filter``)
    ``describe``            ``transactional_id`` (``--transactional-id``), required
    ``describe-producers``  ``topic``, ``partition`` (0), ``broker`` (``--broker-id``; the leader)
    ``find-hanging``        ``broker`` or ``topic`` [``partition``]; ``max_transaction_timeout`` min (15)
    ``abort``               ``topic``, ``partition`` (0), ``start_offset`` (``--start-offset``), required
    ======================  ======================================================================

    Columns are the tool's headers; ``find-hanging`` adds ``Reason`` (why the transaction hangs),
    ``abort`` (which prints nothing) has one row for the marker it wrote and an empty text.
    """
    name = _check_action(action, kw)
    admin = cluster.transactions()
    if name == "list":
        ms = kw.get("duration_filter")
        listed = admin.client.list_transactions(ms)  # ListTransactions to every broker, over the network
        text = txn_views.format_table(txn_views.LIST_HEADERS, [r.cells() for r in listed])
        rows = [(r.transactional_id, r.coordinator_id, r.producer_id, r.state) for r in listed]
        from eos_magics.said import WRITING_MARKERS

        writing = [r[0] for r in rows if r[3] in WRITING_MARKERS]
        summary = (
            f"{', '.join(writing)}: ended by the producer, markers still being written; "
            "the state becomes CompleteCommit/CompleteAbort once they land (time must move: %eos_time run 100)"
            if writing
            else ""
        )
        title = "list" + (f" --duration-filter {ms}" if ms is not None else "")
        return _table(text, txn_views.LIST_HEADERS, rows, title, summary=summary)
    if name == "describe":
        tid = kw.get("transactional_id")
        if tid is None:
            msg = "transactions('describe') needs transactional_id=..."
            raise TypeError(msg)
        d = admin.client.describe_transaction(tid)  # DescribeTransactions to the coordinator, over the network
        text = txn_views.format_table(txn_views.DESCRIBE_HEADERS, [d.cells()])
        row = (
            d.coordinator_id,
            d.transactional_id,
            d.producer_id,
            d.producer_epoch,
            d.state,
            d.transaction_timeout_ms,
            d.start_time_ms,
            d.duration_ms,
            ",".join(f"{t}-{p}" for t, p in d.topic_partitions),
        )
        return _table(text, txn_views.DESCRIBE_HEADERS, [row], f"describe --transactional-id {tid}", data=d)
    if name == "describe-producers":
        topic, partition, broker = _required(kw, "topic", name), kw.get("partition", 0), kw.get("broker")
        text = admin.describe_producers(topic, partition, broker)
        found = txn_views.describe_producers_rows(cluster, topic, partition, broker)
        rows = [
            (
                r.producer_id,
                r.producer_epoch,
                -1 if r.coordinator_epoch is None else r.coordinator_epoch,
                r.last_sequence,
                r.last_timestamp,
                r.current_txn_start_offset,
            )
            for r in found
        ]
        option = f" --broker-id {broker}" if broker is not None else ""
        picture = strip(replica_log(cluster, topic, partition, broker))
        title = f"describe-producers --topic {topic} --partition {partition}{option}"
        return _table(text, txn_views.PRODUCERS_HEADERS, rows, title, data=found, picture=picture)
    if name == "find-hanging":
        minutes = kw.get("max_transaction_timeout", txn_views.DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN)
        broker, topic, partition = kw.get("broker"), kw.get("topic"), kw.get("partition")
        text = admin.find_hanging(broker, topic, partition, minutes)
        found = txn_views.find_hanging_rows(cluster, broker, topic, partition, minutes)
        rows = [
            (
                h.topic,
                h.partition,
                h.producer_id,
                h.producer_epoch,
                h.coordinator_epoch,
                h.start_offset,
                h.last_timestamp,
                h.duration_min,
                h.reason,
            )
            for h in found
        ]
        where = f"--broker-id {broker}" if broker is not None else f"--topic {topic}"
        where += f" --partition {partition}" if partition is not None else ""
        title = f"find-hanging {where} --max-transaction-timeout {minutes}"
        return _table(text, (*txn_views.HANGING_HEADERS, "Reason"), rows, title, data=found)
    topic, partition = _required(kw, "topic", name), kw.get("partition", 0)
    start = _required(kw, "start_offset", name)
    req = admin.client.abort_transaction(topic, partition, start)
    row = (topic, partition, start, req.producer_id, req.producer_epoch, req.coordinator_epoch)
    title = f"abort --topic {topic} --partition {partition} --start-offset {start}"
    done = f"wrote an ABORT marker for producer {req.producer_id} epoch {req.producer_epoch}; the tool prints nothing"
    picture = strip(replica_log(cluster, topic, partition))
    return _table("", ABORT_COLUMNS, [row], title, data=req, picture=picture, summary=done)


def _required(kw: dict[str, Any], key: str, action: str) -> Any:
    if kw.get(key) is None:
        msg = f"transactions({action!r}) needs {key}=..."
        raise TypeError(msg)
    return kw[key]


def _table(
    text: str,
    columns: tuple[str, ...],
    rows: list[tuple[Any, ...]],
    title: str,
    *,
    data: Any = None,
    picture: str = "",
    summary: str = "",
) -> TableView:
    return TableView(
        text,
        columns,
        rows,
        title=f"kafka-transactions.sh {title}",
        picture=picture,
        summary=summary,
        text_label="kafka-transactions.sh output",
        data=data if data is not None else rows,
    )


# -- kafka-consumer-groups.sh -----------------------------------------------------------------------

OFFSETS_COLUMNS = consumer_groups_text.OFFSETS_HEADER
MEMBERS_COLUMNS = consumer_groups_text.MEMBERS_HEADER
STATE_COLUMNS = consumer_groups_text.STATE_HEADER
_INT_COLUMNS = frozenset(
    {
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "LSO",
        "LAG-TO-LSO",
        "#PARTITIONS",
        "#MEMBERS",
        "CURRENT-EPOCH",
        "TARGET-EPOCH",
        "GROUP-EPOCH",
        "TARGET-ASSIGNMENT-EPOCH",
    }
)
_EPOCHS = frozenset({"CURRENT-EPOCH", "TARGET-EPOCH", "TARGET-ASSIGNMENT"})
_INT = re.compile(r"-?\d+")


def _cut(text: str, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """Return the rows of the table in ``text`` whose header line names ``columns``."""
    lines = text.split("\n")
    header_at = next((i for i, line in enumerate(lines) if line.startswith(columns[0] + " ")), None)
    if header_at is None:
        return []
    header = lines[header_at]
    starts = []
    pos = 0
    for c in columns:
        pos = header.index(c, pos)
        starts.append(pos)
        pos += len(c)
    rows = []
    for line in lines[header_at + 1 :]:
        if not line.strip():
            continue
        cells = []
        for i, c in enumerate(columns):
            end = starts[i + 1] - 1 if i + 1 < len(starts) else len(line)
            raw = line[starts[i] : end].strip()
            if c in _INT_COLUMNS:
                cells.append(int(raw) if _INT.fullmatch(raw) else None)
            else:
                cells.append(None if raw == "-" else raw)
        rows.append(tuple(cells))
    return rows


def consumer_groups(
    cluster: Cluster, group_id: str | None, *, members: bool = False, state: bool = False, verbose: bool = False
) -> TableView:
    """``kafka-consumer-groups.sh --describe --group G`` (``--members``, ``--state``, ``--verbose``), or ``--list``.

    ``group_id=None`` lists the groups (text: one id per line, as ``--list``; rows: group,
    coordinator, state, members, generation, protocol). A group no coordinator knows prints the
    tool's ``Error: Consumer group 'G' does not exist.`` and has no rows. The offsets table has
    the engine's two extra columns, LSO and LAG-TO-LSO, and a lag picture.
    """
    if group_id is None:
        return _list_groups(cluster)
    text = cluster.describe_group(group_id, members=members, state=state, verbose=verbose)
    more = " --verbose" if verbose else ""
    if state:
        columns, flags = STATE_COLUMNS, " --state" + more
        if verbose:
            columns = (*STATE_COLUMNS[:4], *consumer_groups_text.STATE_VERBOSE, STATE_COLUMNS[4])
    elif members:
        columns = (*MEMBERS_COLUMNS, *consumer_groups_text.MEMBERS_VERBOSE) if verbose else MEMBERS_COLUMNS
        if "GROUP-INSTANCE-ID" in text:
            columns = (*columns[:2], "GROUP-INSTANCE-ID", *columns[2:])
        flags = " --members" + more
    else:
        columns, flags = OFFSETS_COLUMNS, ""
    rows = _cut(text, columns)
    if members and verbose and rows:
        # a classic group has no epochs and no target: the table leaves out what is '-' in every row
        keep = [i for i, c in enumerate(columns) if c not in _EPOCHS or any(r[i] is not None for r in rows)]
        columns = tuple(columns[i] for i in keep)
        rows = [tuple(r[i] for i in keep) for r in rows]
    picture = summary = ""
    if rows and columns is OFFSETS_COLUMNS:
        bars = [(f"{r[1]}-{r[2]}", r[3], r[9], r[4]) for r in rows]
        picture = svg.lag_bars(bars, label=f"lag of group {group_id}")
        if any(r[3] is None for r in rows):
            summary = (
                "CURRENT-OFFSET '-': nothing committed yet, or offsets sent with a transaction whose "
                "markers are still being written (they show once the markers land: %eos_time run 100)"
            )
    return TableView(
        text,
        columns,
        rows,
        title=f"kafka-consumer-groups.sh --describe --group {group_id}{flags}",
        picture=picture,
        summary=summary,
        text_label="kafka-consumer-groups.sh output",
        data=cluster.group_view(group_id),
    )


def _list_groups(cluster: Cluster) -> TableView:
    from engine.group import GroupCoordinator

    ids: set[str] = set()
    for b in sorted(cluster.brokers):
        for ext in cluster.brokers[b].extensions:
            if isinstance(ext, GroupCoordinator):
                ids.update(ext.groups)
    views = [v for v in (cluster.group_view(g) for g in sorted(ids)) if v is not None and v.state != "Dead"]
    rows = [(v.group_id, v.coordinator, v.state, len(v.members), v.generation, v.protocol) for v in views]
    return TableView(
        "\n".join(v.group_id for v in views),
        ("group", "coordinator", "state", "members", "generation", "protocol"),
        rows,
        title=f"kafka-consumer-groups.sh --list · {len(rows)} groups",
        text_label="kafka-consumer-groups.sh --list output",
        data=views,
    )
