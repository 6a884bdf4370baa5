#!/bin/bash
# e2e-test.sh: KTAP test of real host and guest recordings: record each scenario in the test VM, then judge the traces and kvm-tsc-merge's outputs with e2e-check.
#
# usage: e2e-test.sh [--vmm qemu|bochs] [--dir DIR] [--set KEY=VALUE]... SCENARIO...
#
# Fills DIR-root with guest-root.sh and boots the test VM (L0, one CPU:
# the user guide says why) under --vmm (default qemu) in --dir (default
# build/vmtest-e2e), where scripts/e2e/record-pair.sh records every
# SCENARIO (scripts/e2e/scenarios/MODE.scenario) into DIR/export/MODE.
# --set changes a key in every scenario (the Bochs run gives L1 a TSC rate
# of its own through TSC scaling: --set l1_tsc_khz=1750000); the changed
# copies, in DIR-root/e2e/scenarios, are what every level and e2e-check
# read. A run that failed in a guest, or a test VM stopped at its timeout
# or after its silence, is booted once more, as the TAP says: under TCG a
# guest can crash or stall for reasons that are the emulator's.
# e2e-check (tools/e2e-check) then prints the TAP. Exit status: 0 all
# passed, 1 a failure, 4 skipped.

set -u

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly USAGE="usage: ${0##*/} [--vmm qemu|bochs] [--dir DIR] [--set KEY=VALUE]... SCENARIO..."
readonly CHECK=$BUILD_DIR/tools/e2e-check
readonly ATTEMPTS=2
# Time for the test VM's own boot and the copies, beyond its guests'.
readonly L0_TIMEOUT=300

VMM=qemu
VM_DIR=$BUILD_DIR/vmtest-e2e
SETS=()

# The scenarios as every level reads them: each SCENARIO with --set's
# keys changed, in DIR-root/e2e/scenarios. A --set of a key the scenario
# lacks is an error, not a new key.
write_scenarios()
{
	local scenario set dest

	mkdir -p "$VM_DIR-root/e2e/scenarios"
	for scenario in "$@"; do
		dest=$VM_DIR-root/e2e/scenarios/${scenario##*/}
		cp "$scenario" "$dest" || die "cannot read $scenario"
		for set in "${SETS[@]}"; do
			grep -q "^${set%%=*}=" "$dest" || die "--set $set: $scenario has no ${set%%=*}"
			sed -i "s/^${set%%=*}=.*/$set/" "$dest"
		done
	done
}

# The sum of KEY over the scenarios written.
sum_key()
{
	cat "$VM_DIR"-root/e2e/scenarios/*.scenario | sed -n "s/^$1=//p" | paste -sd+ | bc
}

# The scenarios' silence limit for L0, on the wall's clock, where vmtest.sh
# keeps it: Bochs runs the test VM and its clock (clock: sync=none) some
# ten times slower than TCG, so there the limit is five times longer.
l0_silence()
{
	local silence

	silence=$(sed -n 's/^silence=//p' "$VM_DIR"-root/e2e/scenarios/*.scenario | sort -n | tail -1)
	[ "$VMM" = bochs ] && silence=$((silence * 5))
	echo "$silence"
}

boot_vm()
{
	"$TOP_DIR/scripts/vm/vmtest.sh" --vmm "$VMM" --dir "$VM_DIR" --cpus 1 \
		--timeout $((L0_TIMEOUT + $(sum_key l1_timeout))) --silence "$(l0_silence)" \
		--add "$VM_DIR-root" --files "scripts tools/record-host" -- \
		sh scripts/e2e/record-pair.sh "${SCENARIOS[@]}" >"$VM_DIR.log" 2>&1
}

# Boot until the recordings are made, ATTEMPTS times at most: 0, 4 with
# the VM's "# SKIP" line, or the last attempt's status.
record()
{
	local attempt=1 status

	while :; do
		boot_vm
		status=$?
		sed 's/^/# /' "$VM_LOG"
		[ "$status" = 0 ] || [ "$status" = 4 ] || [ "$attempt" = "$ATTEMPTS" ] && return "$status"
		grep -q "step '\(boot\|run\)' failed\|the VM did not finish within\|the VM printed nothing for" "$VM_LOG" ||
			return "$status"
		echo "# attempt $attempt of $ATTEMPTS failed: $(grep -o "step '[a-z]*' failed: .*\|the VM did not finish within [0-9]*s\|the VM printed nothing for [0-9]*s" "$VM_LOG" | tail -1); booting the test VM again"
		attempt=$((attempt + 1))
	done
}

main()
{
	local linux=() scenario checked=() status

	while [ $# -gt 0 ]; do
		case $1 in
		--vmm) VMM=${2:?--vmm needs qemu or bochs}; shift ;;
		--dir) VM_DIR=$(realpath -m "${2:?--dir needs a directory}"); shift ;;
		--set) SETS+=("${2:?--set needs KEY=VALUE}"); shift ;;
		-*) die "$USAGE" ;;
		*) break ;;
		esac
		shift
	done
	[ $# -gt 0 ] || die "$USAGE"
	[ -x "$CHECK" ] || die "$CHECK not built: make -C tools/e2e-check"
	readonly VM_LOG=$VM_DIR.log
	grep -q '^mode=linux-n$' "$@" && linux=(--linux)
	"$TOP_DIR/scripts/e2e/guest-root.sh" "${linux[@]}" "$VM_DIR-root" || die "guest-root.sh failed"
	write_scenarios "$@"
	SCENARIOS=()
	for scenario in "$@"; do
		SCENARIOS+=("/e2e/scenarios/${scenario##*/}")
		checked+=("$VM_DIR-root/e2e/scenarios/${scenario##*/}")
	done
	record
	status=$?
	if [ "$status" = 4 ]; then
		echo "1..0 # SKIP $(sed -n 's/^# SKIP //p' "$VM_LOG" | head -1)"
		exit 4
	fi
	[ "$status" = 0 ] || echo "# the recordings exited with status $status"
	exec "$CHECK" -o "$VM_DIR/check" "$VM_DIR/export" "${checked[@]}"
}

main "$@"
