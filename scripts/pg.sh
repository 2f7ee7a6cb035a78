# Shell functions for a throwaway PostgreSQL of our own (sourced by scripts/cluster.sh and
# scripts/bench-cluster.sh; the Rust tests have the same in server/tests/common/pg.rs).
#
#   pg_start DIR PORT   initdb DIR/data (first time) and start it on 127.0.0.1:PORT, socket in DIR;
#                       as the unprivileged user postgres when run as root (PostgreSQL refuses root)
#   pg_stop DIR         stop it (fast: connections are cut)
#   pg_url PORT         the URL nodes use: postgres://postgres@127.0.0.1:PORT/postgres

pg_bin() {
  if [ -n "${IBEXDB_PG_BIN:-}" ]; then echo "$IBEXDB_PG_BIN"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  [ -x "$d/initdb" ] || { echo "PostgreSQL not found: run 'make setup' or set IBEXDB_PG_BIN" >&2; return 1; }
  echo "$d"
}

pg_as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
  local dir=$1 port=$2 bin
  bin=$(pg_bin)
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$dir"; fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    pg_as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; return 1; }
  fi
  pg_as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/log" \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300" start >/dev/null
}

pg_stop() {
  local dir=$1 bin
  bin=$(pg_bin)
  pg_as_owner "$bin/pg_ctl" -D "$dir/data" -w -m fast stop >/dev/null 2>&1 || true
}

pg_url() {
  echo "postgres://postgres@127.0.0.1:$1/postgres"
}
