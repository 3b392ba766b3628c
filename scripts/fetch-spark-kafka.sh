#!/usr/bin/env bash
# Fetch Spark's Kafka source and sink (spark-sql-kafka-0-10_2.13 4.2.0, the newest Maven Central
# serves; PySpark here is 4.3.0, see reference/spark-kafka/pom.xml) into .cache/spark-kafka-4.2.0,
# without the jars pyspark/jars ships already. eos_magics/spark/kafka.py hands them to the Spark
# session as spark.jars: nothing is downloaded at test or notebook time. Idempotent: a stamp file
# holds the sha256 of the pom, and a later run with the same pom returns at once.
#
#   bash scripts/fetch-spark-kafka.sh
#
# Needs Java 17+ and Maven (Debian: apt-get install openjdk-17-jdk-headless maven). Without them it
# prints one line saying so and exits 0: Spark's Kafka source is optional, the rest of eos works.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

POM=reference/spark-kafka/pom.xml
DEST=.cache/spark-kafka-4.2.0
STAMP="$DEST/.fetch-stamp"

if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
    echo "fetch-spark-kafka.sh: skipped: Spark's Kafka source needs Java 17 and Maven (apt-get install openjdk-17-jdk-headless maven)"
    exit 0
fi

want="$(sha256sum "$POM" | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -f "$DEST/spark-sql-kafka-0-10_2.13-4.2.0.jar" ]; then
    echo "fetch-spark-kafka.sh: $DEST is up to date"
    exit 0
fi

echo "fetch-spark-kafka.sh: fetching spark-sql-kafka-0-10 4.2.0 into $DEST (Maven; the first time downloads ~15 MB)"
rm -rf "$DEST"
mkdir -p "$DEST"
mvn -q -B -f "$POM" dependency:copy-dependencies -DoutputDirectory="$PWD/$DEST" -DincludeScope=runtime
echo "$want" > "$STAMP"
echo "fetch-spark-kafka.sh: done ($(ls "$DEST"/*.jar | wc -l) jars)"
