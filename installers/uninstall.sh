#!/bin/sh
# Removes Berth's agent from this server: stops and removes the service, the executable and
# the agent's user. Leaves alone, unless asked:
#   the agent's state (/var/lib/berth-agent: identity and journal): --purge removes it; the
#     server must then be enrolled again with a new token;
#   the deployments it ran (containers, volumes with their databases and files, networks
#     labelled berth.managed=true): --remove-containers removes them, data included.
#
# Usage: uninstall.sh [--purge] [--remove-containers] [--docker-socket PATH]
# Also run by `berth-agent uninstall [--purge] [--remove-containers]`: as root, from the
# root-owned copy install.sh keeps (it never runs a file the agent's user can write).
set -eu

NAME=berth-agent
AGENT_USER=berth-agent
INSTALL_DIR=/opt/berth-agent
LINK=/usr/local/bin/berth-agent
# Root's own: the helpers, this script's installed copy, and root's berth-agent command.
LIB_DIR=/usr/local/lib/berth-agent
ROOT_CMD=/usr/local/sbin/berth-agent
STATE_DIR=/var/lib/berth-agent
UNIT=/etc/systemd/system/berth-agent.service
ENV_FILE=/etc/default/berth-agent
PID_FILE=/run/berth-agent.pid
LOG_FILE=/var/log/berth-agent.log

purge=0
remove_containers=0
docker_socket=${BERTH_DOCKER_SOCKET:-/var/run/docker.sock}

say() { printf 'berth-agent uninstall: %s\n' "$*"; }
die() {
	printf 'berth-agent uninstall: error: %s\n' "$*" >&2
	exit 1
}

# Running, and not a zombie waiting for an init that does not reap (some containers).
alive() { kill -0 "$1" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

while [ $# -gt 0 ]; do
	case $1 in
	--purge) purge=1; shift ;;
	--remove-containers) remove_containers=1; shift ;;
	--docker-socket) docker_socket=${2:?--docker-socket needs a path}; shift 2 ;;
	-h | --help)
		sed -n '2,11p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//' || true
		exit 0
		;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "run as root (sudo)"

# ---- the service -----------------------------------------------------------------------

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	if systemctl list-unit-files "$NAME.service" >/dev/null 2>&1; then
		systemctl disable --now "$NAME" >/dev/null 2>&1 || true
		say "stopped and disabled the $NAME service"
	fi
fi
if [ -f "$PID_FILE" ]; then
	pid=$(cat "$PID_FILE")
	if [ -n "$pid" ] && alive "$pid"; then
		kill -TERM "$pid"
		i=0
		while alive "$pid" && [ $i -lt 45 ]; do
			i=$((i + 1))
			sleep 1
		done
		if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
		say "stopped the agent (pid $pid)"
	fi
	rm -f "$PID_FILE"
fi
rm -f "$UNIT" "$ENV_FILE"
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then systemctl daemon-reload || true; fi

# ---- the deployments, only when asked ----------------------------------------------------

docker_api() { # METHOD PATH
	curl -fsS --unix-socket "$docker_socket" -X "$1" "http://localhost$2"
}

if [ "$remove_containers" = 1 ]; then
	[ -S "$docker_socket" ] || die "--remove-containers: no Docker socket at $docker_socket"
	filter='%7B%22label%22%3A%5B%22berth.managed%3Dtrue%22%5D%7D'
	if command -v docker >/dev/null 2>&1; then
		ids=$(docker -H "unix://$docker_socket" ps -aq --filter label=berth.managed=true)
		# shellcheck disable=SC2086
		[ -z "$ids" ] || docker -H "unix://$docker_socket" rm -f -v $ids >/dev/null
		ids=$(docker -H "unix://$docker_socket" network ls -q --filter label=berth.managed=true)
		# shellcheck disable=SC2086
		[ -z "$ids" ] || docker -H "unix://$docker_socket" network rm $ids >/dev/null
		ids=$(docker -H "unix://$docker_socket" volume ls -q --filter label=berth.managed=true)
		# shellcheck disable=SC2086
		[ -z "$ids" ] || docker -H "unix://$docker_socket" volume rm -f $ids >/dev/null
	elif command -v curl >/dev/null 2>&1; then
		for id in $(docker_api GET "/containers/json?all=1&filters=$filter" | grep -o '"Id":"[0-9a-f]*"' | cut -d'"' -f4); do
			docker_api DELETE "/containers/$id?force=1&v=1" >/dev/null
		done
		for id in $(docker_api GET "/networks?filters=$filter" | grep -o '"Id":"[0-9a-f]*"' | cut -d'"' -f4); do
			docker_api DELETE "/networks/$id" >/dev/null
		done
		for name in $(docker_api GET "/volumes?filters=$filter" | grep -o '"Name":"[^"]*"' | cut -d'"' -f4); do
			docker_api DELETE "/volumes/$name?force=1" >/dev/null
		done
	else
		die "--remove-containers needs the docker CLI or curl"
	fi
	say "removed Berth's containers, networks and volumes (berth.managed=true)"
else
	say "left Berth's deployments (containers, volumes, networks) in place; --remove-containers removes them"
fi

# ---- files and user --------------------------------------------------------------------

rm -f "$LINK" "$ROOT_CMD"
rm -rf "$INSTALL_DIR" "$LIB_DIR"
rm -f "$LOG_FILE"
if [ "$purge" = 1 ]; then
	rm -rf "$STATE_DIR"
	say "removed the agent's state ($STATE_DIR)"
else
	say "kept the agent's identity and journal in $STATE_DIR (install.sh reuses them; --purge removes them)"
fi
# The user owns the kept state, so it stays with it.
if getent passwd "$AGENT_USER" >/dev/null 2>&1; then
	if [ "$purge" = 1 ]; then
		userdel "$AGENT_USER" >/dev/null 2>&1 || true
		if getent group "$AGENT_USER" >/dev/null 2>&1; then groupdel "$AGENT_USER" >/dev/null 2>&1 || true; fi
	fi
fi
say "done"
