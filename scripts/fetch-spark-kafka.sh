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
# shellcheck source=scripts/fetch-jars.sh
. scripts/fetch-jars.sh
fetch_jars fetch-spark-kafka.sh reference/spark-kafka/pom.xml .cache/spark-kafka-4.2.0 \
    spark-sql-kafka-0-10_2.13-4.2.0.jar "Spark's Kafka source" "15 MB" -DincludeScope=runtime
