#!/bin/sh
# Entrypoint of berth-test/erp: what the official image's entrypoint (odoo/docker
# <series>/entrypoint.sh) does, so the agent can pass server options (`odoo -d db ...`,
# `-- --workers 2`), run a subcommand (`odoo neutralize -d db`), or any other command.
#  - PASSWORD_FILE, then HOST/PORT/USER/PASSWORD (the stand-in also reads PGHOST/PGPORT/
#    PGUSER/PGPASSWORD), else db/5432/odoo/odoo;
#  - check_config: for db_host, db_port, db_user, db_password, the value in $ODOO_RC when the
#    file sets it, else the environment's; appended as `--db_host <v> --db_port <v> --db_user
#    <v> --db_password <v>` after the arguments of `odoo ...`, `-- ...` and `-...` (the whole
#    command line, a subcommand's too), except `odoo scaffold`;
#  - any other command runs as given.
# The official entrypoint runs wait-for-psql.py (30 s) before odoo: the stand-in waits itself
# (the server, and `odoo neutralize`). check_config reads a value as the text after `=`,
# trimmed (the official one takes the third space-separated field: the same for `key = value`).
set -eu

if [ -n "${PASSWORD_FILE:-}" ] && [ -r "$PASSWORD_FILE" ]; then
	PASSWORD=$(cat "$PASSWORD_FILE")
fi
: "${HOST:=${PGHOST:-db}}"
: "${PORT:=${PGPORT:-5432}}"
: "${USER:=${PGUSER:-odoo}}"
: "${PASSWORD:=${PGPASSWORD:-odoo}}"
: "${ODOO_RC:=/etc/odoo/odoo.conf}"

# Sets $value to PARAM's value in $ODOO_RC, or leaves it as given.
check_config() {
	if [ -r "$ODOO_RC" ] && grep -q -E "^[[:space:]]*$1[[:space:]]*=" "$ODOO_RC"; then
		value=$(grep -E "^[[:space:]]*$1[[:space:]]*=" "$ODOO_RC" | head -n 1 | sed -e 's/^[^=]*=//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e 's/["\r]//g')
	fi
}

run_odoo() {
	if [ "${1:-}" = scaffold ]; then exec /usr/bin/odoo "$@"; fi
	value=$HOST; check_config db_host; db_host=$value
	value=$PORT; check_config db_port; db_port=$value
	value=$USER; check_config db_user; db_user=$value
	value=$PASSWORD; check_config db_password; db_password=$value
	exec /usr/bin/odoo "$@" --db_host "$db_host" --db_port "$db_port" --db_user "$db_user" --db_password "$db_password"
}

case "${1:-odoo}" in
-- | odoo)
	[ $# -gt 0 ] && shift
	run_odoo "$@"
	;;
-*)
	run_odoo "$@"
	;;
*)
	exec "$@"
	;;
esac
