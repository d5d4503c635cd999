#!/bin/sh
# Entrypoint of berth-test/erp: the same dispatch as the official image's entrypoint, so
# the agent can pass server options (`odoo -d db ...`, `-- --workers 2`) or run any other
# command in the image. Waiting for PostgreSQL (30 s) happens in the server itself.
set -eu

case "${1:-odoo}" in
-- | odoo)
	[ $# -gt 0 ] && shift
	exec /usr/bin/odoo "$@"
	;;
-*)
	exec /usr/bin/odoo "$@"
	;;
*)
	exec "$@"
	;;
esac
