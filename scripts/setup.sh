#!/usr/bin/env bash
# Create the virtual environment .venv in the repository and install eos-magics into it, editable,
# with its test extras. Idempotent: when .venv already matches pyproject.toml (a stamp file holds
# the hash of pyproject.toml and the Python version), it does nothing and returns at once.
#
#   bash scripts/setup.sh              # then: .venv/bin/eos run demo --seed 7
#   PYTHON=python3.11 bash scripts/setup.sh
#
# Needs Python >= 3.11 with the venv module (Debian: apt-get install python3-venv) and, for the
# Spark checks, Java 17. Works without a terminal (CI=true, no stdin).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
VENV=.venv
STAMP="$VENV/.setup-stamp"

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "setup.sh: need Python >= 3.11 as '$PYTHON' (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi

want="$(sha256sum pyproject.toml | cut -d' ' -f1) python-$("$PYTHON" -c 'import platform; print(platform.python_version())')"

if [ -x "$VENV/bin/python" ] && [ -x "$VENV/bin/eos" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    echo "setup.sh: $VENV is up to date"
    bash scripts/fetch-kafka.sh
    bash scripts/fetch-spark-kafka.sh
    bash scripts/build-jvm.sh
    exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup.sh: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi

rm -f "$STAMP"
export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
echo "setup.sh: installing eos-magics and its test extras into $VENV (the first time builds pyspark; minutes)"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e ".[test]"
echo "$want" > "$STAMP"
echo "setup.sh: done; try: $VENV/bin/eos run demo --seed 7"
# The Kafka 4.4 reference cluster's jars (the conformance suite), Spark's Kafka source and sink
# (spark-sql-kafka-0-10, handed to Spark sessions as spark.jars) and the Java programs of jvm/ (the
# Java client and Kafka Streams tests); each one line and exit 0 without Java/Maven.
bash scripts/fetch-kafka.sh
bash scripts/fetch-spark-kafka.sh
bash scripts/build-jvm.sh
