#!/usr/bin/env bash
# Starts a throwaway PostgreSQL on 127.0.0.1:55432 as the non-root `postgres` user, with a
# `rollgate` role and database. Safe to run twice.
set -euo pipefail
PGPORT=55432
PGDATA=${PGDATA_DIR:-/tmp/rollgate-pg}
bindir=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n1)")
[ -x "$bindir/initdb" ] || { echo "PostgreSQL is not installed" >&2; exit 1; }
id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
if ! su postgres -s /bin/sh -c "$bindir/pg_isready -h 127.0.0.1 -p $PGPORT -q"; then
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    rm -rf "$PGDATA"; mkdir -p "$PGDATA"; chown postgres "$PGDATA"
    su postgres -s /bin/sh -c "$bindir/initdb -D $PGDATA -A trust -U postgres >/dev/null"
  fi
  su postgres -s /bin/sh -c "$bindir/pg_ctl -D $PGDATA -l $PGDATA/server.log -o '-p $PGPORT -k /tmp -h 127.0.0.1 -c max_connections=300 -c fsync=off' -w start >/dev/null"
fi
psql_do() { su postgres -s /bin/sh -c "psql -h 127.0.0.1 -p $PGPORT -U postgres -tAc \"$1\""; }
[ "$(psql_do "select 1 from pg_roles where rolname='rollgate'")" = 1 ] || psql_do "create role rollgate login superuser password 'rollgate'"
[ "$(psql_do "select 1 from pg_database where datname='rollgate'")" = 1 ] || psql_do "create database rollgate owner rollgate"
echo "postgres ready on 127.0.0.1:$PGPORT"
