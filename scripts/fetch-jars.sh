#!/usr/bin/env bash
# The one way this project fetches jars from Maven Central: `fetch_jars` copies the runtime
# dependencies of a pom into a folder under .cache, at set-up, never at test time. Sourced by
# scripts/fetch-kafka.sh (the Kafka 4.4 reference cluster) and scripts/fetch-spark-kafka.sh (Spark's
# Kafka source). Idempotent: a stamp file in the folder holds the sha256 of the pom, and a later run
# with the same pom and the marker jar present returns at once. Without Java or Maven it prints one
# line saying so and returns 0: what it fetches is optional, the rest of eos works.
#
#   fetch_jars NAME POM DEST MARKER_JAR WHAT_FOR SIZE [MAVEN_ARG...]

fetch_jars() {
    local name="$1" pom="$2" dest="$3" marker="$4" what="$5" size="$6"
    shift 6
    local stamp="$dest/.fetch-stamp"
    if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
        echo "$name: skipped: $what needs Java 17 and Maven (apt-get install openjdk-17-jdk-headless maven)"
        return 0
    fi
    local want
    want="$(sha256sum "$pom" | cut -d' ' -f1)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$dest/$marker" ]; then
        echo "$name: $dest is up to date"
        return 0
    fi
    echo "$name: fetching $what's jars into $dest (Maven; the first time downloads ~$size)"
    rm -rf "$dest"
    mkdir -p "$dest"
    mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$PWD/$dest" "$@"
    echo "$want" > "$stamp"
    echo "$name: done ($(ls "$dest"/*.jar | wc -l) jars)"
}
