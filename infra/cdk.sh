#!/usr/bin/env bash
# The AWS CDK CLI at a pinned version, installed once from npm into .cache/, run in infra/.
#
#   infra/cdk.sh synth -q            any cdk command and its arguments
#   infra/cdk.sh --local deploy ...  the same through cdklocal (LocalStack), also pinned
#
# It runs the app in infra/, or in CDK_APP_DIR (another CDK app's directory, holding its
# cdk.json: CDK_APP_DIR=examples/existing-table infra/cdk.sh synth).
#
# The CLI has its own version line (2.10xx) apart from aws-cdk-lib; a CLI reads the cloud
# assemblies of every library released before it. 2.1031.2 (November 2025) is newer than
# aws-cdk-lib 2.220.0 (cloud assembly schema 48), which infra/go.mod pins.
set -euo pipefail

CDK_VERSION=2.1031.2
CDKLOCAL_VERSION=3.0.4

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${DENORM_CACHE:-$ROOT/.cache}
APP_DIR=${CDK_APP_DIR:-$ROOT/infra}

die() { echo "cdk: $*" >&2; exit 1; }

# install DIR PACKAGE@VERSION...: npm checks each tarball against the registry's integrity
# hash; --no-save keeps package files out of the cache folder's history.
install() {
  local dir=$1; shift
  [ -f "$dir/.installed" ] && return 0
  command -v npm >/dev/null 2>&1 || die "npm is required to install the CDK CLI: install Node.js 20 or newer (which ships npm)"
  echo "cdk: installing $* into $dir (once)" >&2
  rm -rf "$dir" && mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "$@" >"$dir/npm.log" 2>&1 \
    || { tail -5 "$dir/npm.log" >&2; rm -rf "$dir"; die "npm install $* failed"; }
  touch "$dir/.installed"
}

bin=cdk
dir=$CACHE/cdk/$CDK_VERSION
if [ "${1:-}" = "--local" ]; then
  shift
  bin=cdklocal
  dir=$CACHE/cdklocal/$CDKLOCAL_VERSION-cdk$CDK_VERSION
  # cdklocal wraps the aws-cdk it finds next to it: install both, pinned, together.
  install "$dir" "aws-cdk-local@$CDKLOCAL_VERSION" "aws-cdk@$CDK_VERSION"
else
  install "$dir" "aws-cdk@$CDK_VERSION"
fi

command -v go >/dev/null 2>&1 || die "Go is required: the CDK app is Go (cdk.json runs \`go run .\`)"
[ -f "$APP_DIR/cdk.json" ] || die "no cdk.json in $APP_DIR"
cd "$APP_DIR"
exec "$dir/node_modules/.bin/$bin" "$@"
