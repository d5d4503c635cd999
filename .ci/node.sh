# shellcheck shell=bash
# Sourced by .ci/run, or by a developer (`source .ci/node.sh`): puts Node $BERTH_NODE_VERSION
# first on PATH and points node-gyp at its headers, so `npm ci` builds native modules
# (ssh2's optional cpu-features) for that Node without reaching nodejs.org.
#
# Node comes from the npm registry's node-linux-<arch> package (the official build: bin/node,
# include/node), fetched once with `npm pack` by whatever npm is on PATH (Node 20's works) into
# $BERTH_NODE_CACHE, outside the repository. The same package the agent's executable ships
# on (installers/build/build-agent.ts, NODE_LTS_VERSION).

BERTH_NODE_VERSION=${BERTH_NODE_VERSION:-24.21.0}
BERTH_NODE_CACHE=${BERTH_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/berth/node}

berth_node_install() {
	local arch dir tarball
	case "$(uname -m)" in
	x86_64) arch=x64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) echo "node.sh: no node-linux package for $(uname -m)" >&2; return 1 ;;
	esac
	dir="$BERTH_NODE_CACHE/node-linux-$arch-$BERTH_NODE_VERSION"
	if [ ! -x "$dir/package/bin/node" ] || [ ! -f "$dir/package/include/node/node.h" ]; then
		echo "node.sh: fetching node-linux-$arch@$BERTH_NODE_VERSION from the npm registry" >&2
		rm -rf "$dir" "$dir.tmp"
		mkdir -p "$dir.tmp"
		tarball=$(cd "$dir.tmp" && npm pack "node-linux-$arch@$BERTH_NODE_VERSION" --silent --no-audit --no-fund | tail -n1)
		tar -xzf "$dir.tmp/$tarball" -C "$dir.tmp"
		rm -f "$dir.tmp/$tarball"
		if [ ! -x "$dir.tmp/package/bin/node" ] || [ ! -f "$dir.tmp/package/include/node/node.h" ]; then
			echo "node.sh: node-linux-$arch@$BERTH_NODE_VERSION has no bin/node or include/node" >&2
			return 1
		fi
		mv "$dir.tmp" "$dir"
	fi
	BERTH_NODE_DIR="$dir/package"
	berth_node_headers "$dir"
}

# Node 24's node::ObjectWrap (header-only, compiled into the addon) adds an environment cleanup
# hook per object and removes it in its destructor, which a GC with no context entered runs:
# node::RemoveEnvironmentCleanupHook then aborts the process ("Assertion failed: (env) !=
# nullptr" in Statement::~Statement, better-sqlite3 12 on Node >= 24.19; nodejs/node#65446).
# node-gyp compiles against a copy of the headers whose ObjectWrap neither adds nor removes
# the hook, as before, the same patch the agent's executable is built with
# (installers/build/native-addon.ts, patchedNodeDir).
berth_node_headers() {
	local dir=$1 out=$1/nodedir entry
	if [ ! -f "$out/include/node/node_object_wrap.h" ]; then
		rm -rf "$out" "$out.tmp"
		mkdir -p "$out.tmp/include/node"
		for entry in "$dir/package/include/node/"*; do
			[ "${entry##*/}" = node_object_wrap.h ] || ln -s "$entry" "$out.tmp/include/node/"
		done
		perl -0pe 's/void (Add|Remove)CleanupHook\(\) \{[^}]*\}/void $1CleanupHook() {}/g' \
			"$dir/package/include/node/node_object_wrap.h" >"$out.tmp/include/node/node_object_wrap.h"
		if grep -q 'AddEnvironmentCleanupHook' "$dir/package/include/node/node_object_wrap.h" &&
			grep -q 'EnvironmentCleanupHook(' "$out.tmp/include/node/node_object_wrap.h"; then
			echo "node.sh: node_object_wrap.h changed shape: cannot remove its cleanup hooks" >&2
			return 1
		fi
		mv "$out.tmp" "$out"
	fi
	BERTH_NODE_HEADERS="$out"
}

berth_node_install || return 1 2>/dev/null || exit 1
# The package ships node only: npm and npx stay those on PATH, run by this node (npm 11
# supports Node 20, 22 and 24), since their scripts start with `#!/usr/bin/env node`.
export PATH="$BERTH_NODE_DIR/bin:$PATH"
# node-gyp (inside npm) compiles against these headers instead of downloading nodejs.org's
# tarball; the environment beats any nodedir in an .npmrc.
export npm_config_nodedir="$BERTH_NODE_HEADERS"
hash -r
