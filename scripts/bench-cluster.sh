#!/usr/bin/env bash
# `make bench-cluster`: the native load generator (ibexdb-load) against one node on the file store,
# then against 1, 2 and 3 nodes on one PostgreSQL of our own (a throwaway cluster, fsync and
# synchronous commit on), all on this machine's loopback. Everything shares the machine's cores:
# read the figures as what one small machine does, not what the design can do spread out.
#
#   SCENARIOS=baseline,paced   ibexdb-load scenarios
#   SECONDS_EACH=10            measuring time per run
#   NODES=1,2,3                node counts on PostgreSQL
#   PG_PORT=55433              the throwaway PostgreSQL's port
#   LOAD_ARGS="..."            extra ibexdb-load flags for every run
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/pg.sh

SCENARIOS=${SCENARIOS:-baseline,paced}
SECONDS_EACH=${SECONDS_EACH:-10}
NODES=${NODES:-1,2,3}
PG_PORT=${PG_PORT:-55433}
LOAD=target/release/ibexdb-load
[ -x "$LOAD" ] || cargo build --release -p ibexdb-server
DIR=$(mktemp -d /tmp/ibexdb-bench-pg.XXXXXX)
chmod 755 "$DIR"
trap 'pg_stop "$DIR/pg"; rm -rf "$DIR"' EXIT
mkdir -p bench-results

idle() { awk '/^cpu /{print $5}' /proc/stat; }
i1=$(idle); sleep 2; i2=$(idle)
echo "--- bench-cluster: the cores were $(( (i2 - i1) / 4 ))% idle before starting (2 s sample)"

echo "--- bench-cluster: file store, 1 node"
# shellcheck disable=SC2086
"$LOAD" --scenarios "$SCENARIOS" --seconds "$SECONDS_EACH" --json bench-results/sync-load-files.json ${LOAD_ARGS:-}

echo "--- bench-cluster: PostgreSQL on 127.0.0.1:$PG_PORT, nodes $NODES"
pg_start "$DIR/pg" "$PG_PORT"
# shellcheck disable=SC2086
"$LOAD" --scenarios "$SCENARIOS" --seconds "$SECONDS_EACH" --store "$(pg_url "$PG_PORT")" \
  --nodes "$NODES" --json bench-results/sync-load-pg.json ${LOAD_ARGS:-}
