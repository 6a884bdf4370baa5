# script-test.sh: the script tests' prologue (set -u, WORK, start_test) and helpers: run a script, check its status and words, clone the kernel tree cheaply (sourced, not run).

# shellcheck shell=bash
# shellcheck disable=SC2034 # OUT and STATUS are read by the tests that source this file

set -u

# What every script test needs of the scripts it tests: the tree's layout,
# die and note, and kselftest's KTAP helpers.
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The test's own folder, build/ and its name.
WORK=$BUILD_DIR/$(basename "$0" .sh)
readonly WORK

# The KTAP header, and WORK made afresh and removed however the test ends.
start_test()
{
	use_ktap
	ktap_print_header
	rm -rf "$WORK"
	mkdir -p "$WORK"
	trap 'rm -rf "$WORK"' EXIT
}

# Run [VAR=VALUE...] COMMAND [ARG...]: its output in $OUT, its status in $STATUS.
run_cmd()
{
	OUT=$(env "$@" 2>&1)
	STATUS=$?
}

# Fail showing the run's output, after a line that said what was expected.
show_out()
{
	# shellcheck disable=SC2001 # at the start of every line, not of the string
	sed 's/^/#   /' <<<"$OUT"
	return 1
}

# The run failed and said what was expected.
expect_error()
{
	local pattern=$1

	[ "$STATUS" != 0 ] && grep -q -- "$pattern" <<<"$OUT" && return 0
	echo "# expected a failure matching '$pattern', got status $STATUS:"
	show_out
}

expect_success()
{
	[ "$STATUS" = 0 ] && return 0
	echo "# expected success, got status $STATUS:"
	show_out
}

# Clone SOURCE into DEST at COMMIT with only the PATHs (sparse-checkout
# patterns) checked out, its objects shared with SOURCE: seconds and about
# 100 MB instead of a full kernel checkout, and SOURCE is only read.
make_sparse_clone()
{
	local source=$1 dest=$2 commit=$3

	shift 3
	rm -rf "$dest"
	git clone -q --no-checkout --shared "$source" "$dest" &&
	git -C "$dest" sparse-checkout set --no-cone "$@" &&
	git -C "$dest" checkout -q -b kvm-tsc-trace-test "$commit"
}
