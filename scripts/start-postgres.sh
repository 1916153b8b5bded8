#!/usr/bin/env bash
# Starts the machine's PostgreSQL 15 cluster (Debian's packages) if it is not
# running, makes sure the role and database `goalpost_test` exist, and prints
# the URL the PostgreSQL tests read from GOALPOST_TEST_POSTGRES:
#
#   export GOALPOST_TEST_POSTGRES=$(scripts/start-postgres.sh)
#
# Idempotent: a second run finds everything in place and prints the same URL.
# With an argument, that schema is made anew (dropped if it was there) and
# the URL selects it, so one run's tables never meet another's:
#
#   scripts/start-postgres.sh suite_run   # postgres://…?options=-c%20search_path%3Dsuite_run
# Needs root (or the postgres user) on a machine with postgresql-15 installed;
# it installs nothing itself unless INSTALL_POSTGRES=1 (CI sets it).
set -euo pipefail

version=15
cluster=main
name=goalpost_test
# A password over TCP on loopback: the host connects like a deployment would,
# not through the Unix socket's peer authentication.
password=goalpost_test

if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ ! -d "/usr/lib/postgresql/$version" ]; then
  if [ "${INSTALL_POSTGRES:-0}" = 1 ]; then
    echo "installing postgresql-$version" >&2
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y "postgresql-$version" >&2
  else
    echo "PostgreSQL $version is not installed (apt-get install postgresql-$version, or INSTALL_POSTGRES=1)" >&2
    exit 1
  fi
fi

if ! pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c' | grep -q .; then
  echo "creating cluster $version/$cluster" >&2
  pg_createcluster "$version" "$cluster" >&2
fi
if ! pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c && $4 == "online"' | grep -q .; then
  echo "starting cluster $version/$cluster" >&2
  pg_ctlcluster "$version" "$cluster" start >&2
fi
port=$(pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c {print $3}')

# Ready means it answers a query, polled with a deadline rather than slept for.
deadline=$((SECONDS + 30))
until su postgres -c "psql -p $port -qtAc 'SELECT 1'" >/dev/null 2>&1; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "PostgreSQL $version/$cluster did not answer within 30 s" >&2
    exit 1
  fi
  sleep 0.2
done

psql_admin() { su postgres -c "psql -p $port -v ON_ERROR_STOP=1 -qtAc \"$1\""; }
if [ "$(psql_admin "SELECT 1 FROM pg_roles WHERE rolname = '$name'")" != 1 ]; then
  psql_admin "CREATE ROLE $name LOGIN PASSWORD '$password'" >&2
fi
if [ "$(psql_admin "SELECT 1 FROM pg_database WHERE datname = '$name'")" != 1 ]; then
  psql_admin "CREATE DATABASE $name OWNER $name" >&2
fi
# The tests make a schema each (CREATE on the database) so they never see
# one another's tables.
psql_admin "GRANT CREATE ON DATABASE $name TO $name" >&2

url="postgres://$name:$password@127.0.0.1:$port/$name"
if [ $# -ge 1 ]; then
  schema=$1
  case "$schema" in
    *[!a-z0-9_]*|'') echo "a schema name is lower-case letters, digits and _" >&2; exit 1 ;;
  esac
  PGOPTIONS=--client-min-messages=warning PGPASSWORD=$password psql -h 127.0.0.1 -p "$port" -U "$name" -d "$name" -v ON_ERROR_STOP=1 -qtAc \
    "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema" >&2
  url="$url?options=-c%20search_path%3D$schema"
fi
echo "$url"
