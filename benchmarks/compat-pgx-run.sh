#!/usr/bin/env bash
# Runs inside `pgdog-topology single` (PG_PG_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See compat.sh:
# pgx v5 in each of its query exec modes, 8 connections at once over a transaction-mode pool of
# 3, through pgdog; then shared prepared statements compared with PostgreSQL; the lines it
# prints, for the results table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
bench_init compat
PGDOG_PORT=$(free_port)
{
  toml_section general host=127.0.0.1 port="$PGDOG_PORT" default_pool_size=3 auth_type=trust
  toml_entry databases name=postgres host=127.0.0.1 port="$PG_PG_PORT" user=postgres
} > "$WORK/pgdog.toml"
toml_entry users name=postgres database=postgres > "$WORK/users.toml"
start_pgdog PGDOG_PID "$WORK/pgdog.toml" "$WORK/users.toml" "$WORK/pgdog.log"
trap 'stop_pids "$PGDOG_PID"' EXIT
wait_port "$PGDOG_PORT" "$PGDOG_PID"
cd "$ROOT/benchmarks/compat/pgx"
go run . "postgres://postgres@127.0.0.1:$PGDOG_PORT/postgres?sslmode=disable" 8 50
# Shared prepared statements after DEALLOCATE ALL, DISCARD ALL and DDL (prepared.go): the same
# steps straight on PostgreSQL and through pgdog, compared line by line.
DIRECT="postgres://postgres@127.0.0.1:$PG_PG_PORT/postgres?sslmode=disable"
go run . prepared "$DIRECT" "$DIRECT" > "$WORK/pgx-prepared-direct.txt"
go run . prepared "postgres://postgres@127.0.0.1:$PGDOG_PORT/postgres?sslmode=disable" "$DIRECT" > "$WORK/pgx-prepared-pgdog.txt"
differ=$(diff "$WORK/pgx-prepared-direct.txt" "$WORK/pgx-prepared-pgdog.txt" | grep -c '^>' || true)
echo "pgx prepared: $(wc -l < "$WORK/pgx-prepared-direct.txt") steps in 5 modes, $differ answered differently than directly"
diff "$WORK/pgx-prepared-direct.txt" "$WORK/pgx-prepared-pgdog.txt" | sed -n 's/^> /pgx prepared differs: /p' || true
