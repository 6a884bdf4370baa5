# common.sh: paths and helpers shared by the scripts in this directory (sourced, not run).

# shellcheck shell=bash

TOP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$TOP_DIR/build}
# The packaged kernel tree and the out-of-tree (O=) kernel build.
TREE_DIR=$BUILD_DIR/linux
KBUILD_OUT=$BUILD_DIR/kernel

die()
{
	echo "${0##*/}: error: $*" >&2
	exit 1
}

note()
{
	echo "${0##*/}: $*" >&2
}

# Fail with the Debian package to install when a command is missing.
need_cmd()
{
	local cmd=$1 pkg=$2

	command -v "$cmd" >/dev/null 2>&1 ||
		die "'$cmd' not found: install the Debian package $pkg (or run 'make deps')"
}

# The kernel tree the scripts work on: the user's KSRC or the packaged one.
kernel_tree()
{
	if [ -n "${KSRC:-}" ]; then
		[ -d "$KSRC" ] || die "KSRC=$KSRC: no such directory"
		(cd "$KSRC" && pwd -P)
	else
		echo "$TREE_DIR"
	fi
}
