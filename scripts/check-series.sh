#!/bin/bash
# check-series.sh: the review checks of patches/: checkpatch, a KVM build after every patch, sparse; prints TAP.
#
# Each patch must pass the tree's checkpatch.pl --strict with no error and no
# warning, arch/x86/kvm must build with KVM_WERROR=y after each patch
# (bisectable), and sparse (C=2) on arch/x86/kvm must report nothing that it
# does not already report on the base. The patches are applied with git am to
# a worktree of the packaged tree, built in build/kernel-series. A run that
# passed is kept with the hash of its inputs and reprinted while they stay
# the same, as make keeps a target whose prerequisites have not changed.

set -u

. "$(dirname "$0")/common.sh"

readonly WORKTREE=$BUILD_DIR/series-check
readonly OUT=$BUILD_DIR/kernel-series
readonly LOGS=$BUILD_DIR/series-check-logs
readonly PASSED=$BUILD_DIR/series-check.passed
# New files in KVM's directories are covered by MAINTAINERS as it is; the
# warning that asks whether it needs updating is the one check left out.
readonly CHECKPATCH_IGNORE=FILE_PATH_CHANGES

inputs_hash()
{
	{
		git -C "$TREE_DIR" rev-parse "$BASE_REF"
		cat "$0" "$PATCH_DIR/series" "$KBUILD_OUT/.config"
		series_patches | while read -r p; do cat "$PATCH_DIR/$p"; done
	} | sha256sum | cut -d' ' -f1
}

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

build_kvm()
{
	local log=$1

	make -C "$WORKTREE" O="$OUT" CC="ccache gcc" -j"$(nproc)" arch/x86/kvm/ >"$log" 2>&1 && return 0
	grep -m5 -e 'error:' -e 'Error' "$log" | sed 's/^/# /'
	return 1
}

# Sparse's warnings without line numbers, which the series shifts.
run_sparse()
{
	local log=$1

	make -C "$WORKTREE" O="$OUT" CC="ccache gcc" -j"$(nproc)" C=2 arch/x86/kvm/ >"$log.raw" 2>&1 ||
		return 1
	grep -E ': (warning|error):' "$log.raw" | sed -E 's/:[0-9]+:[0-9]+: /: /' | sort >"$log"
}

check_patch_style()
{
	local patch=$1 log=$LOGS/checkpatch-$1.log totals

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

apply_patch()
{
	local patch=$1

	git -C "$WORKTREE" am -q "$PATCH_DIR/$patch" >"$LOGS/am-$patch.log" 2>&1 && return 0
	sed 's/^/# /' "$LOGS/am-$patch.log" | head -5
	return 1
}

compare_sparse()
{
	local new

	new=$(comm -13 "$LOGS/sparse-base.log" "$LOGS/sparse-series.log")
	[ -z "$new" ] && return 0
	echo "# sparse warnings the series adds:"
	sed 's/^/#   /' <<<"$new"
	return 1
}

run_checks()
{
	local patches patch

	patches=$(series_patches)
	echo "TAP version 13"
	echo "1..$(( $(wc -w <<<"$patches") * 2 + 1 ))"
	prepare_worktree && prepare_config && run_sparse "$LOGS/sparse-base.log" ||
		{ echo "Bail out! cannot build the base tree, see $LOGS"; return 1; }
	for patch in $patches; do
		check_patch_style "$patch"
		tap_result $? "checkpatch --strict: $patch"
	done
	for patch in $patches; do
		apply_patch "$patch" && build_kvm "$LOGS/build-$patch.log"
		tap_result $? "arch/x86/kvm builds with KVM_WERROR=y after $patch"
	done
	run_sparse "$LOGS/sparse-series.log" && compare_sparse
	tap_result $? "sparse on arch/x86/kvm: nothing new over the base"
}

main()
{
	local hash

	[ -d "$TREE_DIR/.git" ] && [ -f "$KBUILD_OUT/.config" ] ||
		{ echo "1..0 # SKIP no packaged tree or test kernel config: run 'make kernel'"; exit 4; }
	hash=$(inputs_hash)
	if [ "$(head -1 "$PASSED" 2>/dev/null)" = "# inputs $hash" ]; then
		echo "# unchanged since the run of $(date -r "$PASSED"), its results:"
		tail -n +2 "$PASSED"
		exit 0
	fi
	rm -rf "$LOGS" "$PASSED"
	mkdir -p "$LOGS"
	run_checks | tee "$LOGS/results.tap"
	[ "${PIPESTATUS[0]}" = 0 ] && ! grep -q '^not ok' "$LOGS/results.tap" || exit 1
	{ echo "# inputs $hash"; cat "$LOGS/results.tap"; } >"$PASSED"
}

main "$@"
