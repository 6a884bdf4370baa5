# common.sh: paths and helpers shared by the project's bash scripts (sourced, not run).

# shellcheck shell=bash
# shellcheck disable=SC2034 # the paths are read by the scripts that source this file

TOP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$TOP_DIR/build}
# The packaged kernel tree, and the out-of-tree (O=) build of the test
# kernel, as the Makefile lays them out.
TREE_DIR=${TREE_DIR:-$BUILD_DIR/linux}
KBUILD_OUT=$BUILD_DIR/kernel
PATCH_DIR=${PATCH_DIR:-$TOP_DIR/patches}
# Where kernel-tree.sh records the commit the series goes on.
BASE_REF=refs/kvm-tsc-trace/base

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

# Copy PROGRAM (a name or path) into the root directory ROOT at its own path,
# with the shared libraries and the loader ldd lists, for an initramfs.
copy_with_libs()
{
	local prog root=$2 lib

	prog=$(command -v "$1") || die "copy_with_libs: $1 not found"
	ldd "$prog" | grep -q 'not found' && die "copy_with_libs: $prog: $(ldd "$prog" | grep 'not found')"
	mkdir -p "$root${prog%/*}"
	cp -L "$prog" "$root$prog"
	for lib in $(ldd "$prog" | sed -n -e 's/.*=> \(\/[^ ]*\) .*/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root${lib%/*}"
		cp -L "$lib" "$root$lib"
	done
}

# start_root ROOT INIT: ROOT afresh, the root of a test VM's or a nested
# guest's initramfs: busybox, the repository's INIT as /init, trace-cmd,
# and in /lib/ktt the poll helper its /init and payloads source.
start_root()
{
	rm -rf "$1"
	mkdir -p "$1/bin" "$1/lib/ktt"
	cp /bin/busybox "$1/bin/busybox"
	cp "$TOP_DIR/$2" "$1/init"
	copy_with_libs trace-cmd "$1"
	cp "$TOP_DIR/scripts/lib/poll.sh" "$1/lib/ktt/poll.sh"
}

# pack_root ROOT OUT LEVEL: ROOT as an initramfs OUT, gzip -LEVEL.
pack_root()
{
	(cd "$1" && find . | cpio -o -H newc --quiet | gzip "-$3") >"$2"
}

# Copy repository paths into ROOT's /ktt, where 9p would show them.
add_ktt_files()
{
	local root=$1 path

	shift
	for path in "$@"; do
		[ -e "$TOP_DIR/$path" ] || die "$TOP_DIR/$path does not exist"
		mkdir -p "$root/ktt/$(dirname "$path")"
		cp -a "$TOP_DIR/$path" "$root/ktt/$path"
	done
}

# The TSC rate of this machine in kHz, which is also the test VM's: TCG
# runs the guest TSC at the host's rate. The kernel log's, as record-host.sh
# reads it, or the CPU clock of /proc/cpuinfo where the log is closed to us.
host_tsc_khz()
{
	local khz mhz

	khz=$("$TOP_DIR/tools/record-host/record-host.sh" tsc-khz 2>/dev/null) && { echo "$khz"; return 0; }
	mhz=$(sed -n 's/^cpu MHz[[:space:]]*: //p' /proc/cpuinfo | head -1)
	[ -n "$mhz" ] || die "cannot tell the host TSC frequency: give vmtest.sh --tsc-khz"
	awk -v m="$mhz" 'BEGIN { printf "%d\n", m * 1000 + 0.5 }'
}

# Commits made by the scripts and their tests must not depend on the
# user's git identity being set.
use_default_identity()
{
	git config user.email >/dev/null 2>&1 && return 0
	export GIT_AUTHOR_NAME=kvm-tsc-trace GIT_AUTHOR_EMAIL=kvm-tsc-trace@localhost
	export GIT_COMMITTER_NAME=kvm-tsc-trace GIT_COMMITTER_EMAIL=kvm-tsc-trace@localhost
}

# The entries of a series file, without comments and blank lines.
series_entries()
{
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$1"
}

# The patches of $PATCH_DIR/series in order, relative to $PATCH_DIR: an
# entry naming a directory stands for the patches of that directory's own
# series file (the fixes, then the tracing series built on them).
series_patches()
{
	local entry

	for entry in $(series_entries "$PATCH_DIR/series"); do
		if [ -d "$PATCH_DIR/$entry" ]; then
			series_entries "$PATCH_DIR/$entry/series" | sed "s|^|$entry/|"
		else
			echo "$entry"
		fi
	done
}

# The Linux version of the tree DIR, as make kernelversion prints it, from
# the head of its Makefile: no make, which would want the whole tree and,
# under make, warn of a jobserver it is not given.
kernel_version_of()
{
	awk -F ' *= *' '$1 == "VERSION" { v = $2 } $1 == "PATCHLEVEL" { p = $2 } $1 == "SUBLEVEL" { s = $2 }
		$1 == "EXTRAVERSION" { print v "." p "." s $2; found = 1; exit }
		END { exit !found }' "$1/Makefile"
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

# kselftest's KTAP helpers, from the kernel tree: the script tests print
# their results with them, as every other test of the project does.
use_ktap()
{
	local helpers

	helpers=$(kernel_tree)/tools/testing/selftests/kselftest/ktap_helpers.sh
	[ -f "$helpers" ] || die "$helpers missing: run 'make kernel' first"
	# shellcheck source=/dev/null
	. "$helpers"
}

# A tree the series can go on: refused, naming what is missing, otherwise.
check_kernel_tree()
{
	local tree=$1 f

	for f in Makefile arch/x86/kvm/x86.c arch/x86/kvm/trace.h scripts/kconfig/merge_config.sh; do
		[ -f "$tree/$f" ] || die "KSRC=$tree is not a Linux kernel tree: $f is missing"
	done
}

# TREE is the top of its own git repository, not a directory inside another.
is_git_tree()
{
	[ "$(git -C "$1" rev-parse --show-toplevel 2>/dev/null)" = "$1" ]
}

# A path inside the tree's git directory, absolute.
git_path()
{
	local path

	path=$(git -C "$1" rev-parse --git-path "$2")
	case $path in /*) echo "$path" ;; *) echo "$1/$path" ;; esac
}

# Checked before the tree is touched: a broken series changes nothing.
check_series()
{
	local p

	[ -f "$PATCH_DIR/series" ] || die "$PATCH_DIR/series is missing"
	for p in $(series_entries "$PATCH_DIR/series"); do
		[ ! -d "$PATCH_DIR/$p" ] || [ -f "$PATCH_DIR/$p/series" ] ||
			die "$PATCH_DIR/series names the directory $p, which has no series file"
	done
	for p in $(series_patches); do
		[ -f "$PATCH_DIR/$p" ] || die "$PATCH_DIR/series names $p, which is not there"
	done
}

# No git am or rebase in progress, no uncommitted change for git am to mix in.
check_git_clean()
{
	local tree=$1 dir dirty

	for dir in rebase-apply rebase-merge; do
		[ -d "$(git_path "$tree" "$dir")" ] &&
			die "KSRC=$tree has a git am or rebase in progress: finish or abort it first"
	done
	dirty=$(git -C "$tree" status --porcelain --untracked-files=no | head -5)
	[ -z "$dirty" ] ||
		die "KSRC=$tree has uncommitted changes, which git am would mix with the series; commit or stash them:
$dirty"
}

# An option's value in a config: its value, n when "is not set", else unset.
option_value()
{
	local option=$1 config=$2 line

	line=$(grep -m1 -e "^$option=" -e "^# $option is not set" "$config" || true)
	case $line in
	"") echo unset ;;
	\#*) echo n ;;
	*) echo "${line#*=}" ;;
	esac
}

# A silently dropped option (unmet dependency, typo) is an error naming it.
verify_config()
{
	local config=$1 frag line missing=0

	shift
	for frag in "$@"; do
		while read -r line; do
			grep -qxF "$line" "$config" && continue
			echo "${0##*/}: error: $line (from $frag) is not in the final config; got: $(option_value "${line%%=*}" "$config")" >&2
			missing=1
		done < <(grep -E '^CONFIG_[A-Za-z0-9_]+=' "$frag")
	done
	[ "$missing" = 0 ] || die "the kernel config lacks requested options (see above)"
}

# git am PATCH on TREE; when it does not apply, abort it, put TREE back at
# RESET_TO and fail naming the patch, that commit and git's own reason.
git_am_or_reset()
{
	local tree=$1 patch=$2 reset_to=$3 out

	out=$(git -C "$tree" am -q "$PATCH_DIR/$patch" 2>&1) && return 0
	git -C "$tree" am --abort >/dev/null 2>&1 || true
	git -C "$tree" reset -q --hard "$reset_to"
	die "patch $patch does not apply to $tree; the tree is back at $(git -C "$tree" log -1 --format='%h (%s)' "$reset_to").
$(grep -m3 -e '^error:' -e 'Patch failed at' <<<"$out")"
}
