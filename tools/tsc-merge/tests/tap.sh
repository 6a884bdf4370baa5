# tap.sh: the one TAP writer of kvm-tsc-merge's shell tests (KTAP-compatible), sourced by run-tests.sh, replay-fuzz.sh and scripts/ci/shell-lint-test.sh.
# shellcheck shell=bash
#
# The tool stands alone, as trace-cmd does: its tests need no kernel tree.
# The output is what kselftest's ktap_helpers.sh prints ("TAP version 13",
# "1..N", "ok N - ...", "not ok N - ...", "# SKIP"), and a script ends with
# kselftest's exit codes: 0 all passed or skipped, 1 a failure, 4 skipped.

readonly TAP_PASS=0 TAP_FAIL=1 TAP_SKIP=4

TAP_NR=0
TAP_PLAN=0
TAP_PASSED=0
TAP_FAILED=0
TAP_SKIPPED=0

tap_header()
{
	echo "TAP version 13"
}

# tap_plan N: N results follow.
tap_plan()
{
	TAP_PLAN=$1
	echo "1..$1"
}

# tap_line ok|"not ok" DESCRIPTION [DIRECTIVE]
tap_line()
{
	TAP_NR=$((TAP_NR + 1))
	echo "$1 $TAP_NR - $2${3:+ # $3}"
}

# tap_skip DESCRIPTION [REASON]
tap_skip()
{
	tap_line ok "$1" "SKIP${2:+ $2}"
	TAP_SKIPPED=$((TAP_SKIPPED + 1))
}

# tap_result STATUS DESCRIPTION: a test that ended in STATUS (0 passes).
tap_result()
{
	if [ "$1" = 0 ]; then
		tap_line ok "$2"
		TAP_PASSED=$((TAP_PASSED + 1))
	else
		tap_line "not ok" "$2"
		TAP_FAILED=$((TAP_FAILED + 1))
	fi
}

# tap_import <FILE: the results of another TAP stream (a C test program's),
# numbered on in this one; its comments but its totals pass through. Not at
# the end of a pipe: the counts must stay in this shell.
tap_import()
{
	local line

	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*) tap_skip "$(tap_description "$line")" "$(sed 's/.*# SKIP *//' <<<"$line")" ;;
		"ok "*) tap_result 0 "$(tap_description "$line")" ;;
		"not ok "*) tap_result 1 "$(tap_description "$line")" ;;
		"# Totals:"*) ;;
		"#"*) echo "$line" ;;
		esac
	done
}

# tap_description LINE: a result line's text, without number or directive.
tap_description()
{
	sed 's/^\(not \)\?ok [0-9]* \(- \)\?//; s/ *# SKIP.*//' <<<"$1"
}

tap_totals()
{
	echo "# Totals: pass:$TAP_PASSED fail:$TAP_FAILED xfail:0 xpass:0 skip:$TAP_SKIPPED error:0"
}

# tap_skip_all REASON: nothing can run here; exit as skipped.
tap_skip_all()
{
	echo "1..0 # SKIP $1"
	exit "$TAP_SKIP"
}

# tap_bail MESSAGE: the tests cannot go on; exit as failed.
tap_bail()
{
	echo "Bail out! $1"
	tap_totals
	exit "$TAP_FAIL"
}

# tap_finished: exit as failed unless every planned result passed or skipped.
tap_finished()
{
	tap_totals
	[ $((TAP_PASSED + TAP_SKIPPED)) = "$TAP_PLAN" ] && [ "$TAP_FAILED" = 0 ] && exit "$TAP_PASS"
	exit "$TAP_FAIL"
}
