#!/bin/bash
# run-tests-exit-test.sh: TAP tests that `make run_tests` of the kselftest collections fails when a test fails.
#
# usage: run-tests-exit-test.sh      (KSRC=/path/to/linux for a user's tree)
#
# Each case installs a collection with its test list replaced by planted
# shell scripts (one fails, one passes, one skips) and runs its run_tests
# with the tree's own runner.sh: the collection's Makefile, install and
# verdict are the real ones, only the tests are planted. Needs neither root
# nor /dev/kvm, only the kernel tree (lib.mk, runner.sh).

# shellcheck source-path=SCRIPTDIR source=../lib/script-test.sh
. "$(dirname "$0")/../lib/script-test.sh"

readonly PLANTED=$WORK/planted

# planted_fail.sh, planted_pass.sh, planted_skip.sh (exit 4, kselftest's skip).
plant_tests()
{
	mkdir -p "$PLANTED"
	printf '#!/bin/sh\necho "planted_fail: fails on purpose"\nexit 1\n' >"$PLANTED/planted_fail.sh"
	printf '#!/bin/sh\nexit 0\n' >"$PLANTED/planted_pass.sh"
	printf '#!/bin/sh\necho "planted_skip: skips on purpose"\nexit 4\n' >"$PLANTED/planted_skip.sh"
	chmod +x "$PLANTED"/*.sh
}

# make_run_tests DIR VAR=VALUE...: make run_tests in DIR, on the kernel tree,
# as a make of its own; its output in $OUT, its status in $STATUS.
make_run_tests()
{
	local dir=$1

	shift
	run_cmd MAKEFLAGS= MAKELEVEL= make -s --no-print-directory -C "$dir" KSRC="$TREE" "$@" run_tests
}

# Run selftests/'s run_tests on the planted tests named. A fresh install
# each time, so that a test of an earlier case is not in the tree.
run_selftests()
{
	local dir=$WORK/selftests

	rm -rf "$dir"
	make_run_tests "$TOP_DIR/selftests" OUTPUT="$dir/out" INSTALL_PATH="$dir/install" \
		TEST_GEN_PROGS= TEST_GEN_PROGS_EXTENDED= TEST_FILES= TEST_PROGS="${*/#/$PLANTED/}"
}

# Each pattern matches a line of $OUT; say which does not.
expect_lines()
{
	local pattern

	for pattern in "$@"; do
		grep -q -- "$pattern" <<<"$OUT" && continue
		echo "# no line matching '$pattern' in the output:"
		show_out
		return 1
	done
}

test_failure_fails()
{
	run_selftests planted_pass.sh planted_fail.sh planted_skip.sh
	expect_error '^not ok 2 selftests: kvm-tsc-trace: planted_fail.sh # exit=1$' &&
	expect_lines '^run_tests: 1 of 3 tests failed$'
}

# The same run's output: the runner's TAP, the failing test's own lines.
test_tap_kept()
{
	local log=$WORK/selftests/out/run_tests.tap

	expect_lines '^TAP version 13$' '^1\.\.3$' \
		'^ok 1 selftests: kvm-tsc-trace: planted_pass.sh$' \
		'^# planted_fail: fails on purpose$' \
		'^ok 3 selftests: kvm-tsc-trace: planted_skip.sh # SKIP$' || return 1
	# From the runner's first line up to make's own and the verdict's: the log.
	[ -f "$log" ] &&
	cmp -s <(sed -n '/^TAP version 13$/,$p' <<<"$OUT" | head -n "$(wc -l <"$log")") "$log" ||
		{ echo "# $log is not the runner's output"; return 1; }
}

test_pass_and_skip_pass()
{
	run_selftests planted_pass.sh planted_skip.sh
	expect_success &&
	expect_lines '^1\.\.2$' '^ok 1 selftests: kvm-tsc-trace: planted_pass.sh$' \
		'^ok 2 selftests: kvm-tsc-trace: planted_skip.sh # SKIP$'
}

# module/tests runs its tests from OUTPUT through lib.mk's own run_tests, and
# takes them by name from its directory: a copy of its Makefile, settings and
# ksft-collection.mk, laid out as in the repository, the planted tests beside.
test_module_collection_fails()
{
	local copy=$WORK/module-copy

	rm -rf "$copy"
	mkdir -p "$copy/module/tests" "$copy/scripts/lib"
	cp "$TOP_DIR/module/tests/Makefile" "$TOP_DIR/module/tests/settings" "$PLANTED"/*.sh \
		"$copy/module/tests/"
	cp "$TOP_DIR/scripts/lib/ksft-collection.mk" "$copy/scripts/lib/"
	make_run_tests "$copy/module/tests" OUTPUT="$copy/out" TEST_FILES= \
		TEST_PROGS="planted_pass.sh planted_fail.sh planted_skip.sh"
	expect_error '^not ok 2 selftests: .*: planted_fail.sh # exit=1$' &&
	expect_lines '^ok 3 selftests: .*: planted_skip.sh # SKIP$' '^run_tests: 1 of 3 tests failed$'
}

main()
{
	start_test
	TREE=$(kernel_tree)
	readonly TREE
	plant_tests

	ktap_set_plan 4
	ktap_test_result "selftests run_tests exits non-zero when a test fails" test_failure_fails
	ktap_test_result "selftests run_tests keeps the runner's TAP, the failing test's lines and the skip" \
		test_tap_kept
	ktap_test_result "selftests run_tests exits 0 with only passes and skips" test_pass_and_skip_pass
	ktap_test_result "module/tests run_tests exits non-zero when a test fails" \
		test_module_collection_fails
	ktap_finished
}

main "$@"
