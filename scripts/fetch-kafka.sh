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

POM=reference/pom.xml
DEST=.cache/kafka-4.4.0
STAMP="$DEST/.fetch-stamp"

if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
    echo "fetch-kafka.sh: skipped: the Kafka reference cluster needs Java 17 and Maven (apt-get install openjdk-17-jdk-headless maven)"
    exit 0
fi

want="$(sha256sum "$POM" | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -f "$DEST/libs/kafka_2.13-4.4.0.jar" ]; then
    echo "fetch-kafka.sh: $DEST/libs is up to date"
    exit 0
fi

echo "fetch-kafka.sh: fetching Kafka 4.4.0 jars into $DEST/libs (Maven; the first time downloads ~40 MB)"
rm -rf "$DEST/libs" "$STAMP"
mkdir -p "$DEST"
mvn -q -B -f "$POM" dependency:copy-dependencies -DoutputDirectory="$PWD/$DEST/libs"
echo "$want" > "$STAMP"
echo "fetch-kafka.sh: done ($(ls "$DEST/libs" | wc -l) jars)"
