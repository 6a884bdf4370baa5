#!/bin/sh
# run_tests.sh: run kvm-tsc-trace selftests as kselftest's runner does (TAP 13, one result per test, per-test timeout).
#
# usage: run_tests.sh DIR TEST...
# DIR holds the test programs and the settings file; SUITE (default
# kvm-tsc-trace) names them in the results. Each test's own TAP
# output is indented with "# "; its exit status gives the top-level result:
# 0 ok, 4 ok # SKIP, anything else not ok (124 from coreutils' timeout, 143
# from busybox's: killed at the timeout).

dir=$1
shift
suite=${SUITE:-kvm-tsc-trace}
timeout=$(sed -n 's/^timeout=//p' "$dir/settings" 2>/dev/null)
timeout=${timeout:-120}
nr=0
failed=0

# Run a test with its output indented, and print its exit status.
run_indented()
{
	{ { timeout "$timeout" "$dir/$1" 2>&1 3>&- 4>&-; echo $? >&3; } | sed 's/^/# /' >&4; } 3>&1
}

exec 4>&1
echo "TAP version 13"
echo "1..$#"
for test in "$@"; do
	nr=$((nr + 1))
	echo "# selftests: $suite: $test"
	status=$(run_indented "$test")
	case $status in
	0) echo "ok $nr selftests: $suite: $test" ;;
	4) echo "ok $nr selftests: $suite: $test # SKIP" ;;
	124 | 143)
		echo "not ok $nr selftests: $suite: $test # TIMEOUT ${timeout}s"
		failed=1
		;;
	*)
		echo "not ok $nr selftests: $suite: $test # exit=$status"
		failed=1
		;;
	esac
done
exit $failed
