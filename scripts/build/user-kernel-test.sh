#!/bin/bash
# user-kernel-test.sh: TAP tests of what a user runs for their own kernel: make apply on a git and a plain tree (6.12 and 6.1, another version refused), make kernel-config, make install/uninstall.
#
# The trees are a sparse clone and a plain copy of the packaged tree (or
# KSRC's) at its base commit, under build/user-kernel-test: the source tree
# is only read. A tree the series cannot go on is spoiled where the eighth
# patch of nine applies: the seven before it are applied and must be undone.
# The 6.1 tree is a plain copy of build/linux-6.1 (make check's, with
# patches/6.1) at its base.

# shellcheck source-path=SCRIPTDIR source=../lib/script-test.sh
. "$(dirname "$0")/../lib/script-test.sh"

readonly CLONE=$WORK/git
readonly PLAIN=$WORK/plain
readonly DEST=$WORK/dest
readonly APPLY=$TOP_DIR/scripts/build/apply.sh
readonly TREE_6_1=$BUILD_DIR/linux-6.1
readonly CONFIG=$TOP_DIR/scripts/build/user-config.sh
# Touched by the documentation patch of the tracing series only.
readonly SPOILED_FILE=Documentation/virt/kvm/x86/index.rst
readonly SPOILED_PATCH=tracing/0004-
# What make install puts under DESTDIR with PREFIX=/usr.
readonly INSTALLED="usr/bin/kvm-tsc-merge usr/bin/kvm-tsc-record usr/lib/kvm-tsc-trace/poll.sh usr/share/man/man1/kvm-tsc-merge.1"

# Each file the series changes or creates, and those apply.sh checks for.
series_files()
{
	series_patches | (cd "$PATCH_DIR" && xargs sed -n -e 's|^--- a/||p' -e 's|^+++ b/||p')
	printf '%s\n' Makefile scripts/kconfig/merge_config.sh
}

# The files of TREE at COMMIT that the series reads or writes, into DIR.
export_files()
{
	local tree=$1 commit=$2 dir=$3 files

	mkdir -p "$dir"
	files=$(series_files | sort -u | while read -r f; do
		git -C "$tree" cat-file -e "$commit:$f" 2>/dev/null && echo "$f"; done)
	# shellcheck disable=SC2086 # one argument a path; kernel paths have no spaces
	git -C "$tree" archive "$commit" $files | tar -x -C "$dir"
}

# One checksum of every file's name and content under DIR.
tree_sum()
{
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum
}

spoil()
{
	echo "spoiled for the test" >"$1/$SPOILED_FILE"
}

test_git_apply()
{
	local base

	base=$(git -C "$CLONE" rev-parse HEAD)
	run_cmd KSRC="$CLONE" "$APPLY"
	expect_success || return 1
	[ "$(git -C "$CLONE" rev-parse "HEAD~$(series_patches | wc -l)")" = "$base" ] ||
		{ echo "# HEAD is not the series on the starting commit"; return 1; }
	[ "$(git -C "$CLONE" log -1 --format=%s)" = "$(sed -n 's/^Subject: \[PATCH[^]]*\] //p' \
		"$PATCH_DIR/$(series_patches | tail -1)")" ] || { echo "# the last commit is not the last patch"; return 1; }
	[ -z "$(git -C "$CLONE" status --porcelain --untracked-files=no)" ] || { echo "# tree not clean"; return 1; }
}

# make apply on TREE fails saying PATTERN, and FINGERPRINT... (a command
# that describes the tree) prints the same after as before.
expect_refused()
{
	local tree=$1 pattern=$2 before

	shift 2
	before=$("$@") || return 1
	run_cmd KSRC="$tree" "$APPLY"
	expect_error "$pattern" || return 1
	[ "$("$@")" = "$before" ] || { echo "# the refused tree changed: $* differs"; return 1; }
}

test_git_applied_again()
{
	expect_refused "$CLONE" "already has the series" git -C "$CLONE" rev-parse HEAD
}

test_plain_apply()
{
	run_cmd KSRC="$PLAIN" "$APPLY"
	expect_success || return 1
	rm -rf "$WORK/expected"
	export_files "$CLONE" HEAD "$WORK/expected"
	diff -r "$WORK/expected" "$PLAIN" >/dev/null || { echo "# the plain tree differs from git am's"; return 1; }
}

test_plain_applied_again()
{
	expect_refused "$PLAIN" "already has the series" tree_sum "$PLAIN"
}

test_git_failing_patch()
{
	local start

	git -C "$CLONE" reset -q --hard "$BASE"
	spoil "$CLONE"
	git -C "$CLONE" commit -q -a -m "test: spoil $SPOILED_FILE"
	start=$(git -C "$CLONE" rev-parse HEAD)
	run_cmd KSRC="$CLONE" "$APPLY"
	expect_error "patch $SPOILED_PATCH.*does not apply" || return 1
	expect_error "patch failed: $SPOILED_FILE" || return 1
	[ "$(git -C "$CLONE" rev-parse HEAD)" = "$start" ] || { echo "# HEAD moved from $start"; return 1; }
	[ -z "$(git -C "$CLONE" status --porcelain --untracked-files=no)" ] || { echo "# tree not clean"; return 1; }
	[ ! -d "$CLONE/.git/rebase-apply" ] || { echo "# git am left in progress"; return 1; }
}

test_git_dirty()
{
	echo "/* local edit */" >>"$CLONE/arch/x86/kvm/x86.c"
	expect_refused "$CLONE" "uncommitted changes" sha256sum "$CLONE/arch/x86/kvm/x86.c"
}

test_plain_failing_patch()
{
	rm -rf "$PLAIN"
	export_files "$CLONE" "$BASE" "$PLAIN"
	spoil "$PLAIN"
	expect_refused "$PLAIN" "patch $SPOILED_PATCH.*does not apply.*were reversed" tree_sum "$PLAIN" &&
		expect_error "$SPOILED_FILE: Hunk #1 FAILED"
}

# make apply on a plain 6.1 tree takes patches/6.1 and gives the files
# kernel-tree.sh's git am gave build/linux-6.1.
test_apply_6_1()
{
	local base plain=$WORK/plain-6.1 expected=$WORK/expected-6.1

	base=$(git -C "$TREE_6_1" rev-parse "$BASE_REF") || return 1
	PATCH_DIR=$TOP_DIR/patches/6.1 export_files "$TREE_6_1" "$base" "$plain"
	run_cmd KSRC="$plain" "$APPLY"
	expect_success || return 1
	grep -q "is Linux 6\.1\.[0-9]*: the series of patches/6\.1$" <<<"$OUT" ||
		{ echo "# the 6.1 series not named"; show_out; return 1; }
	PATCH_DIR=$TOP_DIR/patches/6.1 export_files "$TREE_6_1" HEAD "$expected"
	diff -r "$expected" "$plain" >/dev/null || { echo "# the 6.1 tree differs from git am's"; return 1; }
}

# A tree of a version with no series is refused, the versions named.
test_apply_other_version()
{
	local plain=$WORK/plain-6.5

	export_files "$CLONE" "$BASE" "$plain"
	sed -i 's/^PATCHLEVEL = .*/PATCHLEVEL = 5/' "$plain/Makefile"
	expect_refused "$plain" "is Linux 6\.5\.[0-9]*: the series is here for 6\.1 (patches/6\.1) and 6\.12 (patches), and for kvm-x86/next with PATCH_DIR=patches/upstream" \
		tree_sum "$plain"
}

# user-config.sh, what make kernel-config runs, on the clone into
# WORK/config-ARCH, from tinyconfig for ARCH as a user's base: x86 (32-bit
# there) lacks what KVM depends on, x86_64 has it.
run_config()
{
	local arch=$1

	make -s -C "$CLONE" O="$WORK/tiny-$arch" ARCH="$arch" tinyconfig >"$WORK/tiny-$arch.log" 2>&1 ||
		{ echo "# make tinyconfig failed:"; tail -5 "$WORK/tiny-$arch.log"; return 1; }
	run_cmd KSRC="$CLONE" BASE_CONFIG="$WORK/tiny-$arch/.config" O="$WORK/config-$arch" "$CONFIG"
}

test_config()
{
	local out=$WORK/config-x86_64 line

	run_config x86_64 && expect_success || return 1
	grep -q "CONFIG_KVM: unset -> m" <<<"$OUT" || { echo "# CONFIG_KVM's change not reported: $OUT"; return 1; }
	while read -r line; do
		grep -qxF "$line" "$out/.config" || { echo "# $line missing from $out/.config"; return 1; }
	done < <(grep -E '^CONFIG_' "$TOP_DIR/Kconfig.snippet")
}

test_config_unmet()
{
	run_config x86 || return 1
	expect_error "CONFIG_KVM=m (from .*Kconfig.snippet) is not in the final config"
}

# make install/uninstall as a user types them, with a clean make
# environment: this runs under make check's make.
run_make()
{
	run_cmd MAKEFLAGS= MAKELEVEL= make -s -C "$TOP_DIR" "$@"
}

test_install()
{
	local found

	run_make install DESTDIR="$DEST" PREFIX=/usr
	expect_success || return 1
	found=$(cd "$DEST" && find . -type f -o -type l | sed 's|^\./||' | sort | tr '\n' ' ')
	[ "$found" = "$INSTALLED " ] || { echo "# installed: $found; expected: $INSTALLED"; return 1; }
	run_cmd "$DEST/usr/bin/kvm-tsc-merge" --help
	expect_success && grep -q "usage: kvm-tsc-merge" <<<"$OUT" || return 1
	# The recorder runs only once it has sourced the installed poll.sh.
	run_cmd "$DEST/usr/bin/kvm-tsc-record" --help
	expect_success && grep -q "usage: kvm-tsc-record start \[-o FILE\]" <<<"$OUT"
}

test_uninstall()
{
	local left

	run_make uninstall DESTDIR="$DEST" PREFIX=/usr
	expect_success || return 1
	left=$(find "$DEST" -type f -o -type l -o -type d -name kvm-tsc-trace)
	[ -z "$left" ] || { echo "# left after uninstall: $left"; return 1; }
}

main()
{
	start_test
	SOURCE=$(kernel_tree)
	readonly SOURCE
	use_default_identity
	BASE=$(git -C "$SOURCE" rev-parse "$BASE_REF") &&
		make_sparse_clone "$SOURCE" "$CLONE" "$BASE" /Makefile /scripts/ /include/ /arch/x86/ \
			/Documentation/virt/ /tools/testing/selftests/kvm/ '/**/Kconfig*' /kernel/configs/ &&
		export_files "$CLONE" "$BASE" "$PLAIN" || ktap_exit_fail_msg "cannot copy $SOURCE at $BASE_REF"
	readonly BASE

	ktap_set_plan 13
	ktap_test_result "make apply on a git tree: one commit a patch, in series order" test_git_apply
	ktap_test_result "make apply on a git tree with the series is refused, HEAD unchanged" test_git_applied_again
	ktap_test_result "make apply on a plain tree gives the files git am gave" test_plain_apply
	ktap_test_result "make apply on a plain tree with the series is refused, tree unchanged" test_plain_applied_again
	ktap_test_result "a git tree a patch fails on: the patch and file named, HEAD back, clean" test_git_failing_patch
	ktap_test_result "a dirty git tree is refused and left as it was" test_git_dirty
	ktap_test_result "a plain tree a patch fails on: named, the applied reversed, tree byte-identical" test_plain_failing_patch
	ktap_test_result "make apply on a plain 6.1 tree: patches/6.1, the files git am gave" test_apply_6_1
	ktap_test_result "make apply on a Linux version with no series is refused, naming those there are" \
		test_apply_other_version
	ktap_test_result "make kernel-config from tinyconfig reports the changes, all snippet options in .config" test_config
	ktap_test_result "make kernel-config names a snippet option its base cannot have" test_config_unmet
	ktap_test_result "make install DESTDIR=: exactly the four files; both programs run" test_install
	ktap_test_result "make uninstall DESTDIR=: nothing left of them" test_uninstall
	ktap_finished
}

main "$@"
