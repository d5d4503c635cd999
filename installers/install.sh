#!/bin/sh
# Installs (or upgrades) Berth's agent on this server.
#
#   curl -fsSL https://<control-plane>/install.sh | sudo sh -s -- --token <token>
#
# Options:
#   --token TOKEN        one-time enrolment token (needed on the first install only)
#   --url URL            the control plane (default: the one this script was fetched from);
#                        https://, or http:// to this machine only (127.0.0.1, localhost, ::1)
#   --key BASE64         the control plane's release-signing key (the dashboard's install
#                        command carries it): the executable must match a release manifest
#                        signed with it, and the enrolment must pin it
#   --binary FILE        install this executable instead of downloading it
#   --sha256 HEX         expected SHA-256 of the executable (default: the control plane's
#                        published checksum, or SHA256SUMS beside --binary)
#   --docker-socket PATH Docker engine socket (default /var/run/docker.sock)
#   --insecure           allow http:// to another machine (tests only: anyone on the way
#                        could swap the executable)
#   --reenroll           replace an existing identity (enrol again with --token)
#   --no-start           install and enrol, but do not start the service
#   --connect-timeout S  how long to wait for the agent to connect (default 30; 0: do not wait)
#   --print-unit         print the systemd unit this script installs, and exit
#   -h, --help           this help
#
# Idempotent: running it again upgrades the executable in place and keeps the server's
# identity (/var/lib/berth-agent) and the events it has not sent yet.
set -eu

# Filled in by the control plane that serves this script.
# Single quotes: the control plane only fills in a plain http(s)://host[:port] anyway.
DEFAULT_URL='@BERTH_CONTROL_PLANE_URL@'


NAME=berth-agent
AGENT_USER=berth-agent
# The agent's user owns INSTALL_DIR and its executable: the agent replaces the file on a
# self-update, and its page-out needs the file to be its own. So root never runs a file
# from there nor writes into it: what happens there happens as that user (as_agent), and
# what root runs lives in LIB_DIR and ROOT_CMD, owned by root.
INSTALL_DIR=/opt/berth-agent
BIN="$INSTALL_DIR/berth-agent"
LINK=/usr/local/bin/berth-agent
LIB_DIR=/usr/local/lib/berth-agent
# Root's `berth-agent`: /usr/local/sbin comes before /usr/local/bin in root's PATH and sudo's.
ROOT_CMD=/usr/local/sbin/berth-agent
# The release-signing key the last --key install verified (root's: a re-install without --key
# checks against it, never against the keys in the agent's own, agent-writable, identity).
RELEASE_KEY="$LIB_DIR/release-key"
STATE_DIR=/var/lib/berth-agent
UNIT=/etc/systemd/system/berth-agent.service
ENV_FILE=/etc/default/berth-agent
PID_FILE=/run/berth-agent.pid
LOG_FILE=/var/log/berth-agent.log

url=""
token="${BERTH_TOKEN:-}"
binary=""
sha256=""
key=""
docker_socket=/var/run/docker.sock
insecure=0
reenroll=0
start=1
connect_timeout=30

say() { printf 'berth-agent install: %s\n' "$*"; }
die() {
	printf 'berth-agent install: error: %s\n' "$*" >&2
	exit 1
}

usage() { sed -n '2,28p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//' || true; }

unit_file() {
	cat <<EOF
[Unit]
Description=Berth agent: runs the control plane's signed commands with Docker
After=network-online.target docker.service
Wants=network-online.target
StartLimitIntervalSec=600
StartLimitBurst=20

[Service]
Type=simple
User=$AGENT_USER
Group=$AGENT_USER
Environment=BERTH_STATE_DIR=$STATE_DIR
EnvironmentFile=-$ENV_FILE
# Rolls back a self-update whose executable did not start (see update-guard). Like every
# Exec line here it runs as $AGENT_USER (no "+" prefix): nothing in this unit runs as root.
ExecStartPre=$LIB_DIR/update-guard
ExecStart=$BIN run
Restart=on-failure
RestartSec=5
# 2: bad configuration; restarting cannot fix it.
RestartPreventExitStatus=2
TimeoutStopSec=45
UMask=0077
# Hardening: the agent needs its state, its own executable (self-update), the Docker
# socket and the network; nothing else.
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=$STATE_DIR $INSTALL_DIR
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
SystemCallArchitectures=native
# Deployments bind-mount data directories from the state directory that must belong to the
# ERP's user (uid 101): the agent needs to chown them and manage files it no longer owns.
# Nothing more: no other capability can be gained (the Docker group is the real power).
CapabilityBoundingSet=CAP_CHOWN CAP_FOWNER CAP_DAC_OVERRIDE
AmbientCapabilities=CAP_CHOWN CAP_FOWNER CAP_DAC_OVERRIDE

[Install]
WantedBy=multi-user.target
EOF
}

# Runs before every start: a self-update leaves update-pending in the state directory and
# the agent deletes it once its link is up; a new executable that failed to get there three
# times is replaced by the previous one.
update_guard() {
	cat <<EOF
#!/bin/sh
set -eu
marker="\${BERTH_STATE_DIR:-$STATE_DIR}/update-pending"
[ -f "\$marker" ] || exit 0
attempts=\$(sed -n 's/^attempts=//p' "\$marker")
attempts=\${attempts:-0}
if [ "\$attempts" -ge 3 ] && [ -f "$BIN.previous" ]; then
	mv -f "$BIN.previous" "$BIN"
	rm -f "\$marker"
	echo "berth-agent: the updated executable did not start 3 times: rolled back to the previous one" >&2
	exit 0
fi
sed "s/^attempts=.*/attempts=\$((attempts + 1))/" "\$marker" >"\$marker.tmp"
grep -q '^attempts=' "\$marker.tmp" || echo "attempts=\$((attempts + 1))" >>"\$marker.tmp"
mv -f "\$marker.tmp" "\$marker"
EOF
}

# Without systemd (a container, an init without units): restarts the agent on failure as
# the unit would, and runs the update guard before each start.
supervisor() {
	cat <<EOF
#!/bin/sh
child=""
trap 'if [ -n "\$child" ]; then kill -TERM "\$child" 2>/dev/null; wait "\$child"; fi; exit 0' TERM INT
while :; do
	$LIB_DIR/update-guard || true
	$BIN run &
	child=\$!
	wait "\$child" && rc=0 || rc=\$?
	child=""
	case \$rc in 0 | 2) exit "\$rc" ;; esac
	sleep 5
done
EOF
}

# Root's berth-agent (ROOT_CMD). Root never runs the agent's executable, which its user can
# replace: `uninstall` runs the root-owned copy of the uninstaller the executable carries,
# every other command runs as the agent's user. Anyone else runs the executable as themselves.
root_command() {
	cat <<EOF
#!/bin/sh
# Root's berth-agent, written by install.sh. $BIN belongs to
# $AGENT_USER, who can replace it, so root never runs it: "berth-agent uninstall" runs
# $LIB_DIR/uninstall.sh, any other command runs as $AGENT_USER.
set -eu
[ "\$(id -u)" = 0 ] || exec "$BIN" "\$@"
command=""
value=0
for arg; do
	if [ "\$value" = 1 ]; then value=0; continue; fi
	case \$arg in
	--url | --token | --state-dir) value=1 ;;
	-*) ;;
	*) command=\$arg; break ;;
	esac
done
if [ "\$command" = uninstall ]; then
	n=\$#
	for arg; do [ "\$arg" = uninstall ] || set -- "\$@" "\$arg"; done
	shift "\$n"
	exec /bin/sh "$LIB_DIR/uninstall.sh" "\$@"
fi
exec runuser -u "$AGENT_USER" -- "$BIN" "\$@"
EOF
}

while [ $# -gt 0 ]; do
	case $1 in
	--token) token=${2:?--token needs a value}; shift 2 ;;
	--url) url=${2:?--url needs a value}; shift 2 ;;
	--binary) binary=${2:?--binary needs a file}; shift 2 ;;
	--sha256) sha256=${2:?--sha256 needs a value}; shift 2 ;;
	--key) key=${2:?--key needs a value}; shift 2 ;;
	--docker-socket) docker_socket=${2:?--docker-socket needs a path}; shift 2 ;;
	--insecure) insecure=1; shift ;;
	--reenroll) reenroll=1; shift ;;
	--no-start) start=0; shift ;;
	--connect-timeout) connect_timeout=${2:?--connect-timeout needs seconds}; shift 2 ;;
	--print-unit) unit_file; exit 0 ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
done

[ "$(id -u)" = 0 ] || die "run as root (curl ... | sudo sh -s -- --token <token>)"
if [ -z "$url" ]; then
	case $DEFAULT_URL in @*) ;; *) url=$DEFAULT_URL ;; esac
fi
url=${url%/}

# Plain http only to this machine: on any other path a network in between could read the
# token and swap the executable.
is_loopback() { # HOST[:PORT]
	case $1 in
	\[::1\] | \[::1\]:*) return 0 ;;
	*:*[!0-9]*) return 1 ;;
	esac
	case ${1%:*} in
	localhost) return 0 ;;
	127.*) case ${1%:*} in *[!0-9.]* | *..* | *.) return 1 ;; *) return 0 ;; esac ;;
	*) return 1 ;;
	esac
}
check_url() { # URL
	case $1 in
	*[!A-Za-z0-9.:/_%[\]-]*) die "--url $1: not a plain http(s)://host[:port] URL" ;;
	https://?*) ;;
	http://?*)
		hostport=${1#http://}
		is_loopback "${hostport%%/*}" || [ "$insecure" = 1 ] ||
			die "refusing to download from $1: plain http:// can be read and altered on the way; use https:// (http:// is allowed to 127.0.0.1, localhost and ::1 only)"
		;;
	*) die "--url $1: expected https://<control-plane>" ;;
	esac
}
[ -z "$url" ] || check_url "$url"
case $key in
"") ;;
*[!A-Za-z0-9+/=]*) die "--key: expected the base64 Ed25519 public key the dashboard shows" ;;
*) [ ${#key} = 44 ] || die "--key: expected the base64 Ed25519 public key the dashboard shows (44 characters)" ;;
esac

case $(uname -m) in
x86_64 | amd64) arch=x64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "unsupported architecture $(uname -m): the agent is built for x86_64 and aarch64" ;;
esac
[ "$(uname -s)" = Linux ] || die "the agent runs on Linux only"

fetch() { # URL FILE
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 3 -o "$2" "$1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1"
	else
		die "neither curl nor wget is installed: install one, or pass --binary FILE"
	fi
}

check_docker() {
	if [ ! -S "$docker_socket" ]; then
		if command -v docker >/dev/null 2>&1 || command -v dockerd >/dev/null 2>&1; then
			die "Docker is installed but not running (no socket at $docker_socket): start it (systemctl start docker) and run this again"
		fi
		die "Docker is not installed (no socket at $docker_socket): install it first (Debian/Ubuntu: apt-get install docker.io), then run this again"
	fi
	if command -v docker >/dev/null 2>&1; then
		docker -H "unix://$docker_socket" info >/dev/null 2>&1 ||
			die "Docker does not answer on $docker_socket: is the engine running? (systemctl status docker)"
	elif command -v curl >/dev/null 2>&1; then
		[ "$(curl -fsS --max-time 10 --unix-socket "$docker_socket" http://localhost/_ping 2>/dev/null)" = OK ] ||
			die "Docker does not answer on $docker_socket: is the engine running? (systemctl status docker)"
	fi
}

# Running, and not a zombie waiting for an init that does not reap (some containers).
alive() { kill -0 "$1" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

have_systemd() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

# Runs a command as the agent's user: everything that touches INSTALL_DIR or runs its files.
as_agent() { runuser -u "$AGENT_USER" -- env BERTH_STATE_DIR="$STATE_DIR" BERTH_DOCKER_SOCKET="$docker_socket" "$@"; }

ensure_user() {
	if ! getent group "$AGENT_USER" >/dev/null 2>&1; then groupadd --system "$AGENT_USER"; fi
	if ! getent passwd "$AGENT_USER" >/dev/null 2>&1; then
		useradd --system --gid "$AGENT_USER" --home-dir "$STATE_DIR" --no-create-home \
			--shell /usr/sbin/nologin --comment "Berth agent" "$AGENT_USER"
	fi
	# The agent reaches Docker through its socket's group: "docker" on a normal install.
	sock_gid=$(stat -c %g "$docker_socket")
	if ! getent group docker >/dev/null 2>&1; then
		if getent group "$sock_gid" >/dev/null 2>&1; then groupadd --system docker; else groupadd --system --gid "$sock_gid" docker; fi
	fi
	usermod -a -G docker "$AGENT_USER"
	sock_group=$(getent group "$sock_gid" | cut -d: -f1)
	if [ -n "$sock_group" ] && [ "$sock_group" != docker ] && [ "$sock_gid" != 0 ]; then
		usermod -a -G "$sock_group" "$AGENT_USER"
	elif [ "$sock_gid" = 0 ]; then
		say "warning: $docker_socket belongs to group root, so the agent's user cannot use it; make it group docker (dockerd -G docker)"
	fi
}

stop_agent() {
	if have_systemd; then
		if systemctl is-active --quiet "$NAME" 2>/dev/null; then
			say "stopping the running agent"
			systemctl stop "$NAME"
		fi
	elif [ -f "$PID_FILE" ]; then
		pid=$(cat "$PID_FILE")
		if [ -n "$pid" ] && alive "$pid"; then
			say "stopping the running agent (pid $pid)"
			kill -TERM "$pid"
			i=0
			while alive "$pid"; do
				i=$((i + 1))
				[ $i -le 45 ] || die "the agent (pid $pid) did not stop within 45 s"
				sleep 1
			done
		fi
		rm -f "$PID_FILE"
	fi
}

start_agent() {
	if have_systemd; then
		systemctl daemon-reload
		systemctl enable "$NAME" >/dev/null 2>&1
		systemctl restart "$NAME"
		say "started the $NAME service (systemctl status $NAME; journalctl -u $NAME)"
	else
		say "systemd is not running here: starting the agent under a small supervisor instead (log: $LOG_FILE; it will not start at boot)"
		touch "$LOG_FILE"
		chown "$AGENT_USER:$AGENT_USER" "$LOG_FILE"
		chmod 0640 "$LOG_FILE"
		(
			cd /
			umask 077
			BERTH_STATE_DIR=$STATE_DIR
			export BERTH_STATE_DIR
			if [ -f "$ENV_FILE" ]; then
				set -a
				# shellcheck disable=SC1090
				. "$ENV_FILE"
				set +a
			fi
			HOME=$STATE_DIR
			export HOME
			# setpriv execs (no process in between), so the pid file names the supervisor.
			exec setsid setpriv --reuid "$AGENT_USER" --regid "$AGENT_USER" --init-groups \
				"$LIB_DIR/supervise" >>"$LOG_FILE" 2>&1 </dev/null
		) &
		echo $! >"$PID_FILE"
	fi
}

# ---- the executable ------------------------------------------------------------------

# The public keys this agent pinned at enrolment (base64, one a line), if it is enrolled.
pinned_keys() {
	[ -f "$STATE_DIR/identity.json" ] || return 0
	# shellcheck disable=SC2020
	tr ',{}' '\n\n\n' <"$STATE_DIR/identity.json" | sed -n 's/^ *"public_key": *"\([A-Za-z0-9+/=]*\)".*/\1/p'
}

# Checks the signed release manifest (GET /agent/v1/release) against the keys given (base64
# Ed25519, one a line), then sets sha256 and size to what it says for this architecture.
verify_release() { # FILE KEYS
	command -v openssl >/dev/null 2>&1 || die "openssl is needed to verify the release signature (apt-get install openssl)"
	[ "$(sed -n 1p "$1")" = "berth-agent-release 1" ] || die "the control plane's release manifest is not one: refusing it"
	sed '$d' "$1" >"$work/release.body"
	set -- "$1" "$2" "$(sed -n '$p' "$1")"
	case $3 in "signature ed25519 "*) ;; *) die "the release manifest is not signed: refusing it" ;; esac
	printf '%s' "${3##* }" | base64 -d >"$work/release.sig" 2>/dev/null || die "the release manifest's signature is not base64: refusing it"
	for k in $2; do
		printf -- '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA%s\n-----END PUBLIC KEY-----\n' "$k" >"$work/key.pem"
		if openssl pkeyutl -verify -pubin -inkey "$work/key.pem" -rawin -in "$work/release.body" -sigfile "$work/release.sig" >/dev/null 2>&1; then
			signed_sha256=$(awk -v a="$arch" '$1 == a { print $2 }' "$work/release.body")
			size=$(awk -v a="$arch" '$1 == a { print $3 }' "$work/release.body")
			[ -n "$signed_sha256" ] || die "the signed release manifest lists no executable for linux-$arch"
			[ -z "$sha256" ] || [ "$sha256" = "$signed_sha256" ] || die "--sha256 $sha256 is not the signed release's $signed_sha256"
			sha256=$signed_sha256
			return 0
		fi
	done
	die "the release manifest's signature does not verify against the control plane's key (--key, or the one the last install with --key kept): refusing the executable (the control plane, or something between it and this machine, is not the one the key belongs to; after a key rotation, pass the dashboard's --key)"
}

check_docker
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
new="$work/berth-agent"
# The size the signed release manifest gives, when one is checked (verify_release).
size=""
if [ -n "$binary" ]; then
	[ -f "$binary" ] || die "--binary $binary: no such file"
	cp "$binary" "$new"
	if [ -z "$sha256" ]; then
		sums="$(dirname "$binary")/SHA256SUMS"
		[ -f "$sums" ] || die "no --sha256 given and no SHA256SUMS beside $binary: cannot verify it"
		sha256=$(awk -v n="$(basename "$binary")" '$2 == n || $2 == "*" n { print $1 }' "$sums")
		[ -n "$sha256" ] || die "$sums lists no checksum for $(basename "$binary")"
	fi
else
	[ -n "$url" ] || die "no control plane URL: pass --url https://<control-plane>"
	say "downloading the agent for linux-$arch from $url"
	fetch "$url/agent/v1/download/$arch" "$new" || die "downloading $url/agent/v1/download/$arch failed"
	# --key, else on a re-install the key the last --key install kept (root's own copy).
	keys=$key
	[ -n "$keys" ] || [ ! -f "$RELEASE_KEY" ] || keys=$(cat "$RELEASE_KEY")
	if [ -n "$keys" ]; then
		fetch "$url/agent/v1/release" "$work/release" || die "fetching the signed release manifest from $url failed"
		verify_release "$work/release" "$keys"
		say "the release manifest is signed by the control plane's key"
	elif [ -z "$sha256" ]; then
		say "warning: no --key: the executable is checked against the checksum the control plane serves, which only TLS vouches for"
		fetch "$url/agent/v1/download/$arch/sha256" "$work/sha256" || die "fetching the checksum from $url failed"
		sha256=$(cut -d' ' -f1 "$work/sha256")
	fi
fi
[ -z "$size" ] || [ "$(wc -c <"$new" | tr -d ' ')" = "$size" ] || die "the executable is not the size the signed release says ($size bytes); nothing was installed"
actual=$(sha256sum "$new" | cut -d' ' -f1)
[ "$actual" = "$sha256" ] || die "checksum mismatch: expected $sha256, got $actual; nothing was installed"
chmod 0755 "$new"
version=$("$new" --version 2>/dev/null) || die "the downloaded executable does not run on this machine"
# The uninstaller root will run comes from this verified copy, never from the installed one.
if ! "$new" uninstall --print-script >"$work/uninstall.sh" 2>/dev/null || [ ! -s "$work/uninstall.sh" ]; then
	die "berth-agent $version cannot print its uninstaller: it is older than this install.sh"
fi
say "verified berth-agent $version (sha256 $actual)"

# ---- user, files, unit -----------------------------------------------------------------

ensure_user
install -d -m 0755 -o "$AGENT_USER" -g "$AGENT_USER" "$INSTALL_DIR"
install -d -m 0700 -o "$AGENT_USER" -g "$AGENT_USER" "$STATE_DIR"
# An older install or a person may have loosened it: the state holds the private key.
chown "$AGENT_USER:$AGENT_USER" "$STATE_DIR"
chmod 0700 "$STATE_DIR"

stop_agent
# In INSTALL_DIR everything happens as the agent's user, who could swap any file there for
# another, or for a symlink to a file only root may write.
if as_agent test -e "$BIN"; then
	if [ "$(as_agent sha256sum "$BIN" | cut -d' ' -f1)" = "$actual" ]; then
		say "berth-agent $version is already installed"
	else
		say "upgrading berth-agent $(as_agent "$BIN" --version 2>/dev/null || echo '?') -> $version"
		as_agent cp -p --remove-destination "$BIN" "$BIN.previous"
	fi
fi
# shellcheck disable=SC2016
as_agent sh -c 'umask 022 && rm -f "$1.new" && cat >"$1.new" && chmod 0755 "$1.new" && mv -f "$1.new" "$1"' sh "$BIN" <"$new"
# Where older installs kept the helpers, which root no longer runs from INSTALL_DIR.
as_agent rm -f "$INSTALL_DIR/update-guard" "$INSTALL_DIR/supervise"

# What root runs, root's own: nobody else may write these files or their directories.
root_file() { # FILE, its text on stdin: mode 0755, swapped in with one rename
	cat >"$1.new" && chmod 0755 "$1.new" && mv -f "$1.new" "$1"
}
install -d -m 0755 -o root -g root "$LIB_DIR"
update_guard | root_file "$LIB_DIR/update-guard"
supervisor | root_file "$LIB_DIR/supervise"
root_file "$LIB_DIR/uninstall.sh" <"$work/uninstall.sh"
mkdir -p "$(dirname "$ROOT_CMD")"
root_command | root_file "$ROOT_CMD"
[ -z "$key" ] || printf '%s\n' "$key" | root_file "$RELEASE_KEY"
[ -z "$key" ] || chmod 0644 "$RELEASE_KEY"
# Everyone's berth-agent is root's command too (it runs the executable itself for anyone but
# root), so no PATH order ever has root run the file the agent's user can replace.
ln -sfn "$ROOT_CMD" "$LINK"

# install.sh owns two settings of the file; an administrator's own lines (the proxy's
# BERTH_PUBLIC_ADDRESSES, say) are kept across re-installs and upgrades.
kept=""
if [ -f "$ENV_FILE" ]; then
	kept=$(grep -v -e '^# Written by install.sh' -e '^BERTH_DOCKER_SOCKET=' -e '^BERTH_INSECURE=' "$ENV_FILE" || true)
fi
{
	echo "# Written by install.sh; read by the berth-agent service. Lines of your own are kept."
	[ "$docker_socket" = /var/run/docker.sock ] || echo "BERTH_DOCKER_SOCKET=$docker_socket"
	[ "$insecure" = 0 ] || echo "BERTH_INSECURE=true"
	[ -z "$kept" ] || printf '%s\n' "$kept"
} >"$ENV_FILE.new"
chmod 0644 "$ENV_FILE.new"
mv -f "$ENV_FILE.new" "$ENV_FILE"
mkdir -p "$(dirname "$UNIT")"
unit_file >"$UNIT"
chmod 0644 "$UNIT"
# The unit's ExecStartPre moved with this version: a restart must not use the old one.
if have_systemd; then systemctl daemon-reload; fi

# ---- enrolment -------------------------------------------------------------------------

if [ -f "$STATE_DIR/identity.json" ] && [ "$reenroll" = 0 ]; then
	say "already enrolled; keeping this server's identity and journal ($STATE_DIR)"
else
	[ -n "$token" ] || die "this server is not enrolled yet: pass --token <token> (from the dashboard)"
	[ -n "$url" ] || die "no control plane URL: pass --url https://<control-plane>"
	force=""
	[ "$reenroll" = 0 ] || force=--force
	insecure_flag=""
	[ "$insecure" = 0 ] || insecure_flag=--insecure
	# The token goes through the environment (runuser keeps it), not the process list.
	# shellcheck disable=SC2086
	(
		BERTH_TOKEN=$token
		export BERTH_TOKEN
		as_agent "$BIN" enroll --url "$url" $force $insecure_flag
	) || die "enrolment failed (see above); nothing was started"
fi

# The operator's --key must be among the keys the agent pinned: else the enrolment answered
# for another control plane than the one the dashboard showed.
if [ -n "$key" ] && ! pinned_keys | grep -qxF "$key"; then
	die "the agent enrolled with a control plane whose signing keys do not include --key: not starting it (rm -rf $STATE_DIR and install again from the dashboard's command)"
fi

if [ "$start" = 1 ]; then
	start_agent
	i=0
	while [ $i -lt "$connect_timeout" ]; do
		if as_agent "$BIN" status --json 2>/dev/null | grep -q '"state": "ready"'; then
			say "connected to the control plane"
			break
		fi
		i=$((i + 1))
		sleep 1
	done
	if [ "$connect_timeout" -gt 0 ] && [ $i -ge "$connect_timeout" ]; then
		say "warning: not connected after $connect_timeout s; check: berth-agent status (and the service's log)"
	fi
fi
say "done: berth-agent $version installed in $INSTALL_DIR, state in $STATE_DIR"
