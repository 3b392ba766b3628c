#!/usr/bin/env bash
# Fetch the Apache Kafka 4.4.0 jars for the conformance suite's reference cluster into
# .cache/kafka-4.4.0/libs (engine/conform/realtime_reference.py runs them). Idempotent: a stamp
# file holds the sha256 of reference/pom.xml, and a later run with the same pom returns at once.
#
#   bash scripts/fetch-kafka.sh
#
# Needs Java 17+ and Maven (Debian: apt-get install openjdk-17-jdk-headless maven). Without them it
# prints one line saying so and exits 0: the reference cluster is optional, the rest of eos works.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/fetch-jars.sh
. scripts/fetch-jars.sh
fetch_jars fetch-kafka.sh reference/pom.xml .cache/kafka-4.4.0/libs kafka_2.13-4.4.0.jar "the Kafka 4.4 reference cluster" "40 MB"
