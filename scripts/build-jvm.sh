#!/usr/bin/env bash
# Build the Java programs of jvm/ (the Java client driver and the Kafka Streams app the tests run)
# into jvm/target/eos-jvm.jar, with their jars in jvm/target/libs. Maven downloads what it needs
# here, at set-up, never at test time. Idempotent: a stamp holds the sha256 of jvm/pom.xml and every
# source file, and a later run with the same inputs returns at once.
#
#   bash scripts/build-jvm.sh
#
# Needs a JDK 17+ (javac) and Maven. Without them it prints one line saying so and exits 0: the Java
# tests then skip (fail under CI=true), the rest of eos works.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

DEST=jvm/target
STAMP="$DEST/.build-stamp"

if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
    echo "build-jvm.sh: skipped: the Java programs need a JDK 17 and Maven (apt-get install openjdk-17-jdk-headless maven)"
    exit 0
fi

want="$(find jvm/pom.xml jvm/src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -f "$DEST/eos-jvm.jar" ]; then
    echo "build-jvm.sh: $DEST/eos-jvm.jar is up to date"
    exit 0
fi

echo "build-jvm.sh: building $DEST/eos-jvm.jar (Maven; the first time downloads ~30 MB)"
rm -rf "$DEST"
mvn -q -B -f jvm/pom.xml package dependency:copy-dependencies -DoutputDirectory=target/libs -DincludeScope=runtime
echo "$want" > "$STAMP"
echo "build-jvm.sh: done (kafka-clients $(java -cp "$DEST/eos-jvm.jar:$DEST/libs/*" eosmagics.jvm.Version))"
