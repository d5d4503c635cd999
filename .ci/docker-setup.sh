#!/usr/bin/env bash
# Gives a bare Debian 12 machine (CI, a developer's) a running Docker engine and Berth's
# test images. Idempotent: installs only what is missing, starts dockerd only when `docker
# info` fails, rebuilds an image only when its inputs changed. Quiet unless something fails.
#
# dockerd runs in the background and outlives this script, without iptables (so containers
# get no route out either) and with overlay2 storage where the kernel mounts overlayfs on
# Docker's root directory, else vfs ($BERTH_DOCKER_STORAGE_DRIVER chooses); its log is
# $BERTH_DOCKERD_LOG. vfs copies a whole image for every container and every build step:
# measured here, a container of the 85 MB PostgreSQL image took 1.5-4 s to create under vfs
# and 0.07-0.8 s under overlay2, a `docker run` of the 151 MB Debian image 11.7 s against 1.1 s.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly repo
readonly DOCKERD_LOG=${BERTH_DOCKERD_LOG:-/tmp/berth-dockerd.log}
readonly APT_LOG=/tmp/berth-docker-setup-apt.log
readonly BUILD_LOG=/tmp/berth-images-build.log
readonly DOCKER_WAIT_SECONDS=${BERTH_DOCKER_WAIT_SECONDS:-90}
# docker.io: engine and CLI; busybox-static: the images' shell and tools; postgresql-15,
# libpq-dev, gcc, binutils (strip), util-linux (setpriv): what the images are built from
# (gcc also compiles the agent executable's page-out addon). debootstrap: the Debian machine
# the installer tests run install.sh in; shellcheck: those tests lint the installers; g++,
# make, python3: node-gyp compiling native modules under Node 24 (ssh2's cpu-features);
# g++-aarch64-linux-gnu (with its gcc), qemu-user-static: the arm64 executable cross-built
# here and run under qemu in its test; chromium: the dashboard's browser tests
# drive it with playwright-core (fonts-dejavu-core so its screenshots have readable text);
# caddy: the reverse proxy's test image is built from Debian's binary; pebble (with
# pebble-challtestsrv) and openssl: the ACME server, DNS and certificates of the proxy tests;
# openssh-server (sshd) and python3-venv: the private Git host and the Python layer of the
# add-on repository tests; zsh and fish (bash is there): the CLI's completion scripts are
# tested in each shell; bsdutils (script): the CLI's terminal tests run it under a pseudo-terminal;
# haproxy: the failover drill's load balancer in front of three replicas; faketime (libfaketime):
# the drill's agent with a skewed clock; dnsmasq-base (the binary only, no system daemon): the
# real DNS server the domain verification tests answer TXT, A and CNAME records from.
readonly PACKAGES=(docker.io busybox-static postgresql-15 postgresql-client-15 libpq-dev gcc libc6-dev
	binutils util-linux debootstrap shellcheck g++ make python3 g++-aarch64-linux-gnu qemu-user-static chromium fonts-dejavu-core
	caddy pebble openssl openssh-server python3-venv zsh fish bsdutils haproxy faketime dnsmasq-base)

die() {
	echo "docker-setup: $*" >&2
	exit 1
}

installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

install_packages() {
	local missing=() p
	for p in "${PACKAGES[@]}"; do
		# An engine that already answers (Docker CE, say) needs no docker.io beside it.
		if [ "$p" = docker.io ] && docker info >/dev/null 2>&1; then continue; fi
		installed "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages (${missing[*]}) and not root to install them"
	# Only the server binaries are wanted: no 'main' cluster of the host's own on port 5432,
	# which could collide with the PostgreSQL the other tests start.
	if ! installed postgresql-common; then
		mkdir -p /etc/postgresql-common/createcluster.d
		echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/berth-no-main-cluster.conf
	fi
	if ! {
		apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
	} >"$APT_LOG" 2>&1; then
		tail -n 30 "$APT_LOG" >&2
		die "apt-get install ${missing[*]} failed (full log: $APT_LOG)"
	fi
}

dockerd_running() {
	local pid
	pid=$(cat /var/run/docker.pid 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# overlay2 where an overlay mount works on the filesystem holding Docker's root (ext4, xfs),
# vfs elsewhere (an overlayfs root, a kernel without it).
storage_driver() {
	if [ -n "${BERTH_DOCKER_STORAGE_DRIVER:-}" ]; then
		echo "$BERTH_DOCKER_STORAGE_DRIVER"
		return
	fi
	local root=/var/lib/docker probe
	mkdir -p "$root"
	probe=$(mktemp -d "$root/.overlay-probe.XXXXXX")
	mkdir -p "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
	if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" "$probe/merged" 2>/dev/null; then
		umount "$probe/merged"
		echo overlay2
	else
		echo vfs
	fi
	rm -rf "$probe"
}

start_docker() {
	docker info >/dev/null 2>&1 && return 0
	if ! dockerd_running; then
		[ "$(id -u)" = 0 ] || die "the Docker engine is not running and starting it needs root"
		# setsid: the engine must not die with the shell or the CI step that started it.
		setsid nohup dockerd --iptables=false --storage-driver="$(storage_driver)" >>"$DOCKERD_LOG" 2>&1 </dev/null &
	fi
	local deadline=$((SECONDS + DOCKER_WAIT_SECONDS))
	until docker info >/dev/null 2>&1; do
		if [ $SECONDS -ge $deadline ]; then
			tail -n 30 "$DOCKERD_LOG" >&2 || true
			die "the Docker engine did not answer within ${DOCKER_WAIT_SECONDS} s (log: $DOCKERD_LOG)"
		fi
		sleep 1
	done
}

build_images() {
	if ! { bash "$repo/test/images/build.sh" --quiet && bash "$repo/test/images/debian.sh" --quiet; } >"$BUILD_LOG" 2>&1; then
		tail -n 40 "$BUILD_LOG" >&2
		die "building the test images failed (full log: $BUILD_LOG)"
	fi
}

install_packages
start_docker
build_images
