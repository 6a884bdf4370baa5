#!/bin/bash
# e2e-test.sh: KTAP test of real host and guest recordings: record each scenario in the test VM, then judge the traces and kvm-tsc-merge's outputs with e2e-check.
#
# usage: e2e-test.sh --root DIR [--vmm qemu|bochs] [--kernel KERNEL] [--dir DIR] [--set KEY=VALUE]... [--hang] SCENARIO...
#
# Boots the test VM (L0, one CPU: the user guide says why) under --vmm
# (default qemu) on --kernel (vmtest.sh's: default the test kernel, or a
# distribution kernel's unpacked root) in --dir (default
# build/vmtest-e2e), with the guests' root that guest-root.sh filled in
# --root, where record-pair.sh records every SCENARIO
# (scripts/e2e/scenarios/MODE.scenario) into
# DIR/export/MODE; e2e-check (tools/e2e-check) then prints the TAP. --set
# changes a key in every scenario (the Bochs run gives L1 a TSC rate of its
# own through TSC scaling: --set l1_tsc_khz=1750000). --hang tests the
# silence limit instead, on the one SCENARIO's L1 stopped as a guest
# stalled under TCG stops. Exit status: 0 all passed, 1 a failure, 4 skipped.

# shellcheck disable=SC2154 # the scenario's keys, which read_scenario sets
set -u

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=scenario.sh
. "$(dirname "$0")/scenario.sh"

readonly USAGE="usage: ${0##*/} --root DIR [--vmm qemu|bochs] [--kernel KERNEL] [--dir DIR] [--set KEY=VALUE]... [--hang] SCENARIO..."
readonly CHECK=$BUILD_DIR/tools/e2e-check
readonly ATTEMPTS=2
# Time for the test VM's own boot and the copies, beyond its guests'.
readonly L0_TIMEOUT=300
# What --hang allows beyond the silence for record-pair.sh's polls, which
# run under TCG in the one-CPU test VM: 2 to 4 s on a quiet machine, 8 s
# measured with the machine's two cores oversubscribed.
readonly POLL_SLACK=15

ROOT=
VMM=qemu
KERNEL='test'
VM_DIR=$BUILD_DIR/vmtest-e2e
HANG=
SETS=()

# The scenarios as every level reads them: each SCENARIO with --set's
# keys changed, in DIR-scenarios/e2e/scenarios, their paths in SCENARIOS.
# A --set of a key the scenario lacks is an error, not a new key.
write_scenarios()
{
	local scenario set dest

	rm -rf "$VM_DIR-scenarios"
	mkdir -p "$VM_DIR-scenarios/e2e/scenarios"
	SCENARIOS=()
	for scenario in "$@"; do
		dest=$VM_DIR-scenarios/e2e/scenarios/${scenario##*/}
		cp "$scenario" "$dest" || die "cannot read $scenario"
		for set in "${SETS[@]}"; do
			grep -q "^${set%%=*}=" "$dest" || die "--set $set: $scenario has no ${set%%=*}"
			sed -i "s/^${set%%=*}=.*/$set/" "$dest"
		done
		SCENARIOS+=("$dest")
	done
}

# The test VM's timeout, its own and every scenario's l1_timeout, and its
# silence limit, on the wall's clock, where vmtest.sh keeps them: twice
# the scenarios' longest, as L0 prints its guest's console only every
# 30 s and a quiet guest only after the guest's own silence; five times
# under Bochs, which runs the test VM and its clock (clock: sync=none)
# some ten times slower than TCG.
set_vm_limits()
{
	local scenario scale=2

	TIMEOUT=$L0_TIMEOUT SILENCE=0
	for scenario in "${SCENARIOS[@]}"; do
		read_scenario "$scenario" || die "cannot read $scenario"
		TIMEOUT=$((TIMEOUT + l1_timeout))
		[ "$silence" -le "$SILENCE" ] || SILENCE=$silence
	done
	[ "$VMM" != bochs ] || scale=5
	SILENCE=$((SILENCE * scale))
}

# The test VM, running COMMAND... with the guests' root and the scenarios
# (in its /e2e/scenarios) added.
boot_vm()
{
	"$TOP_DIR/scripts/vm/vmtest.sh" --vmm "$VMM" --kernel "$KERNEL" --dir "$VM_DIR" --cpus 1 \
		--timeout "$TIMEOUT" --silence "$SILENCE" --add "$ROOT" --add "$VM_DIR-scenarios" \
		--files "scripts tools/record-host" -- "$@" >"$VM_LOG" 2>&1
}

# Boot until the recordings are made, ATTEMPTS times at most (under TCG a
# guest can crash or stall for reasons that are the emulator's): 0, 4 with
# the VM's "# SKIP" line, or the last attempt's status.
record()
{
	local attempt status

	for attempt in $(seq "$ATTEMPTS"); do
		boot_vm sh scripts/e2e/record-pair.sh "${SCENARIOS[@]#"$VM_DIR-scenarios"}"
		status=$?
		sed 's/^/# /' "$VM_LOG"
		[ "$status" = 0 ] || [ "$status" = 4 ] || [ "$attempt" = "$ATTEMPTS" ] && return "$status"
		grep -q "step '\(boot\|run\)' failed\|the VM did not finish within\|the VM printed nothing for" "$VM_LOG" ||
			return "$status"
		echo "# attempt $attempt of $ATTEMPTS failed: $(grep -o "step '[a-z]*' failed: .*\|the VM did not finish within [0-9]*s\|the VM printed nothing for [0-9]*s" "$VM_LOG" | tail -1); booting the test VM again"
	done
}

test_recordings()
{
	local status

	[ -x "$CHECK" ] || die "$CHECK not built: make -C tools/e2e-check"
	record
	status=$?
	if [ "$status" = 4 ]; then
		echo "1..0 # SKIP $(sed -n 's/^# SKIP //p' "$VM_LOG" | head -1)"
		exit 4
	fi
	[ "$status" = 0 ] || echo "# the recordings exited with status $status"
	exec "$CHECK" -o "$VM_DIR/check" "$VM_DIR/export" "${SCENARIOS[@]}"
}

# What L0 runs with --hang for SCENARIO (its path there) of MODE:
# record-pair.sh, L1's QEMU stopped with SIGSTOP once L1 has said "ready"
# (a failure before that is not the hang tested), and how long
# record-pair.sh took from then.
hang_payload()
{
	cat <<-EOF
		sh scripts/e2e/record-pair.sh $1 & pid=\$!
		while kill -0 \$pid && [ ! -e /tmp/e2e/$2/share/ready ]; do sleep 1; done
		[ -e /tmp/e2e/$2/share/ready ] && kill -STOP \$(pidof qemu-system-x86_64) && echo "hang: L1 stopped once ready"
		start=\$(cut -d. -f1 /proc/uptime)
		wait \$pid
		echo "hang: record-pair.sh exited with status \$? after \$((\$(cut -d. -f1 /proc/uptime) - start)) s"
		pidof qemu-system-x86_64 && echo "hang: a QEMU was left behind"
		exit 0
	EOF
}

test_hang()
{
	local what took

	[ ${#SCENARIOS[@]} = 1 ] || die "--hang takes one scenario"
	read_scenario "${SCENARIOS[0]}" || die "cannot read ${SCENARIOS[0]}"
	what="a guest stopped with SIGSTOP is reported within its ${silence} s silence and ${POLL_SLACK} s, with its console's tail, and no QEMU is left"
	use_ktap
	ktap_print_header
	ktap_set_plan 1
	boot_vm "$(hang_payload "${SCENARIOS[0]#"$VM_DIR-scenarios"}" "$mode")"
	sed 's/^/# /' "$VM_LOG"
	took=$(sed -n 's/^hang: record-pair.sh exited with status 1 after \([0-9]*\) s$/\1/p' "$VM_LOG")
	if grep -q '^hang: L1 stopped once ready$' "$VM_LOG" && [ -n "$took" ] && [ "$took" -le $((silence + POLL_SLACK)) ] &&
		grep -q "the guest printed nothing for ${silence}s; the last lines of its console:" "$VM_LOG" &&
		grep -A1 'the last lines of its console:' "$VM_LOG" | grep -q '^    ' &&
		! grep -q 'a QEMU was left behind' "$VM_LOG"; then
		ktap_test_pass "$what: $took s"
	else
		ktap_test_fail "$what"
	fi
	ktap_finished
}

main()
{
	while [ $# -gt 0 ]; do
		case $1 in
		--root) ROOT=$(realpath -m "${2:?--root needs guest-root.sh\'s directory}"); shift ;;
		--vmm) VMM=${2:?--vmm needs qemu or bochs}; shift ;;
		--kernel) KERNEL=${2:?--kernel needs test, debug or a kernel root}; shift ;;
		--dir) VM_DIR=$(realpath -m "${2:?--dir needs a directory}"); shift ;;
		--set) SETS+=("${2:?--set needs KEY=VALUE}"); shift ;;
		--hang) HANG=1 ;;
		-*) die "$USAGE" ;;
		*) break ;;
		esac
		shift
	done
	[ $# -gt 0 ] && [ -n "$ROOT" ] || die "$USAGE"
	[ -f "$ROOT/e2e/guest.cpio.gz" ] || die "$ROOT: not filled by scripts/e2e/guest-root.sh"
	readonly VM_LOG=$VM_DIR.log
	write_scenarios "$@"
	set_vm_limits
	if [ -n "$HANG" ]; then
		test_hang
	else
		test_recordings
	fi
}

main "$@"
