#!/bin/bash
# replay-fuzz.sh: replay every input the fuzzer once broke kvm-tsc-merge with (fuzz/regressions) under ASan and UBSan (KTAP).
#
# usage: replay-fuzz.sh [BUILD_DIR]   (default: build/tools of the project)
#
# Each saved input runs through the tool's own ASan and UBSan build
# (BUILD_DIR/asan/kvm-tsc-merge), with the command line fuzz/driver.c gave
# it in the role named by its directory (fuzz/roles.sh), its partner made
# from fuzz/seeds, within TIME_LIMIT seconds and RSS_LIMIT_MB of memory
# (ASan's own shadow included); replay() says what it must end with. An
# input with a FILE.expect beside it must get that text in the message:
# the check that stops it, not any error (an unmatched guest is one too).

set -u

# shellcheck source-path=SCRIPTDIR source=dirs.sh
. "$(dirname "$0")/dirs.sh"
readonly MERGE=$BIN_DIR/asan/kvm-tsc-merge
readonly REGRESSIONS=$FUZZ_SRC/regressions
readonly SEEDS=$FUZZ_SRC/seeds
# Leaks of the libraries' own error paths are theirs (fuzz/README).
readonly LSAN_SUPPRESSIONS=$FUZZ_SRC/lsan.supp
# Every saved input ends in under a second under ASan now that the sizes
# are checked before libtracecmd reads a file; some of them used to loop.
readonly TIME_LIMIT=10
# A kilobyte input once took gigabytes (fuzz/README): ASan ends a run past
# this, its quarantine of freed memory kept small so that it does not count.
readonly RSS_LIMIT_MB=256

# shellcheck source-path=SCRIPTDIR source=tap.sh
. "$TESTS_DIR/tap.sh"

# shellcheck source-path=SCRIPTDIR source=../fuzz/roles.sh
. "$FUZZ_SRC/roles.sh"

# run_merge ARG...: the tool under the sanitizers; its stderr in
# WORK/stderr, its exit status returned.
run_merge()
{
	LSAN_OPTIONS=suppressions=$LSAN_SUPPRESSIONS \
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allocator_may_return_null=1:hard_rss_limit_mb=$RSS_LIMIT_MB:quarantine_size_mb=16 \
	UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
		timeout "$TIME_LIMIT" "$MERGE" "$@" >/dev/null 2>"$WORK/stderr"
}

# replay ROLE FILE: one result.
replay()
{
	local role=$1 file=$2 name status ok ARGV

	rm -rf "$WORK/out"
	mkdir -p "$WORK/out/sync"
	role_argv "$WORK/files" "$WORK/out" "$role" "$file"

	name="$role/$(basename "$file")"
	run_merge "${ARGV[@]}"
	status=$?
	# A trace refused (1) or merged with events out of place (3); an
	# argument list may also be bad usage (2).
	case $role:$status in args:[123] | *:[13]) ok=1 ;; *) ok= ;; esac
	if [ "$role" != args ] && [ "$status" = 0 ]; then
		# The driver's round trip: merged again, the copies exit 0, same timeline.
		role_round_trip_argv "$WORK/files" "$WORK/out" "$role" "$file" && run_merge "${ARGV[@]}" &&
			cmp -s "$WORK/out/timeline.txt" "$WORK/out/round-trip.txt" && ok=1
		[ -n "$ok" ] ||
			echo "# $name: exit 0, but its --sync-out copies merged again were refused or gave another timeline"
	elif [ -n "$ok" ] && [ "$role" != args ] && ! grep -qF -- "$file" "$WORK/stderr"; then
		echo "# $name: the message does not name the file"
		ok=
	fi
	if [ -n "$ok" ] && [ -f "$file.expect" ] && ! grep -qF -- "$(cat "$file.expect")" "$WORK/stderr"; then
		echo "# $name: not the message of the check that stops it: $(cat "$file.expect")"
		ok=
	fi
	grep -q "Sanitizer\|runtime error\|RSS limit" "$WORK/stderr" && ok=
	[ -n "$ok" ] || { echo "# $name: exit status $status (124: over ${TIME_LIMIT}s)"; sed 's/^/#   /' "$WORK/stderr" | head -15; }
	if [ -z "$ok" ]; then
		tap_result 1 "$name: exit $status"
	elif [ "$status" = 0 ]; then
		tap_result 0 "$name: exit 0, its copies merge again to the same timeline, no sanitizer report"
	else
		tap_result 0 "$name: exit $status, the file named, no sanitizer report"
	fi
}

main()
{
	local inputs role f

	tap_header
	[ -x "$MERGE" ] && [ -x "$BIN_DIR/mktrace" ] ||
		tap_skip_all "$MERGE or mktrace not built: make -C tools/tsc-merge"
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
	mkdir -p "$WORK/files"
	for f in "$SEEDS"/*.spec; do
		"$BIN_DIR/mktrace" -t "$TESTS_DIR/tracefs" -o "$WORK/files/$(basename "$f" .spec).dat" "$f" ||
			tap_bail "mktrace failed on $f"
	done
	cp "$SEEDS"/real/host/agent-host-vmx-v7-zstd.dat "$SEEDS"/real/guest/agent-guest-vmx-v7-zstd.dat \
		"$WORK/files/" || tap_bail "the agent seeds are missing from $SEEDS/real"
	# An argument list names its trace files by paths from the top of the
	# tree (args/inputs/); they are not inputs of their own.
	cd "$TOP_DIR" || tap_bail "cannot enter $TOP_DIR"
	inputs=$(find "$REGRESSIONS" -path '*/inputs' -prune -o -type f ! -name '*.txt' ! -name '*.expect' -print | sort)
	tap_plan "$(grep -c . <<<"$inputs")"
	for f in $inputs; do
		role=$(basename "$(dirname "$f")")
		replay "$role" "$f"
	done
	tap_finished
}

main "$@"
