#!/bin/bash
# kernel-tree-test.sh: TAP tests of scripts/build/kernel-tree.sh on a sparse clone of the packaged kernel tree.
#
# Covers what a user's KSRC can get wrong (not there, not a kernel tree, not
# git, dirty), a patch that does not apply (named, tree back at the base), and
# that a series applied again, or a changed one, ends up once on the base.

# shellcheck source-path=SCRIPTDIR source=../lib/script-test.sh
. "$(dirname "$0")/../lib/script-test.sh"

readonly CLONE=$WORK/linux
readonly SCRIPT=$TOP_DIR/scripts/build/kernel-tree.sh

# A one-patch series changing a comment in trace.h; SPOIL=1 breaks its context.
make_series()
{
	local dir=$WORK/$1 spoil=${2:-0} word=${3:-tracepoint}

	rm -rf "$dir"
	mkdir -p "$dir"
	sed -i "1s|\$| /* $word test */|" "$CLONE/arch/x86/kvm/trace.h"
	git -C "$CLONE" commit -q -a -m "test: mark trace.h ($word)"
	git -C "$CLONE" format-patch -q -1 -o "$dir"
	git -C "$CLONE" reset -q --hard HEAD~1
	[ "$spoil" = 1 ] && sed -i 's/^ #if !defined(_TRACE_KVM_H)/ #if defined(SPOILED)/' "$dir"/0001-*.patch
	(cd "$dir" && ls 0001-*.patch) >"$dir/series"
}

# What kernel-tree.sh says of each KSRC under WORK that it must refuse:
# none there, an empty directory, a kernel tree without git.
declare -A REFUSAL=(
	[nowhere]="no such directory"
	[empty]="is not a Linux kernel tree: Makefile is missing"
	[nogit]="is not a git repository"
)

# kernel-tree.sh refuses KSRC=WORK/NAME, saying what REFUSAL has for NAME.
test_refused()
{
	run_cmd KSRC="$WORK/$1" "$SCRIPT"
	expect_error "${REFUSAL[$1]}"
}

test_broken_series()
{
	local head

	mkdir -p "$WORK/broken"
	echo "0001-not-there.patch" >"$WORK/broken/series"
	head=$(git -C "$CLONE" rev-parse HEAD)
	run_cmd KSRC="$CLONE" PATCH_DIR="$WORK/broken" "$SCRIPT"
	expect_error "names 0001-not-there.patch, which is not there" || return 1
	[ "$(git -C "$CLONE" rev-parse HEAD)" = "$head" ] || { echo "# HEAD moved"; return 1; }
}

test_dirty_tree()
{
	local before

	echo "/* local edit */" >>"$CLONE/arch/x86/kvm/x86.c"
	before=$(sha256sum "$CLONE/arch/x86/kvm/x86.c")
	run_cmd KSRC="$CLONE" PATCH_DIR="$WORK/good" "$SCRIPT"
	expect_error "uncommitted changes" && expect_error "arch/x86/kvm/x86.c" || return 1
	[ "$(sha256sum "$CLONE/arch/x86/kvm/x86.c")" = "$before" ] ||
		{ echo "# the refused tree was modified"; return 1; }
	git -C "$CLONE" checkout -q -- arch/x86/kvm/x86.c
}

test_failing_patch()
{
	local base

	base=$(git -C "$CLONE" rev-parse HEAD)
	run_cmd KSRC="$CLONE" PATCH_DIR="$WORK/spoiled" "$SCRIPT"
	expect_error "patch 0001-.*does not apply" && expect_error "patch failed: arch/x86/kvm/trace.h:" || return 1
	[ "$(git -C "$CLONE" rev-parse HEAD)" = "$base" ] ||
		{ echo "# HEAD moved from the base $base"; return 1; }
	[ -z "$(git -C "$CLONE" status --porcelain --untracked-files=no)" ] ||
		{ echo "# the tree is not clean after the failure"; return 1; }
	[ ! -d "$CLONE/.git/rebase-apply" ] || { echo "# git am left in progress"; return 1; }
}

# make decides when to apply; a second run must still give one series on
# the base, not the series twice.
test_apply_twice()
{
	run_cmd KSRC="$CLONE" PATCH_DIR="$WORK/good" "$SCRIPT" && expect_success || return 1
	run_cmd KSRC="$CLONE" PATCH_DIR="$WORK/good" "$SCRIPT" && expect_success || return 1
	[ "$(git -C "$CLONE" rev-parse HEAD~1)" = "$(git -C "$CLONE" rev-parse refs/kvm-tsc-trace/base)" ] ||
		{ echo "# after a rerun HEAD~1 is not the base"; return 1; }
	[ "$(grep -c "tracepoint test" "$CLONE/arch/x86/kvm/trace.h")" = 1 ] ||
		{ echo "# trace.h does not carry the patch exactly once"; return 1; }
}

test_changed_series()
{
	local base

	base=$(git -C "$CLONE" rev-parse refs/kvm-tsc-trace/base)
	run_cmd KSRC="$CLONE" PATCH_DIR="$WORK/other" "$SCRIPT"
	expect_success || return 1
	[ "$(git -C "$CLONE" rev-parse HEAD~1)" = "$base" ] ||
		{ echo "# the changed series was not applied on the base $base"; return 1; }
	grep -q "other test" "$CLONE/arch/x86/kvm/trace.h" || { echo "# trace.h lacks the new patch"; return 1; }
}

main()
{
	start_test
	make_sparse_clone "$TREE_DIR" "$CLONE" HEAD /Makefile /scripts/ /include/ /arch/x86/ ||
		ktap_exit_fail_msg "cannot clone $TREE_DIR"
	mkdir -p "$WORK/empty" "$WORK/nogit"
	cp -r "$CLONE"/{Makefile,arch,scripts} "$WORK/nogit/"
	make_series good
	make_series spoiled 1
	make_series other 0 other

	ktap_set_plan 8
	ktap_test_result "KSRC that does not exist is refused" test_refused nowhere
	ktap_test_result "KSRC that is not a kernel tree is refused, naming what is missing" test_refused empty
	ktap_test_result "KSRC that is not a git repository is refused" test_refused nogit
	ktap_test_result "a series naming a missing patch is refused before the tree is touched" test_broken_series
	ktap_test_result "a dirty KSRC is refused, naming the changed file, and left as it was" test_dirty_tree
	ktap_test_result "a patch that does not apply is named with its hunk; the tree stays at the base" test_failing_patch
	ktap_test_result "applying the same series again leaves it applied once on the base" test_apply_twice
	ktap_test_result "a changed series is reapplied from the base commit" test_changed_series
	ktap_finished
}

main "$@"
