#!/bin/sh
# Entrypoint of berth-test/postgres:15. It behaves like the official postgres image's
# docker-entrypoint.sh for what Berth uses (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB,
# POSTGRES_INITDB_ARGS, POSTGRES_HOST_AUTH_METHOD, PGDATA, /docker-entrypoint-initdb.d),
# so that the agent's code works unchanged against the official image.
set -eu

PGDATA=${PGDATA:-/var/lib/postgresql/data}
export PGDATA

# `docker run IMAGE -c shared_buffers=64MB` means: postgres with these options.
if [ $# -eq 0 ] || [ "${1#-}" != "$1" ]; then
	set -- postgres "$@"
fi
# Any other command (psql, pg_dump, sh ...) runs as given, like in the official image.
if [ "$1" != postgres ]; then
	exec "$@"
fi

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chmod 700 "$PGDATA"
	# A fresh volume or bind mount is root's: hand it to postgres, which refuses to run as root.
	find "$PGDATA" /var/run/postgresql ! -user postgres -exec chown postgres:postgres '{}' +
	chmod 3777 /var/run/postgresql
	# setpriv execs (no fork), so postgres ends up as PID 1 and gets docker stop's signal.
	# A full path: busybox sh would run its own (reduced) setpriv applet for the bare name.
	exec /usr/bin/setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

log() { echo "berth-postgres: $*" >&2; }

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
	if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
		cat >&2 <<-'EOF'
			Error: Database is uninitialized and superuser password is not specified.
			       You must specify POSTGRES_PASSWORD to a non-empty value for the
			       superuser. For example, "-e POSTGRES_PASSWORD=password" on "docker run".
		EOF
		exit 1
	fi
	user=${POSTGRES_USER:-postgres}
	db=${POSTGRES_DB:-$user}

	pwfile=$(mktemp)
	printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
	# POSTGRES_INITDB_ARGS is split on spaces on purpose, as in the official image.
	# shellcheck disable=SC2086
	initdb --username="$user" --pwfile="$pwfile" ${POSTGRES_INITDB_ARGS:-} >/dev/null
	rm -f "$pwfile"

	printf '\nhost all all all %s\n' "$auth" >>"$PGDATA/pg_hba.conf"
	printf "\nlisten_addresses = '*'\n" >>"$PGDATA/postgresql.conf"

	# Set-up runs on the socket only, so clients polling over TCP wait for the real start.
	pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w -t 60 start >/dev/null
	export PGUSER="$user" PGDATABASE=postgres
	if [ "$db" != postgres ]; then
		psql -X -q -v ON_ERROR_STOP=1 --set db="$db" <<-'EOF'
			CREATE DATABASE :"db";
		EOF
	fi
	for f in /docker-entrypoint-initdb.d/*; do
		[ -e "$f" ] || continue
		case "$f" in
		*.sh)
			log "running $f"
			# shellcheck disable=SC1090 # user-supplied init scripts, sourced as upstream does
			. "$f"
			;;
		*.sql) log "running $f"; psql -X -q -v ON_ERROR_STOP=1 --dbname "$db" -f "$f" ;;
		*.sql.gz) log "running $f"; gunzip -c "$f" | psql -X -q -v ON_ERROR_STOP=1 --dbname "$db" ;;
		*) log "ignoring $f" ;;
		esac
	done
	unset PGUSER PGDATABASE
	pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	log "database cluster initialised (user $user, database $db)"
fi

exec "$@"
