#!/usr/bin/env bash
# Builds berth-test/debian:12, a minimal Debian 12 root file system made with debootstrap
# from this machine's apt mirror and imported with `docker import` (no registry needed):
# the throwaway machine the installer tests (test/installers) run install.sh in.
#
# Usage: test/images/debian.sh [--force] [--quiet]
# Skipped when the tag exists and was built from the same inputs (label berth.inputs).
# Needs: root, docker (engine running), debootstrap (.ci/docker-setup.sh installs it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly here
readonly TAG=berth-test/debian:12
readonly SUITE=bookworm
# What install.sh needs on a customer's machine (curl or wget, sha256sum, useradd), plus
# systemd for `systemd-analyze verify` of the unit (it does not run as PID 1 in a container).
readonly INCLUDE=curl,ca-certificates,systemd,procps

force=0
quiet=0
for arg in "$@"; do
	case $arg in
	--force) force=1 ;;
	--quiet | -q) quiet=1 ;;
	*)
		echo "debian.sh: unknown argument '$arg'" >&2
		exit 2
		;;
	esac
done
say() { if [ "$quiet" = 0 ]; then echo "$*"; fi; }
die() {
	echo "debian.sh: $*" >&2
	exit 1
}

mirror() {
	# The first Debian mirror apt is configured with (deb822 or one-line format).
	local m
	m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n 1)
	[ -n "$m" ] || m=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' | grep -v security | head -n 1)
	echo "${m:-http://deb.debian.org/debian}"
}

command -v docker >/dev/null || die "docker CLI not found (run .ci/docker-setup.sh)"
docker info >/dev/null 2>&1 || die "the Docker engine is not reachable (run .ci/docker-setup.sh)"
command -v debootstrap >/dev/null || die "debootstrap missing (apt-get install debootstrap)"
[ "$(id -u)" = 0 ] || die "debootstrap needs root"

hash=$({
	cat "$here/debian.sh"
	echo "$SUITE $INCLUDE"
} | sha256sum | cut -c1-16)
label=$(docker image inspect --format '{{ index .Config.Labels "berth.inputs" }}' "$TAG" 2>/dev/null || true)
if [ "$force" = 0 ] && [ "$label" = "$hash" ]; then
	say "$TAG is up to date"
	exit 0
fi

start=$SECONDS
work=$(mktemp -d /tmp/berth-debian.XXXXXX)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$work/root" "$(mirror)" >"$work/debootstrap.log" 2>&1 ||
	{
		tail -n 30 "$work/debootstrap.log" >&2
		die "debootstrap failed"
	}
# Package lists and caches are of no use in a test machine.
rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
old=$(docker image inspect --format '{{.Id}}' "$TAG" 2>/dev/null || true)
tar -C "$work/root" --numeric-owner -cf - . | docker import \
	--change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
	--change "LABEL berth.inputs=$hash berth.test-image=debian" \
	--change 'CMD ["/bin/bash"]' - "$TAG" >/dev/null
if [ -n "$old" ] && [ "$(docker image inspect --format '{{len .RepoTags}}' "$old" 2>/dev/null)" = 0 ]; then
	docker image rm "$old" >/dev/null 2>&1 || true
fi
say "built $TAG in $((SECONDS - start)) s"
