"""The drop-in's surface against the installed confluent-kafka: every method is there, or listed as not supported.

Method: walk the public methods of confluent-kafka's ``Producer``, ``Consumer``, ``Message`` and
``admin.AdminClient`` (and the names of the ``confluent_kafka`` module) with ``inspect``. Each
must exist on the drop-in with compatible parameters, or be a key of
``eos_magics.kafka.unsupported.NOT_SUPPORTED`` (with its reason), and every such key must be listed
in docs/testing.md under "What the drop-in does not do".

The C methods of confluent-kafka have no signature; for them :data:`C_PARAMS` gives the
positional parameters, from confluent-kafka's C source (``kws[]`` of each method) and docstrings.
The table itself is checked against the installed library: the arity is probed (calling with too
many arguments makes the C argument parser say "takes at most N"), and the parameter names of each
docstring's ``.. py:function::`` line must be in it. A compatible drop-in method takes those
parameters positionally in that order, requires only what the docstring does not bracket, and
gives defaults to anything it adds.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import eos_magics.kafka as kafka
from eos_magics.kafka.admin import AdminClient
from eos_magics.kafka.unsupported import NOT_SUPPORTED

ck = pytest.importorskip("confluent_kafka", reason="compares with the real library")
ck_admin = pytest.importorskip("confluent_kafka.admin")

DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
#: C methods that accept and ignore any arguments (nothing to probe).
IGNORES_ARGS = {"Producer.close", "Consumer.assignment"}
#: METH_O methods: one positional argument, never by keyword, so its name is free.
ONE = (None,)

C_PARAMS: dict[str, dict[str, tuple[str | None, ...]]] = {
    "Producer": {
        "produce": ("topic", "value", "key", "partition", "callback", "on_delivery", "timestamp", "headers"),
        "produce_batch": ("topic", "messages", "partition", "callback", "on_delivery"),
        "poll": ("timeout",),
        "flush": ("timeout",),
        "purge": ("in_queue", "in_flight", "blocking"),
        "list_topics": ("topic", "timeout"),
        "cluster_id": ("timeout",),
        "init_transactions": ("timeout",),
        "begin_transaction": (),
        "send_offsets_to_transaction": ("positions", "group_metadata", "timeout"),
        "commit_transaction": ("timeout",),
        "abort_transaction": ("timeout",),
        "close": (),
        "set_sasl_credentials": ("username", "password"),
    },
    "Consumer": {
        "assign": ONE,
        "assignment": (),
        "close": (),
        "cluster_id": ("timeout",),
        # confluent-kafka's third positional is "async", a Python keyword: the drop-in takes it
        # as asynchronous, and async= as a keyword (see ARITY_EXCEPTIONS).
        "commit": ("message", "offsets", "asynchronous"),
        "committed": ("partitions", "timeout"),
        "consume": ("num_messages", "timeout"),
        "consumer_group_metadata": (),
        "get_watermark_offsets": ("partition", "timeout", "cached"),
        "incremental_assign": ONE,
        "incremental_unassign": ONE,
        "list_topics": ("topic", "timeout"),
        "memberid": (),
        "offsets_for_times": ("partitions", "timeout"),
        "pause": ("partitions",),
        "poll": ("timeout",),
        "position": ("partitions",),
        "resume": ("partitions",),
        "seek": ("partition",),
        "set_sasl_credentials": ("username", "password"),
        "store_offsets": ("message", "offsets"),
        "subscribe": ("topics", "on_assign", "on_revoke", "on_lost"),
        "unassign": (),
        "unsubscribe": (),
    },
    "Message": {
        **dict.fromkeys(("error", "headers", "key", "latency", "leader_epoch", "offset", "partition"), ()),
        **dict.fromkeys(
            ("timestamp", "topic", "value", "delivery_count", "deserialized_key", "deserialized_value"), ()
        ),
        **dict.fromkeys(("set_error", "set_headers", "set_key", "set_topic", "set_value"), ONE),
    },
    "AdminClient": {"list_topics": ("topic", "timeout"), "cluster_id": ("timeout",), "poll": ("timeout",)},
}
#: Where the drop-in's arity differs on purpose: the reason.
ARITY_EXCEPTIONS = {"Consumer.commit": "confluent-kafka's 4th positional is 'asynchronous' after 'async'"}
DUNDERS = {"Producer": ("__enter__", "__exit__", "__len__", "__bool__"), "Consumer": ("__enter__", "__exit__")}


@pytest.fixture(scope="module")
def real() -> dict[str, Any]:
    """Real instances to probe (no broker: localhost:1; nothing is sent)."""
    quiet = {"bootstrap.servers": "localhost:1", "log_level": 0}
    return {
        "Producer": (ck.Producer, ck.Producer(quiet), kafka.Producer),
        "Consumer": (ck.Consumer, ck.Consumer({**quiet, "group.id": "compat"}), kafka.Consumer),
        "Message": (ck.Message, ck.Message(), kafka.Message),
        "AdminClient": (ck_admin.AdminClient, ck_admin.AdminClient(quiet), AdminClient),
    }


def public_methods(cls: type) -> list[str]:
    return sorted(n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n)))


def probed_arity(bound: Any) -> int | None:
    """Return the most positional arguments confluent-kafka's C method takes, from its argument parser."""
    try:
        bound(*[None] * 20)
    except TypeError as exc:
        text = str(exc)
        if "takes no arguments" in text:
            return 0
        if "exactly one argument" in text:
            return 1
        m = re.search(r"takes at most (\d+) argument", text)
        return int(m.group(1)) if m else None
    return None


def documented(method: Any, name: str) -> tuple[list[str], list[str]] | None:
    """Return (all, required) parameter names of the ``.. py:function:: name(...)`` docstring line."""
    m = re.search(rf"py:function::? {name}\((.*)\)", method.__doc__ or "")
    if m is None:
        return None
    params, required = [], []
    for part in (p.strip() for p in m.group(1).split(",") if p.strip()):
        clean = part.strip("[]").split("=")[0].strip()
        params.append(clean)
        if not part.startswith("["):
            required.append(clean)
    return params, required


def check_positional(ours: Any, names: tuple[str | None, ...], required: list[str] | None, what: str) -> None:
    params = list(inspect.signature(ours).parameters.values())[1:]  # without self
    positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert len(positional) >= len(names), f"{what}: takes {len(positional)} positional parameters, needs {len(names)}"
    for want, have in zip(names, positional, strict=False):
        assert want is None or have.name == want, f"{what}: parameter {have.name!r} where confluent-kafka has {want!r}"
    for extra in positional[len(names) :]:
        assert extra.default is not inspect.Parameter.empty, f"{what}: added parameter {extra.name!r} needs a default"
    if required is not None:
        ours_required = [p.name for p in positional if p.default is inspect.Parameter.empty]
        assert ours_required == required, f"{what}: requires {ours_required}, confluent-kafka {required}"


@pytest.mark.parametrize("cls_name", ["Producer", "Consumer", "Message"])
def test_every_c_method_is_simulated_with_compatible_parameters_or_listed(cls_name: str, real: dict[str, Any]) -> None:
    real_cls, instance, ours = real[cls_name]
    table = C_PARAMS[cls_name]
    assert sorted(table) == public_methods(real_cls), "the table must list exactly confluent-kafka's methods"
    for name, names in table.items():
        what = f"{cls_name}.{name}"
        real_method = getattr(real_cls, name)
        doc = documented(real_method, name)
        if doc is not None:
            assert set(doc[0]) <= set(names) or names == ONE, f"{what}: docstring names {doc[0]} not in {names}"
        if what not in IGNORES_ARGS and what not in ARITY_EXCEPTIONS:
            assert probed_arity(getattr(instance, name)) == len(names), what
        if what in NOT_SUPPORTED:
            continue
        assert hasattr(ours, name), f"{what} is neither simulated nor in NOT_SUPPORTED"
        check_positional(getattr(ours, name), names, doc[1] if doc else None, what)
    for dunder in DUNDERS.get(cls_name, ()):
        assert hasattr(real_cls, dunder) and hasattr(ours, dunder), f"{cls_name}.{dunder}"


def test_every_admin_method_is_simulated_with_compatible_parameters_or_listed() -> None:
    for name in public_methods(ck_admin.AdminClient):
        what = f"AdminClient.{name}"
        if what in NOT_SUPPORTED:
            continue
        assert hasattr(AdminClient, name), f"{what} is neither simulated nor in NOT_SUPPORTED"
        ours = getattr(AdminClient, name)
        if name in C_PARAMS["AdminClient"]:
            check_positional(ours, C_PARAMS["AdminClient"][name], None, what)
            continue
        theirs = list(inspect.signature(getattr(ck_admin.AdminClient, name)).parameters.values())[1:]
        mine = list(inspect.signature(ours).parameters.values())[1:]
        named = [p for p in theirs if p.kind is p.POSITIONAL_OR_KEYWORD]
        check_positional(ours, tuple(p.name for p in named), [p.name for p in named if p.default is p.empty], what)
        if any(p.kind is p.VAR_KEYWORD for p in theirs):
            assert any(p.kind is p.VAR_KEYWORD for p in mine), f"{what} must take **kwargs (request_timeout ...)"


def test_every_module_name_is_simulated_or_listed() -> None:
    for name in ck.__all__:
        assert hasattr(kafka, name) or f"confluent_kafka.{name}" in NOT_SUPPORTED, f"confluent_kafka.{name}"
    for name in ("OFFSET_BEGINNING", "OFFSET_END", "OFFSET_STORED", "OFFSET_INVALID", "TIMESTAMP_CREATE_TIME"):
        assert getattr(kafka, name) == getattr(ck, name)
    with pytest.raises(AttributeError, match="not simulated"):
        _ = kafka.SerializingProducer


def test_not_supported_names_real_things_and_is_documented() -> None:
    text = DOCS.read_text()
    assert "## What the drop-in does not do" in text
    section = text.split("## What the drop-in does not do", 1)[1].split("\n## ", 1)[0]
    for key, reason in NOT_SUPPORTED.items():
        assert f"`{key}`" in section, f"{key} is missing from docs/testing.md"
        assert reason
        owner, _, name = key.partition(".")
        if owner == "confluent_kafka":
            assert hasattr(ck, name) or importlib.util.find_spec(f"confluent_kafka.{name}"), key
        else:
            real_cls = {"Producer": ck.Producer, "Consumer": ck.Consumer, "Message": ck.Message}.get(
                owner, ck_admin.AdminClient
            )
            assert hasattr(real_cls, name), f"{key}: confluent-kafka has no such method"


@pytest.mark.parametrize("what", sorted(k for k in NOT_SUPPORTED if not k.startswith("confluent_kafka.")))
def test_listed_methods_raise_not_simulated(what: str, cluster: Any) -> None:
    owner, name = what.split(".")
    obj = {
        "Producer": lambda: kafka.Producer({}),
        "Consumer": lambda: kafka.Consumer({"group.id": "g"}),
        "Message": kafka.Message,
        "AdminClient": lambda: AdminClient({}),
    }[owner]()
    with pytest.raises(kafka.NotSimulatedError, match=re.escape(what)):
        getattr(obj, name)()
