#!/bin/bash
# check-series.sh: the review checks of patches/: checkpatch, a KVM build after every patch, sparse; prints KTAP.
#
# The patches are applied with git am to a worktree of the packaged tree and
# built in build/kernel-series, after each patch: the series is bisectable.

set -u

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly WORKTREE=$BUILD_DIR/series-check
readonly OUT=$BUILD_DIR/kernel-series
readonly LOGS=$BUILD_DIR/series-check-logs
# Two checks are left out. New files in KVM's directories are covered by
# MAINTAINERS as it is, so the warning that asks whether it needs updating
# does not apply; and Debian's tarball has no git history, so checkpatch
# cannot find the commits the Fixes: tags name (each was checked against
# upstream's history; the cover letter lists them).
readonly CHECKPATCH_IGNORE=FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID

prepare_worktree()
{
	if [ ! -e "$WORKTREE/.git" ]; then
		rm -rf "$WORKTREE"
		git -C "$TREE_DIR" worktree prune
		git -C "$TREE_DIR" worktree add -q --detach "$WORKTREE" "$BASE_REF" || return 1
	fi
	git -C "$WORKTREE" am --abort >/dev/null 2>&1
	git -C "$WORKTREE" reset -q --hard "$BASE_REF"
}

# The test kernel's config with KVM's -Werror; only replaced when it changes.
prepare_config()
{
	local new=$LOGS/config

	mkdir -p "$OUT"
	cp "$KBUILD_OUT/.config" "$new"
	"$WORKTREE/scripts/config" --file "$new" --enable KVM_WERROR
	cmp -s "$new" "$OUT/.config.requested" && return 0
	cp "$new" "$OUT/.config"
	make -s -C "$WORKTREE" O="$OUT" olddefconfig >/dev/null || return 1
	grep -qx CONFIG_KVM_WERROR=y "$OUT/.config" || { echo "# KVM_WERROR=y was dropped"; return 1; }
	cp "$new" "$OUT/.config.requested"
}

# build_kvm LOG [MAKE_ARG...]: arch/x86/kvm/ built, its errors as comments.
build_kvm()
{
	local log=$1 jobs=

	shift
	# Under make (make check), the jobs it shares; alone, one per core.
	[ -n "${MAKEFLAGS:-}" ] || jobs=-j$(nproc)
	make -C "$WORKTREE" O="$OUT" CC="ccache gcc" $jobs "$@" arch/x86/kvm/ >"$log" 2>&1 && return 0
	grep -m5 -e 'error:' -e 'Error' "$log" | sed 's/^/# /'
	return 1
}

# Sparse's warnings without line numbers, which the series shifts.
run_sparse()
{
	build_kvm "$1.raw" C=2 || return 1
	grep -E ': (warning|error):' "$1.raw" | sed -E 's/:[0-9]+:[0-9]+: /: /' | sort >"$1"
}

# The log of one step for one patch; sub-series' patches have a directory.
log_of()
{
	echo "$LOGS/$1-${2//\//-}.log"
}

check_patch_style()
{
	local patch=$1 log totals

	log=$(log_of checkpatch "$patch")
	(cd "$WORKTREE" && ./scripts/checkpatch.pl --strict --ignore "$CHECKPATCH_IGNORE" \
		"$PATCH_DIR/$patch") >"$log" 2>&1
	totals=$(grep '^total:' "$log")
	echo "# $patch: ${totals:-checkpatch printed no totals}"
	case $totals in
	"total: 0 errors, 0 warnings,"*) return 0 ;;
	esac
	grep -E '^(ERROR|WARNING):' "$log" | sed 's/^/#   /'
	return 1
}

apply_and_build()
{
	local patch=$1 log

	log=$(log_of am "$patch")
	git -C "$WORKTREE" am -q "$PATCH_DIR/$patch" >"$log" 2>&1 || { sed 's/^/# /' "$log" | head -5; return 1; }
	build_kvm "$(log_of build "$patch")"
}

check_sparse()
{
	local new

	run_sparse "$LOGS/sparse-series.log" || return 1
	new=$(comm -13 "$LOGS/sparse-base.log" "$LOGS/sparse-series.log" | sed 's/^/#   /')
	[ -z "$new" ] && return 0
	echo "# sparse warnings the series adds:"
	echo "$new"
	return 1
}

run_checks()
{
	local patches patch

	patches=$(series_patches)
	ktap_print_header
	ktap_set_plan $(( $(wc -w <<<"$patches") * 2 + 1 ))
	prepare_worktree && prepare_config && run_sparse "$LOGS/sparse-base.log" ||
		ktap_exit_fail_msg "cannot build the base tree, see $LOGS"
	for patch in $patches; do
		ktap_test_result "checkpatch --strict: $patch" check_patch_style "$patch"
	done
	for patch in $patches; do
		ktap_test_result "arch/x86/kvm builds with KVM_WERROR=y after $patch" apply_and_build "$patch"
	done
	ktap_test_result "sparse on arch/x86/kvm: nothing new over the base" check_sparse
	ktap_finished
}

main()
{
	use_ktap
	[ -d "$TREE_DIR/.git" ] && [ -f "$KBUILD_OUT/.config" ] ||
		die "no packaged tree or test kernel config: run 'make kernel'"
	rm -rf "$LOGS"
	mkdir -p "$LOGS"
	run_checks
}

main "$@"
