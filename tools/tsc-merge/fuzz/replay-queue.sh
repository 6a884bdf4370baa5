#!/bin/bash
# replay-queue.sh: replay every input of the last fuzzing campaign (queue, crashes, hangs) with the tool's sanitizer build and count what it reports.
#
# usage: replay-queue.sh BUILD_DIR [ROLE...]   (default: every role, fuzz/roles.sh)
#
# Each input runs through the tool's ASan build with the command line
# fuzz/driver.c gave it (no round trip), leaks detected as in make check's
# replay. Prints, per role, the inputs, their exit statuses and the runs
# that crashed, hung or reported, with each report's first lines; exits 1
# when there is any.

set -u

# shellcheck source-path=SCRIPTDIR source=../tests/dirs.sh
. "$(dirname "$0")/../tests/dirs.sh" "${1:?usage: replay-queue.sh BUILD_DIR [ROLE...]}"
shift
readonly MERGE=$BIN_DIR/asan/kvm-tsc-merge
readonly FILES=$BIN_DIR/fuzz/seeds/files
readonly OUT=$BIN_DIR/fuzz/replay-out
readonly TIME_LIMIT=10

# shellcheck source-path=SCRIPTDIR source=roles.sh
. "$FUZZ_SRC/roles.sh"
ROLES=${*:-$ROLES_ALL}

# replay_role ROLE: every saved input of ROLE; prints one summary line.
replay_role()
{
	local role=$1 out=$BIN_DIR/fuzz/out-$1 f status n=0 bad=0 ARGV
	local -A statuses=()

	# The argument role writes what its inputs name: from its own directory.
	cd "$BIN_DIR/fuzz/cwd-$role" 2>/dev/null || cd "$BIN_DIR/fuzz" || return 1
	# Every instance of the role: run-fuzz.sh's, and any secondary (-S).
	for f in "$out"/*/queue/id* "$out"/*/crashes/id* "$out"/*/hangs/id*; do
		[ -f "$f" ] || continue
		rm -rf "$OUT"
		mkdir -p "$OUT/sync"
		role_argv "$FILES" "$OUT" "$role" "$f"
		LSAN_OPTIONS=suppressions=$FUZZ_SRC/lsan.supp \
		ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			timeout "$TIME_LIMIT" "$MERGE" "${ARGV[@]}" >/dev/null 2>"$BIN_DIR/fuzz/replay.err"
		status=$?
		n=$((n + 1))
		statuses[$status]=$((${statuses[$status]:-0} + 1))
		if [ "$status" -ge 124 ] || grep -q "Sanitizer\|runtime error" "$BIN_DIR/fuzz/replay.err"; then
			bad=$((bad + 1))
			echo "$role: $f: exit $status"
			grep -m3 "ERROR\|runtime error\|#[0-3] " "$BIN_DIR/fuzz/replay.err" | sed 's/^/    /'
		fi
	done
	echo "$role: $n inputs replayed, exit statuses:$(for s in "${!statuses[@]}"; do printf ' %s:%s' "$s" "${statuses[$s]}"; done), $bad crashed, hung or reported"
	[ "$bad" = 0 ]
}

main()
{
	local role ret=0

	[ -x "$MERGE" ] || { echo "replay-queue.sh: $MERGE not built: make -C tools/tsc-merge" >&2; exit 1; }
	for role in $ROLES; do
		replay_role "$role" || ret=1
	done
	exit "$ret"
}

main
