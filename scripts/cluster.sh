#!/usr/bin/env bash
# `make cluster`: PostgreSQL and NODES (3) ibexdb-server nodes on it, as local processes on
# loopback ports; prints one URL per node, writes them to $CLUSTER_DIR/urls (one a line) and
# waits; Ctrl-C or SIGTERM stops the nodes and PostgreSQL. For tests that want a cluster
# (e.g. Playwright with one browser context per node): start this, read the "node N URL" lines
# (or the urls file), stop it with SIGTERM.
#
#   NODES=3             how many nodes
#   PG_PORT=55432       PostgreSQL's port
#   CLUSTER_DIR=...     where PostgreSQL's data, the node logs and urls go [a new temp dir]
#   SERVER=...          the server binary [target/release/ibexdb-server, built if missing]
#   NODE_ARGS="..."     extra flags for every node (e.g. --accept-trusted)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/pg.sh

NODES=${NODES:-3}
PG_PORT=${PG_PORT:-55432}
CLUSTER_DIR=${CLUSTER_DIR:-$(mktemp -d /tmp/ibexdb-cluster.XXXXXX)}
SERVER=${SERVER:-target/release/ibexdb-server}
if [ ! -x "$SERVER" ]; then
  echo "--- cluster: building the server (cargo build --release -p ibexdb-server)"
  cargo build --release -p ibexdb-server
fi
mkdir -p "$CLUSTER_DIR"
chmod 755 "$CLUSTER_DIR"

pids=()
stop() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pg_stop "$CLUSTER_DIR/pg"
  echo "--- cluster: stopped (logs in $CLUSTER_DIR)"
}
trap stop EXIT
trap 'exit 0' INT TERM

echo "--- cluster: PostgreSQL on 127.0.0.1:$PG_PORT (data in $CLUSTER_DIR/pg)"
pg_start "$CLUSTER_DIR/pg" "$PG_PORT"
URL=$(pg_url "$PG_PORT")
: >"$CLUSTER_DIR/urls"
for i in $(seq 1 "$NODES"); do
  fifo="$CLUSTER_DIR/node-$i.out"
  rm -f "$fifo"; mkfifo "$fifo"
  # shellcheck disable=SC2086
  "$SERVER" --store "$URL" --listen 127.0.0.1:0 ${NODE_ARGS:-} >"$fifo" 2>"$CLUSTER_DIR/node-$i.log" &
  pids+=($!)
  read -r line <"$fifo"
  addr=${line##* }
  echo "node $i ws://$addr"
  echo "ws://$addr" >>"$CLUSTER_DIR/urls"
  cat "$fifo" >/dev/null &
done
echo "--- cluster: $NODES nodes up (urls in $CLUSTER_DIR/urls); Ctrl-C stops them"
wait "${pids[@]}"
