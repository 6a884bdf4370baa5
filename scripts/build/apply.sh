#!/bin/bash
# apply.sh: apply patches/series in order to a user's Linux tree (KSRC), with git am on a git tree and patch on a plain one, or leave the tree as it was.
#
# usage: KSRC=/path/to/linux [PATCH_DIR=DIR] apply.sh      (make apply KSRC=/path/to/linux)
#
# The series is the one for the tree's Linux version (patches/6.1 for 6.1,
# patches for 6.12), or PATCH_DIR's where given (patches/upstream for
# kvm-x86/next). Unlike kernel-tree.sh, which owns the trees it applies
# to, this touches nothing in the user's tree but what the series changes:
# no reset, no refs.

set -eu -o pipefail

readonly GIVEN_PATCH_DIR=${PATCH_DIR:-}

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# patch's options: no .orig or .rej files, no question asked. Not -s: the
# "checking file" lines of a dry run name the file of each failing hunk.
readonly PATCH_OPTS=(-p1 -f --no-backup-if-mismatch --reject-file=-)

# PATCH_DIR for the Linux version of TREE, unless the user gave one.
select_series()
{
	local tree=$1 version

	[ -z "$GIVEN_PATCH_DIR" ] || return 0
	version=$(kernel_version_of "$tree") || die "KSRC=$tree: its Makefile gives no Linux version"
	case $version in
	6.1.*) PATCH_DIR=$TOP_DIR/patches/6.1 ;;
	6.12.*) PATCH_DIR=$TOP_DIR/patches ;;
	*) die "KSRC=$tree is Linux $version: the series is here for 6.1 (patches/6.1) and 6.12 (patches), and for kvm-x86/next with PATCH_DIR=patches/upstream" ;;
	esac
	note "KSRC=$tree is Linux $version: the series of ${PATCH_DIR#"$TOP_DIR"/}"
}

# The whole series is there when its last patch reverses cleanly.
check_not_applied()
{
	local tree=$1 last

	last=$(series_patches | tail -1)
	! patch -d "$tree" "${PATCH_OPTS[@]}" -R --dry-run <"$PATCH_DIR/$last" >/dev/null 2>&1 ||
		die "KSRC=$tree already has the series: its last patch, $last, is applied"
}

# Each patch a commit; at the first that fails, back to the starting HEAD.
git_am_series()
{
	local tree=$1 start patch

	start=$(git -C "$tree" rev-parse HEAD)
	for patch in $(series_patches); do
		git_am_or_reset "$tree" "$patch" "$start"
	done
	note "$tree: applied $(series_patches | wc -l) patches with git am on $(git -C "$tree" log -1 --format='%h (%s)' "$start")"
}

# Reverse the patches named, last first, so the tree ends byte-identical:
# each applied cleanly, so each reverses cleanly.
reverse_patches()
{
	local tree=$1 i

	shift
	for ((i = $#; i > 0; i--)); do
		patch -d "$tree" "${PATCH_OPTS[@]}" -R <"$PATCH_DIR/${!i}" >/dev/null ||
			die "cannot reverse ${!i} in $tree: the tree is left part-patched"
	done
}

# Each failure of patch's verbose output, with the file it is in.
failed_hunks()
{
	awk '/^checking file / { file = $3 }
		/^Hunk #[0-9]+ FAILED/ { print file ": " $0 }
		/can.t find file|No file to patch/ { print }' | head -3
}

# Later patches change what earlier ones left, so each is checked against
# the tree as the ones before it made it.
patch_series()
{
	local tree=$1 patch out applied=()

	for patch in $(series_patches); do
		if ! out=$(patch -d "$tree" "${PATCH_OPTS[@]}" --dry-run <"$PATCH_DIR/$patch" 2>&1); then
			reverse_patches "$tree" "${applied[@]}"
			die "patch $patch does not apply to $tree; the ${#applied[@]} applied before it were reversed, the tree is as it was.
$(failed_hunks <<<"$out")"
		fi
		applied+=("$patch")
		# Should the real run fail where its dry run did not, undo it too.
		if ! patch -d "$tree" "${PATCH_OPTS[@]}" <"$PATCH_DIR/$patch" >/dev/null; then
			reverse_patches "$tree" "${applied[@]}"
			die "patch $patch failed after its dry run in $tree; the patches were reversed"
		fi
	done
	note "$tree: applied $(series_patches | wc -l) patches with patch -p1"
}

main()
{
	local tree

	[ -n "${KSRC:-}" ] || die "give the tree to patch: make apply KSRC=/path/to/linux"
	need_cmd git git
	need_cmd patch patch
	tree=$(kernel_tree)
	check_kernel_tree "$tree"
	select_series "$tree"
	check_series
	if is_git_tree "$tree"; then
		check_git_clean "$tree"
		check_not_applied "$tree"
		# git am records the user as committer: say so before the first patch.
		git -C "$tree" var GIT_COMMITTER_IDENT >/dev/null 2>&1 ||
			die "git am needs your identity in KSRC=$tree: git config user.name/user.email"
		git_am_series "$tree"
	else
		check_not_applied "$tree"
		patch_series "$tree"
	fi
}

main "$@"
