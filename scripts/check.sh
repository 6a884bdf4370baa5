#!/bin/bash
# check.sh: what `make check` runs: install, build, run every check, and close with "N passed, N failed, N skipped".
#
# Each step's output goes to build/results/STEP.log; a build step is one
# result, a test step contributes the top-level TAP results it printed. A
# failed build skips the steps that need it, and counts as a failure.

set -u

. "$(dirname "$0")/common.sh"

readonly RESULTS=$BUILD_DIR/results

# Run one build step: a single ok/not ok result.
build_step()
{
	local name=$1 log=$RESULTS/$1.log

	shift
	echo "== $name: $*"
	if "$@" >"$log" 2>&1; then
		echo "ok - $name" | tee "$RESULTS/$name.tap"
		return 0
	fi
	tail -20 "$log"
	echo "not ok - $name: '$*' failed, see $log" | tee "$RESULTS/$name.tap"
	return 1
}

# Run one test step: its TAP output is the result; exit status 4 with no
# result is one skip, any other non-zero exit without a failed test in the
# output (a crash, a dead VM) one more failure.
test_step()
{
	local name=$1 log=$RESULTS/$1.tap status

	shift
	echo "== $name: $*"
	"$@" 2>&1 | tee "$log"
	status=${PIPESTATUS[0]}
	if [ "$status" = 4 ] && ! grep -q '^\(not \)\?ok' "$log"; then
		echo "ok - $name # SKIP $(sed -n 's/^1\.\.0 # SKIP //p' "$log")" | tee -a "$log"
	elif [ "$status" != 0 ] && [ "$status" != 4 ] && ! grep -q '^not ok' "$log"; then
		echo "not ok - $name: '$*' exited with status $status" | tee -a "$log"
	fi
}

tally()
{
	local pass fail skip

	pass=$(cat "$RESULTS"/*.tap | grep '^ok ' | grep -vc '# SKIP')
	skip=$(cat "$RESULTS"/*.tap | grep '^ok ' | grep -c '# SKIP')
	fail=$(cat "$RESULTS"/*.tap | grep -c '^not ok ')
	# Subtests skipped inside a test that passed are not counted; say which.
	grep -h '^# \(# \)*ok .*# SKIP' "$RESULTS"/*.tap | sed 's/^[# ]*/# skipped inside a passing test: /'
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ]
}

main()
{
	rm -rf "$RESULTS"
	mkdir -p "$RESULTS"
	cd "$TOP_DIR" || exit 1
	build_step deps scripts/deps.sh || { tally; exit 1; }
	build_step tools make -s tools &&
		test_step tools-unit tools/tsc-merge/tests/run-tests.sh
	if build_step kernel make -s kernel &&
	   build_step kvm-selftests scripts/build-kvm-selftests.sh &&
	   build_step selftests make -s selftests &&
	   build_step module make -s -C module KDIR="$KBUILD_OUT"; then
		test_step series scripts/check-series.sh
		test_step kernel-tree scripts/tests/kernel-tree-test.sh
		test_step vmtest scripts/tests/vmtest-test.sh
		test_step vm scripts/vmtest.sh sh scripts/vm-checks.sh
		test_step merge-e2e scripts/tests/merge-e2e-test.sh
	fi
	if build_step kernel-debug env KERNEL_VARIANT=debug scripts/build-kernel.sh &&
	   build_step module-debug make -s -C module KDIR="$BUILD_DIR/kernel-debug" \
		OUT="$BUILD_DIR/module-debug"; then
		test_step vm-debug env KERNEL_VARIANT=debug VMTEST_DIR="$BUILD_DIR/vmtest-debug" \
			scripts/vmtest.sh sh scripts/vm-checks.sh --suites-only
	fi
	tally
}

main "$@"
