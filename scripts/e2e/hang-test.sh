#!/bin/bash
# hang-test.sh: KTAP test of record-pair.sh's silence limit: a guest made to hang is stopped and reported with its console's last lines.
#
# usage: hang-test.sh [SILENCE]
#
# Boots the test VM (L0) with scenario own, its silence set to SILENCE
# seconds (default 30), and runs record-pair.sh there; once L1 has begun
# to run its /init, L1's QEMU is stopped with SIGSTOP, as a guest stalled
# under TCG stops. record-pair.sh must fail within SILENCE seconds and a
# poll's more, naming the silence and showing L1's console, and leave no
# QEMU behind.

set -u

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly SILENCE=${1:-30}
readonly VM_DIR=$BUILD_DIR/e2e-hang
# What L0 runs: record-pair.sh, L1's QEMU stopped once /init runs, and
# how long record-pair.sh took from then.
# shellcheck disable=SC2016 # expanded in L0
readonly PAYLOAD='sh scripts/e2e/record-pair.sh /e2e/scenarios/own.scenario & pid=$!
until grep -q "Run /init" /tmp/e2e/own/console.log 2>/dev/null; do sleep 1; done
kill -STOP $(pidof qemu-system-x86_64)
start=$(cut -d. -f1 /proc/uptime)
wait $pid
echo "hang-test: record-pair.sh exited with status $? after $(($(cut -d. -f1 /proc/uptime) - start)) s"
pidof qemu-system-x86_64 && echo "hang-test: a QEMU was left behind"
exit 0'

main()
{
	local out took

	use_ktap
	ktap_print_header
	ktap_set_plan 1
	"$TOP_DIR/scripts/e2e/guest-root.sh" "$VM_DIR-root" || die "guest-root.sh failed"
	mkdir -p "$VM_DIR-root/e2e/scenarios"
	sed "s/^silence=.*/silence=$SILENCE/" "$TOP_DIR/scripts/e2e/scenarios/own.scenario" \
		>"$VM_DIR-root/e2e/scenarios/own.scenario"
	out=$("$TOP_DIR/scripts/vm/vmtest.sh" --dir "$VM_DIR" --cpus 1 --add "$VM_DIR-root" \
		--files "scripts tools/record-host" -- "$PAYLOAD" 2>&1)
	sed 's/^/# /' <<<"$out"
	took=$(sed -n 's/^hang-test: record-pair.sh exited with status 1 after \([0-9]*\) s$/\1/p' <<<"$out")
	if [ -n "$took" ] && [ "$took" -le $((SILENCE + 5)) ] &&
		grep -q "the guest printed nothing for ${SILENCE}s; the last lines of its console:" <<<"$out" &&
		grep -A1 'the last lines of its console:' <<<"$out" | grep -q '^    ' &&
		! grep -q 'a QEMU was left behind' <<<"$out"; then
		ktap_test_pass "a guest stopped with SIGSTOP is reported ${took:-?} s later, within its ${SILENCE} s silence and a poll, with its console's tail, and no QEMU is left"
	else
		ktap_test_fail "a guest stopped with SIGSTOP is reported within its ${SILENCE} s silence and a poll, with its console's tail, and no QEMU is left"
	fi
	ktap_finished
}

main "$@"
