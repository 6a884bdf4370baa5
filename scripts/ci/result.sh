#!/bin/bash
# result.sh: run one check of `make check` keeping its TAP, and count the results of all of them.
#
# usage: result.sh run RESULT COMMAND...   run COMMAND, show its output and
#                                          keep it in RESULT, with how
#                                          long it took
#        result.sh tally RESULT...         print the closing line
#                                          "N passed, N failed, N skipped"
#
# A result is a top-level "ok"/"not ok" line; "# SKIP" marks a skip.
# COMMAND's exit status 4 with no result line is one skip (kselftest's
# code), any other non-zero status without a failed result (a crash, a dead
# VM) one more failure. A RESULT that failed is dated 1970, so that make runs
# its check again even where it keeps results whose inputs did not change.

set -u

run()
{
	local result=$1 name status

	shift
	name=$(basename "$result" .tap)
	mkdir -p "$(dirname "$result")"
	echo "== $name: $*"
	SECONDS=0
	"$@" 2>&1 | tee "$result.new"
	status=${PIPESTATUS[0]}
	echo "# $name took $SECONDS s, ended at $(date +%T)" | tee -a "$result.new"
	if [ "$status" = 4 ] && ! grep -q '^\(not \)\?ok' "$result.new"; then
		echo "ok - $name # SKIP $(sed -n 's/^1\.\.0 # SKIP //p' "$result.new")" | tee -a "$result.new"
	elif [ "$status" != 0 ] && [ "$status" != 4 ] && ! grep -q '^not ok' "$result.new"; then
		echo "not ok - $name: '$*' exited with status $status" | tee -a "$result.new"
	fi
	mv "$result.new" "$result"
	grep -q '^not ok' "$result" || return 0
	touch -d @0 "$result"
	return 1
}

# The failures again at the end of the log, where a reader of its tail
# looks: each check's first failure with the lines that led to it, then
# every failed result.
show_failures()
{
	local result

	for result in "$@"; do
		grep -q '^not ok' "$result" || continue
		echo "# $(basename "$result" .tap): its first failure, and what came before it:"
		grep -B 12 -m 1 '^not ok' "$result" | sed 's/^/#   /'
	done
	grep -h '^not ok' "$@" | sed 's/^/# failed: /'
}

tally()
{
	local result results pass=0 fail=0 skip=0

	for result in "$@"; do
		[ -f "$result" ] && continue
		echo "not ok - $(basename "$result" .tap): not run, a build it needs failed (see above)"
		fail=$((fail + 1))
	done
	mapfile -t results < <(ls "$@" 2>/dev/null)
	set -- "${results[@]}"
	if [ $# -gt 0 ]; then
		pass=$(cat "$@" | grep '^ok ' | grep -vc '# SKIP')
		skip=$(cat "$@" | grep '^ok ' | grep -c '# SKIP')
		fail=$((fail + $(cat "$@" | grep -c '^not ok ')))
		# Subtests skipped inside a test that passed are not counted; say which.
		grep -h '^# \(# \)*ok .*# SKIP' "$@" | sed 's/^[# ]*/# skipped inside a passing test: /'
		show_failures "$@"
	fi
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ]
}

case ${1:-} in
run | tally) "$@" ;;
*) echo "usage: ${0##*/} run RESULT COMMAND... | tally RESULT..." >&2; exit 2 ;;
esac
