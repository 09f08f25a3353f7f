#!/usr/bin/env bash
# Install the Java runtime the Spark tests need (pyspark starts a local JVM); safe to run again.
#   - Debian's `openjdk-17-jre-headless` package, when no `java` is on PATH.
set -euo pipefail

if command -v java >/dev/null 2>&1; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif [ -n "${CI:-}" ]; then
    SUDO="sudo"
else
    # Without Java every Spark test fails: stop here with what to do instead.
    echo "install-java: no java found and this is not root; the Spark tests need one:" \
        "run sudo apt-get install openjdk-17-jre-headless, then make test again." >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends openjdk-17-jre-headless
if ! command -v java >/dev/null 2>&1; then
    echo "install-java: openjdk-17-jre-headless is installed but java is not on PATH." >&2
    exit 1
fi
