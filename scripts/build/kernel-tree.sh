#!/bin/bash
# kernel-tree.sh: obtain a Linux 6.12 git tree and apply patches/series to it with git am.
#
# The tree is Debian's linux-source-6.12, unpacked once into build/linux, or
# KSRC=/path/to/linux, a user's own clean git tree. SOURCE_VERSION=6.1
# TREE_DIR=... PATCH_DIR=patches/6.1 does the same with Debian's
# linux-source-6.1 and the series' backport.

set -eu -o pipefail

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly SOURCE_VERSION=${SOURCE_VERSION:-6.12}
readonly SOURCE_PKG=linux-source-$SOURCE_VERSION
readonly SOURCE_TARBALL=/usr/src/linux-source-$SOURCE_VERSION.tar.xz
readonly APPLIED_REF=refs/kvm-tsc-trace/applied

install_source_pkg()
{
	[ -f "$SOURCE_TARBALL" ] && return 0
	[ "$(id -u)" = 0 ] || die "$SOURCE_TARBALL missing: install the Debian package $SOURCE_PKG"
	note "installing $SOURCE_PKG"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$SOURCE_PKG" >/dev/null ||
		die "apt-get install $SOURCE_PKG failed"
}

# Unpack into a scratch directory and rename it into place, so an interrupted
# run (or a full disk) leaves nothing that a later run would mistake for a tree.
unpack_source_pkg()
{
	local version=$1 tmp=$TREE_DIR.new kver

	note "unpacking $SOURCE_TARBALL ($version) into $TREE_DIR"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	tar -xf "$SOURCE_TARBALL" -C "$tmp" --strip-components=1 ||
		die "cannot unpack $SOURCE_TARBALL (disk full?)"
	kver=$(kernel_version_of "$tmp")
	git -C "$tmp" init -q
	# No automatic repack: git commit would start one of the tree's 92,000
	# loose objects in the background, minutes of a core while kernels build.
	git -C "$tmp" config gc.auto 0
	# -f: Debian's .gitignore ignores everything at the top level.
	git -C "$tmp" add -A -f
	git -C "$tmp" commit -q -m "Linux $kver (Debian $SOURCE_PKG $version)"
	git -C "$tmp" update-ref "$BASE_REF" HEAD
	echo "$version" >"$tmp/.git/kvm-tsc-trace.version"
	rm -rf "$TREE_DIR"
	mv "$tmp" "$TREE_DIR"
}

prepare_packaged_tree()
{
	local version

	install_source_pkg
	version=$(dpkg-query -W -f='${Version}' "$SOURCE_PKG" 2>/dev/null || true)
	[ "$(cat "$TREE_DIR/.git/kvm-tsc-trace.version" 2>/dev/null)" = "$version" ] ||
		{ unpack_source_pkg "$version"; return 0; }
	# Our own tree: an interrupted git am or stray edits are simply discarded.
	[ -d "$(git_path "$TREE_DIR" rebase-apply)" ] && git -C "$TREE_DIR" am --abort
	git -C "$TREE_DIR" diff --quiet HEAD || git -C "$TREE_DIR" reset -q --hard HEAD
}

check_user_tree()
{
	local tree=$1 version

	check_kernel_tree "$tree"
	is_git_tree "$tree" || die "KSRC=$tree is not a git repository: the series is applied with git am"
	check_git_clean "$tree"
	version=$(kernel_version_of "$tree")
	[[ $version == 6.12* ]] || note "warning: KSRC=$tree is Linux $version, the series is written for 6.12"
}

# The base is the commit the series goes on: recorded once, and kept while
# HEAD is still the result of our last application.
record_base()
{
	local tree=$1 head applied

	head=$(git -C "$tree" rev-parse HEAD)
	applied=$(git -C "$tree" rev-parse -q --verify "$APPLIED_REF" || true)
	[ "$head" = "$applied" ] && git -C "$tree" rev-parse -q --verify "$BASE_REF" >/dev/null ||
		git -C "$tree" update-ref "$BASE_REF" "$head"
}

# make runs this when the series changed: start again from the base.
apply_series()
{
	local tree=$1 patch

	git -C "$tree" reset -q --hard "$BASE_REF"
	for patch in $(series_patches); do
		git_am_or_reset "$tree" "$patch" "$BASE_REF"
	done
	git -C "$tree" update-ref "$APPLIED_REF" HEAD
	note "$tree: applied $(series_patches | wc -l) patches on $(git -C "$tree" log -1 --format=%s "$BASE_REF")"
}

main()
{
	local tree

	need_cmd git git
	check_series
	use_default_identity
	tree=$(kernel_tree)
	if [ -n "${KSRC:-}" ]; then
		check_user_tree "$tree"
	else
		prepare_packaged_tree
	fi
	record_base "$tree"
	apply_series "$tree"
}

main "$@"
