#!/usr/bin/env bash
# Denorm on LocalStack (needs Docker).
#
#   localstack/localstack.sh up       start LocalStack (docker compose, pinned image) and wait until healthy
#   localstack/localstack.sh deploy   build the function for Docker's architecture, cdklocal bootstrap + deploy (dev stack)
#   localstack/localstack.sh smoke    write a user, a post and comments; wait for the copies and counters
#   localstack/localstack.sh down     stop LocalStack
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${DENORM_CACHE:-$ROOT/.cache}
STATE=$CACHE/localstack
COMPOSE_FILE=$ROOT/localstack/docker-compose.yml
ENDPOINT=${LOCALSTACK_ENDPOINT:-http://localhost:4566}
STACK=${LOCALSTACK_STACK:-Denorm-local}
RULES=${RULES:-$ROOT/rules/social.yaml}

# LocalStack accepts any credentials; fixed ones keep a real AWS profile out of the way.
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=${AWS_REGION:-us-east-1}
export AWS_DEFAULT_REGION=$AWS_REGION
unset AWS_PROFILE AWS_SESSION_TOKEN

die() { echo "localstack: $*" >&2; exit 1; }

# need_docker stops at once, saying why, when there is no usable Docker engine.
need_docker() {
  command -v docker >/dev/null 2>&1 \
    || die "Docker is required for LocalStack and was not found. Install Docker (https://docs.docker.com/get-docker/), or use \`make demo\`, which needs no Docker."
  local out
  if ! out=$(docker info 2>&1 >/dev/null); then
    die "Docker is installed but its engine is not reachable (\`docker info\` failed: $(echo "$out" | head -1)). Start Docker, or use \`make demo\`, which needs no Docker."
  fi
}

compose() {
  if docker compose version >/dev/null 2>&1; then
    docker compose -f "$COMPOSE_FILE" "$@"
  elif command -v docker-compose >/dev/null 2>&1; then
    docker-compose -f "$COMPOSE_FILE" "$@"
  else
    die "Docker Compose is required (the \`docker compose\` plugin or docker-compose)"
  fi
}

need_localstack() {
  curl -fsS "$ENDPOINT/_localstack/health" >/dev/null 2>&1 \
    || die "LocalStack is not answering at $ENDPOINT: run \`make localstack-up\` first"
}

up() {
  need_docker
  mkdir -p "$STATE/volume"
  compose up -d --wait
  echo "localstack: ready at $ENDPOINT"
}

down() {
  need_docker
  compose down
}

# deploy builds bootstrap for the Docker engine's architecture, not the arm64 of `make
# build`: LocalStack runs the function in a container on this engine, and an arm64 binary
# on an x86_64 engine would need QEMU emulation. runtimeLayer=false puts bootstrap in the
# function's own code: LocalStack's community image accepts layers but does not apply them.
deploy() {
  need_docker
  need_localstack
  command -v go >/dev/null 2>&1 || die "Go is required to build the function"
  local arch goarch
  arch=$(docker info --format '{{.Architecture}}')
  case "$arch" in
    x86_64|amd64) arch=x86_64 goarch=amd64 ;;
    aarch64|arm64) arch=arm64 goarch=arm64 ;;
    *) die "unsupported Docker architecture $arch" ;;
  esac
  local code=$STATE/streamproc
  mkdir -p "$code"
  echo "localstack: building functions/streamproc for linux/$goarch"
  (cd "$ROOT" && GOWORK=off CGO_ENABLED=0 GOOS=linux GOARCH=$goarch go build -tags lambda.norpc -trimpath -ldflags='-s -w' \
    -o "$code/bootstrap" ./functions/streamproc)
  export AWS_ENDPOINT_URL=$ENDPOINT
  local account=000000000000
  "$ROOT/infra/cdk.sh" --local bootstrap --no-notices "aws://$account/$AWS_REGION"
  "$ROOT/infra/cdk.sh" --local deploy --no-notices --require-approval never \
    -c dev=true -c "stack=$STACK" -c "code=$code" -c "arch=$arch" -c "rules=$RULES" -c runtimeLayer=false \
    --outputs-file "$STATE/outputs.json"
  echo "localstack: deployed $STACK; outputs in $STATE/outputs.json"
}

smoke() {
  need_docker
  need_localstack
  [ -f "$STATE/outputs.json" ] || die "no deployment found ($STATE/outputs.json): run \`make localstack-deploy\` first"
  local table
  table=$(sed -n 's/.*"TableName": *"\([^"]*\)".*/\1/p' "$STATE/outputs.json" | head -1)
  [ -n "$table" ] || die "no TableName in $STATE/outputs.json"
  (cd "$ROOT" && go run ./localstack/smoke -endpoint "$ENDPOINT" -table "$table")
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  deploy) deploy ;;
  smoke) smoke ;;
  *) echo "usage: $0 up|deploy|smoke|down" >&2; exit 2 ;;
esac
