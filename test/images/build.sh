#!/usr/bin/env bash
# Builds Berth's Docker test images from this machine's own files, with `docker import`:
# no image registry can be reached, so nothing can be pulled.
#
#   berth-test/postgres:15   Debian's PostgreSQL 15 + busybox, official-image entrypoint
#   berth-test/erp:16.0      a small stand-in for the ERP server (erp/odoo.c) + busybox, one
#   berth-test/erp:17.0      image per series: each sets ODOO_VERSION and has the official
#   berth-test/erp:18.0      image's user (odoo 101:101 in 16.0/17.0; 100:101 in 18.0/19.0,
#   berth-test/erp:19.0      Ubuntu noble images, odoo/odoo issue 183106), with the standard
#                            add-ons of erp/addons (SQL and manifests) per series
#   berth-test/caddy:2       Debian's Caddy + busybox, laid out as the official caddy:2 image
#
# Usage: test/images/build.sh [--force] [--quiet]
# An image is skipped when its tag exists and was built from the same inputs (label
# berth.inputs); --force rebuilds it anyway. Needs: docker (engine running), busybox-static,
# postgresql-15, libpq-dev, gcc, caddy (.ci/docker-setup.sh installs them).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly here
readonly PG_TAG=berth-test/postgres:15
readonly ERP_REPO=berth-test/erp
# Series, and the uid:gid of user odoo (group odoo) in the official image of that series.
readonly ERP_SERIES=(16.0:101:101 17.0:101:101 18.0:100:101 19.0:100:101)
readonly CADDY_TAG=berth-test/caddy:2
readonly CADDY=/usr/bin/caddy
readonly PG_VERSION=15
readonly PG_LIB=/usr/lib/postgresql/$PG_VERSION
readonly PG_SHARE=/usr/share/postgresql/$PG_VERSION
readonly BUSYBOX=/bin/busybox
# The official images' users, so volume ownership matches what real deployments see.
readonly PG_UID=999

force=0
quiet=0
for arg in "$@"; do
	case $arg in
	--force) force=1 ;;
	--quiet | -q) quiet=1 ;;
	-h | --help)
		sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "build.sh: unknown argument '$arg' (try --help)" >&2
		exit 2
		;;
	esac
done

die() {
	echo "build.sh: $*" >&2
	exit 1
}
say() { if [ "$quiet" = 0 ]; then echo "$*"; fi; }

check_prerequisites() {
	command -v docker >/dev/null || die "docker CLI not found (run .ci/docker-setup.sh)"
	docker info >/dev/null 2>&1 || die "the Docker engine is not reachable (run .ci/docker-setup.sh)"
	# A dynamically linked busybox would need its libraries too; the static one needs nothing.
	if [ ! -x "$BUSYBOX" ] || ldd "$BUSYBOX" >/dev/null 2>&1; then
		die "$BUSYBOX missing or not static (apt-get install busybox-static)"
	fi
	[ -x "$PG_LIB/bin/postgres" ] || die "$PG_LIB/bin/postgres missing (apt-get install postgresql-$PG_VERSION)"
	[ -f /usr/include/postgresql/libpq-fe.h ] || die "libpq headers missing (apt-get install libpq-dev)"
	command -v gcc >/dev/null || die "gcc missing (apt-get install gcc libc6-dev)"
	command -v setpriv >/dev/null || die "setpriv missing (util-linux)"
	[ -x "$CADDY" ] || die "$CADDY missing (apt-get install caddy)"
}

# The hash of everything an image is built from, stored as a label, so that a changed
# builder or source rebuilds the image instead of silently reusing an old one.
inputs_hash() {
	{
		cat "$here/build.sh"
		for f in "$@"; do cat "$f"; done
		"$PG_LIB/bin/postgres" --version
	} | sha256sum | cut -c1-16
}

image_is_current() {
	local tag=$1 hash=$2 label
	label=$(docker image inspect --format '{{ index .Config.Labels "berth.inputs" }}' "$tag" 2>/dev/null) || return 1
	[ "$label" = "$hash" ]
}

# Root file system layout of Debian 12 (merged /usr), so ldd's paths are valid inside.
new_rootfs() {
	local root=$1
	mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,etc,tmp,root,run,var/lib,proc,sys,dev}
	ln -s usr/bin "$root/bin"
	ln -s usr/sbin "$root/sbin"
	ln -s usr/lib "$root/lib"
	ln -s usr/lib64 "$root/lib64"
	ln -s ../run "$root/var/run"
	chmod 1777 "$root/tmp"
	chmod 700 "$root/root"
	cp "$BUSYBOX" "$root/usr/bin/busybox"
	local applet
	for applet in $("$BUSYBOX" --list); do
		[ -e "$root/usr/bin/$applet" ] || ln -s busybox "$root/usr/bin/$applet"
	done
	printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
	printf '/usr/lib/x86_64-linux-gnu\n' >"$root/etc/ld.so.conf"
}

# Copies files to the same paths inside the root, following symlinks.
add_files() {
	local root=$1 f
	shift
	for f in "$@"; do
		mkdir -p "$root$(dirname "$f")"
		# A busybox applet link of the same name would otherwise be followed and busybox overwritten.
		rm -f "$root$f"
		cp -L "$f" "$root$f"
	done
}

# Copies into the root every shared library that FILES (anywhere) load, per ldd.
add_libs_of() {
	local root=$1 out libs lib
	shift
	out=$(ldd "$@" 2>&1) || true
	if grep -q 'not found' <<<"$out"; then
		die "missing shared libraries: $(grep 'not found' <<<"$out" | sort -u | tr -s ' \t\n' ' ')"
	fi
	libs=$(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' <<<"$out" | sort -u)
	for lib in $libs; do
		[ -e "$root$lib" ] || add_files "$root" "$lib"
	done
}

# Copies executables or shared objects to the same paths, with their libraries.
add_with_libs() {
	local root=$1
	shift
	add_files "$root" "$@"
	add_libs_of "$root" "$@"
}

# Packs the root into an image. `docker import` cannot set STOPSIGNAL, so when one is
# given, a metadata-only build on top of the import sets it (no file system copy).
import_rootfs() {
	local root=$1 tag=$2 stopsignal=$3
	shift 3
	local new
	ldconfig -r "$root"
	if [ -z "$stopsignal" ]; then
		new=$(tar -C "$root" --numeric-owner -cf - . | docker import "$@" - "$tag")
	else
		local base
		base=$(tar -C "$root" --numeric-owner -cf - . | docker import "$@" -)
		# The legacy builder needs no BuildKit/buildx, which Debian's docker.io lacks.
		new=$(printf 'FROM %s\nSTOPSIGNAL %s\n' "$base" "$stopsignal" |
			DOCKER_BUILDKIT=0 docker build -q -t "$tag" - 2>/dev/null) ||
			die "docker build (STOPSIGNAL) failed for $tag"
	fi
	[ -n "$new" ] || die "docker import gave no image for $tag"
}

image_id() { docker image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }

# vfs storage keeps a whole copy per image: drop images this build replaced, but only
# those left without any tag (one may have carried another tag too) and unused.
remove_replaced() {
	local old tags
	for old in "$@"; do
		[ -n "$old" ] || continue
		tags=$(docker image inspect --format '{{len .RepoTags}}' "$old" 2>/dev/null) || continue
		if [ "$tags" = 0 ]; then
			docker image rm "$old" >/dev/null 2>&1 || true
		fi
	done
}

build_postgres() {
	local hash=$1 root=$work/postgres
	new_rootfs "$root"
	local bins=(postgres initdb pg_ctl pg_dump pg_dumpall pg_restore psql pg_isready pg_controldata
		createdb dropdb createuser dropuser vacuumdb)
	local paths=() b
	for b in "${bins[@]}"; do paths+=("$PG_LIB/bin/$b"); done
	# Every server module but the JIT (it would pull in LLVM, hundreds of MB).
	local mod modules=()
	for mod in "$PG_LIB"/lib/*.so; do
		case $(basename "$mod") in llvmjit*) continue ;; esac
		modules+=("$mod")
	done
	add_with_libs "$root" "${paths[@]}" "${modules[@]}" "$(command -v setpriv)"

	mkdir -p "$root$PG_SHARE" "$root/usr/share/zoneinfo" "$root/usr/lib/locale"
	tar -C "$PG_SHARE" --exclude=./man -cf - . | tar -C "$root$PG_SHARE" -xf -
	# Debian's PostgreSQL reads the system time zone database; leap-second zones are unused.
	tar -C /usr/share/zoneinfo --exclude=./right -cf - . | tar -C "$root/usr/share/zoneinfo" -xf -
	cp -a /usr/lib/locale/C.utf8 "$root/usr/lib/locale/"
	ln -sf /usr/share/zoneinfo/Etc/UTC "$root/etc/localtime"
	# initdb imports the collations `locale -a` lists; without this it warns and imports none.
	cat >"$root/usr/bin/locale" <<-'EOF'
		#!/bin/sh
		if [ "${1:-}" = -a ]; then printf 'C\nC.utf8\nPOSIX\n'; fi
	EOF
	chmod 755 "$root/usr/bin/locale"

	printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:%s:%s:PostgreSQL administrator:/var/lib/postgresql:/bin/sh\n' \
		"$PG_UID" "$PG_UID" >"$root/etc/passwd"
	printf 'root:x:0:\npostgres:x:%s:\n' "$PG_UID" >"$root/etc/group"
	mkdir -p "$root/var/lib/postgresql/data" "$root/run/postgresql" "$root/docker-entrypoint-initdb.d" \
		"$root/usr/local/bin"
	install -m 755 "$here/postgres/docker-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
	chown -R "$PG_UID:$PG_UID" "$root/var/lib/postgresql" "$root/run/postgresql"
	chmod 1777 "$root/var/lib/postgresql/data"
	chmod 3777 "$root/run/postgresql"

	# SIGINT is a fast shutdown: the official image stops on it too, so `docker stop` does not
	# wait for clients to disconnect and then kill the server.
	import_rootfs "$root" "$PG_TAG" SIGINT \
		--change "ENV PATH=/usr/local/bin:/usr/lib/postgresql/$PG_VERSION/bin:/usr/bin:/bin" \
		--change "ENV PG_MAJOR=$PG_VERSION" \
		--change "ENV PGDATA=/var/lib/postgresql/data" \
		--change "ENV LANG=C.UTF-8" \
		--change "VOLUME /var/lib/postgresql/data" \
		--change "EXPOSE 5432" \
		--change "LABEL berth.inputs=$hash berth.test-image=postgres" \
		--change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
		--change 'CMD ["postgres"]' >/dev/null
}

# Compiles the stand-in once into $work/erp-root (busybox, libraries, the binary); each
# series then gets its own users, ownership, ODOO_VERSION and `docker import`.
prepare_erp_root() {
	local root=$work/erp-root
	new_rootfs "$root"
	local marker_sha1
	# The file store keeps files under their sha1, as Odoo does; odoo.c writes this content.
	marker_sha1=$(printf 'berth stand-in ERP: file store marker\n' | sha1sum | cut -c1-40)
	gcc -O2 -Wall -Wextra -Werror -Wno-format-truncation -DMARKER_SHA1="\"$marker_sha1\"" \
		-I/usr/include/postgresql -o "$work/odoo" "$here/erp/odoo.c" "$here/erp/tests.c" "$here/erp/mail.c" -lpq -lcrypto
	strip "$work/odoo"
	install -m 755 "$work/odoo" "$root/usr/bin/odoo"
	add_libs_of "$root" "$work/odoo"
	mkdir -p "$root/etc/odoo" "$root/var/lib/odoo" "$root/mnt/extra-addons"
	install -m 644 "$here/erp/odoo.conf" "$root/etc/odoo/odoo.conf"
	install -m 755 "$here/erp/entrypoint.sh" "$root/entrypoint.sh"
}

# The standard add-ons of the series (erp/addons/<module>/...) at the official images' path.
# A file named `<name>@<A>` or `<name>@<A>-<B>` (series majors) is appended to `<name>` for
# the series A (to B) only, after the file without a suffix if there is one: per-series
# variants of a module's data/neutralize.sql, or per-series parts of its berth_upgrade.sql.
readonly ERP_STANDARD_ADDONS=/usr/lib/python3/dist-packages/odoo/addons
install_standard_addons() {
	local root=$1 series=$2 major=${2%%.*} src=$here/erp/addons dest f rel name range lo hi
	dest=$root$ERP_STANDARD_ADDONS
	rm -rf "$root/usr/lib/python3"
	mkdir -p "$dest"
	while IFS= read -r f; do
		rel=${f#"$src"/}
		case $rel in *@*) continue ;; esac
		mkdir -p "$dest/$(dirname "$rel")"
		install -m 644 "$f" "$dest/$rel"
	done < <(find "$src" -type f | sort)
	while IFS= read -r f; do
		rel=${f#"$src"/}
		name=${rel%@*}
		range=${rel##*@}
		lo=${range%-*}
		hi=${range#*-}
		[[ $lo =~ ^[0-9]+$ && $hi =~ ^[0-9]+$ ]] || die "erp/addons/$rel: expected <name>@<major> or <name>@<major>-<major>"
		((major >= lo && major <= hi)) || continue
		mkdir -p "$dest/$(dirname "$name")"
		cat "$f" >>"$dest/$name"
		chmod 644 "$dest/$name"
	done < <(find "$src" -type f -name '*@*' | sort)
	find "$root/usr/lib/python3" -type d -exec chmod 755 {} +
}

build_erp() {
	local hash=$1 series=$2 uid=$3 gid=$4 root=$work/erp-root
	install_standard_addons "$root" "$series"
	printf 'root:x:0:0:root:/root:/bin/sh\nodoo:x:%s:%s:Odoo:/var/lib/odoo:/bin/sh\n' "$uid" "$gid" >"$root/etc/passwd"
	printf 'root:x:0:\nodoo:x:%s:\n' "$gid" >"$root/etc/group"
	chown -R "$uid:$gid" "$root/etc/odoo" "$root/var/lib/odoo" "$root/mnt/extra-addons"

	import_rootfs "$root" "$ERP_REPO:$series" "" \
		--change "ENV PATH=/usr/local/bin:/usr/bin:/bin" \
		--change "ENV LANG=C.UTF-8" \
		--change "ENV ODOO_RC=/etc/odoo/odoo.conf" \
		--change "ENV ODOO_VERSION=$series" \
		--change "VOLUME [\"/var/lib/odoo\", \"/mnt/extra-addons\"]" \
		--change "EXPOSE 8069 8072" \
		--change "USER odoo" \
		--change "LABEL berth.inputs=$hash berth.test-image=erp" \
		--change 'ENTRYPOINT ["/entrypoint.sh"]' \
		--change 'CMD ["odoo"]' >/dev/null
}

# What the official caddy:2 image has where Berth's proxy relies on it: caddy on the PATH,
# XDG_DATA_HOME=/data and XDG_CONFIG_HOME=/config as volumes, ports 80 and 443, root.
build_caddy() {
	local hash=$1 root=$work/caddy
	new_rootfs "$root"
	add_with_libs "$root" "$CADDY"
	if [ -f /etc/ssl/certs/ca-certificates.crt ]; then add_files "$root" /etc/ssl/certs/ca-certificates.crt; fi
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\n' >"$root/etc/group"
	mkdir -p "$root/etc/caddy" "$root/config" "$root/data" "$root/srv"
	install -m 644 "$here/caddy/Caddyfile" "$root/etc/caddy/Caddyfile"
	import_rootfs "$root" "$CADDY_TAG" "" \
		--change "ENV PATH=/usr/bin:/bin" \
		--change "ENV XDG_CONFIG_HOME=/config" \
		--change "ENV XDG_DATA_HOME=/data" \
		--change "VOLUME [\"/config\", \"/data\"]" \
		--change "EXPOSE 80 443 2019" \
		--change "WORKDIR /srv" \
		--change "LABEL berth.inputs=$hash berth.test-image=caddy" \
		--change 'CMD ["caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]' >/dev/null
}

check_prerequisites
work=$(mktemp -d /tmp/berth-images.XXXXXX)
trap 'rm -rf "$work"' EXIT

pg_hash=$(inputs_hash "$here/postgres/docker-entrypoint.sh")
if [ "$force" = 0 ] && image_is_current "$PG_TAG" "$pg_hash"; then
	say "$PG_TAG is up to date"
else
	start=$SECONDS
	old=$(image_id "$PG_TAG")
	build_postgres "$pg_hash"
	remove_replaced "$old"
	say "built $PG_TAG in $((SECONDS - start)) s"
fi

mapfile -t erp_addon_files < <(find "$here/erp/addons" -type f | sort)
erp_base_hash=$( { inputs_hash "$here/erp/odoo.c" "$here/erp/tests.c" "$here/erp/mail.c" "$here/erp/entrypoint.sh" "$here/erp/odoo.conf" "${erp_addon_files[@]}"
	printf '%s\n' "${erp_addon_files[@]#"$here"/}"; } | sha256sum | cut -c1-16)
erp_prepared=0
for entry in "${ERP_SERIES[@]}"; do
	IFS=: read -r series uid gid <<<"$entry"
	tag=$ERP_REPO:$series
	hash=$(printf '%s %s %s %s' "$erp_base_hash" "$series" "$uid" "$gid" | sha256sum | cut -c1-16)
	if [ "$force" = 0 ] && image_is_current "$tag" "$hash"; then
		say "$tag is up to date"
		continue
	fi
	start=$SECONDS
	old=$(image_id "$tag")
	if [ "$erp_prepared" = 0 ]; then
		prepare_erp_root
		erp_prepared=1
	fi
	build_erp "$hash" "$series" "$uid" "$gid"
	remove_replaced "$old"
	say "built $tag (odoo $uid:$gid) in $((SECONDS - start)) s"
done

caddy_hash=$(inputs_hash "$here/caddy/Caddyfile" "$CADDY")
if [ "$force" = 0 ] && image_is_current "$CADDY_TAG" "$caddy_hash"; then
	say "$CADDY_TAG is up to date"
else
	start=$SECONDS
	old=$(image_id "$CADDY_TAG")
	build_caddy "$caddy_hash"
	remove_replaced "$old"
	say "built $CADDY_TAG in $((SECONDS - start)) s"
fi
