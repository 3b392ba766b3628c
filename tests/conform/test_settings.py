"""The shared settings reach both targets; a missing reference cluster is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.conform.realtime_reference import ReferenceClusterError, find_libs, random_cluster_id
from engine.conform.settings import BROKER_SETTINGS, NOT_MODELLED, kafka_settings, serve_args, serve_config
from engine.wire.journal import ServeSpec


def test_eos_serve_takes_every_setting_but_the_ones_named_not_modelled() -> None:
    config = serve_config()
    assert set(config) == set(BROKER_SETTINGS) - set(NOT_MODELLED)
    cluster = ServeSpec(0, 3, config).build()
    assert cluster.config.broker_session_timeout_ms == int(BROKER_SETTINGS["broker.session.timeout.ms"])
    assert cluster.config.offsets_topic_num_partitions == int(BROKER_SETTINGS["offsets.topic.num.partitions"])
    assert serve_args()[:2] == ["--config", "group.initial.rebalance.delay.ms=0"]


def test_overrides_are_strings_as_in_server_properties() -> None:
    settings = kafka_settings({"min.insync.replicas": 1, "auto.create.topics.enable": False})
    assert settings["min.insync.replicas"] == "1"
    assert settings["auto.create.topics.enable"] == "false"
    assert serve_config(settings)["min.insync.replicas"] == "1"


def test_missing_jars_say_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(ReferenceClusterError, match=r"bash scripts/fetch-kafka\.sh.*Java 17 and Maven"):
        find_libs(tmp_path)


def test_cluster_ids_look_like_kafkas() -> None:
    ids = {random_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
