#!/usr/bin/env bash
# Fetches pgjdbc (org.postgresql:postgresql, pinned below) from Maven Central
# into .cache/lib through Maven's dependency plugin (the local repository is
# Maven's default, so a second clone on the same machine needs no network),
# and compiles src/*.java into .cache/classes. Idempotent; quiet
# unless something fails.
set -euo pipefail
cd "$(dirname "$0")"
PGJDBC_VERSION=42.7.14
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.6.1
jar=".cache/lib/postgresql-$PGJDBC_VERSION.jar"
mkdir -p .cache/lib .cache/classes
if [ ! -s "$jar" ]; then
  rm -f .cache/lib/postgresql-*.jar
  copy=("$DEPENDENCY_PLUGIN:copy" "-Dartifact=org.postgresql:postgresql:$PGJDBC_VERSION"
        "-DoutputDirectory=$PWD/.cache/lib" -Dmdep.overWriteReleases=true)
  # Offline first (already in the local repository), then from Maven Central.
  if ! mvn -q -B -o "${copy[@]}" >/dev/null 2>&1; then
    if ! log=$(mvn -q -B -Dstyle.color=never --strict-checksums "${copy[@]}" 2>&1); then
      echo "$log" >&2
      exit 1
    fi
  fi
fi
stale=0
for source in src/*.java "$jar"; do
  [ "$source" -nt .cache/classes/DriverChecks.class ] && stale=1
done
if [ ! -f .cache/classes/DriverChecks.class ] || [ "$stale" = 1 ]; then
  rm -rf .cache/classes && mkdir -p .cache/classes
  javac -Xlint:all -Werror -encoding UTF-8 -cp "$jar" -d .cache/classes src/*.java
fi
