#!/bin/bash
# demo-merge.sh: the second half of `make demo`: record a real host + guest trace pair in the test VM and show kvm-tsc-merge's timeline of it.
#
# The test VM records itself as a KVM host (tools/record-host/record-host.sh)
# while a Linux guest runs under QEMU/KVM in it and sets its IA32_TSC 10^12
# cycles ahead (scripts/e2e/record-pair.sh, scenario own).

set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly VM_DIR=$BUILD_DIR/demo
readonly EXPORT=$VM_DIR/export/own
readonly MERGE=$BUILD_DIR/tools/kvm-tsc-merge
readonly TIMELINE=$VM_DIR/timeline.txt
readonly JSON=$VM_DIR/timeline.json
readonly SUMMARY=$VM_DIR/summary.txt

record()
{
	note "recording a host + guest trace pair in the test VM (about a minute)"
	{
		scripts/e2e/guest-root.sh "$VM_DIR-root" &&
			mkdir -p "$VM_DIR-root/e2e/scenarios" &&
			cp scripts/e2e/scenarios/own.scenario "$VM_DIR-root/e2e/scenarios/" &&
			scripts/vm/vmtest.sh --dir "$VM_DIR" --cpus 1 --add "$VM_DIR-root" -- \
				sh scripts/e2e/record-pair.sh /e2e/scenarios/own.scenario
	} >"$VM_DIR.log" 2>&1 ||
		die "the nested recording failed (under TCG the nested guest sometimes does; run 'make demo' again): $VM_DIR.log"
}

# Each vCPU's TSC write (an offset that changes) and the events around it.
show_writes()
{
	local n

	awk '/kvm_write_tsc_offset: / {
			split($0, f, /prev=| next=/)
			if (f[2] != f[3]) print NR
		}' "$TIMELINE" | while read -r n; do
		echo "..."
		sed -n "$((n - 1)),$((n + 2))p" "$TIMELINE" | cut -c1-150
	done
}

# Each marker with the host's exit for the port write the guest made right
# after it: adjacent on the vCPU, before and after the TSC write alike.
show_markers()
{
	awk '/ktt-marker/ { split($0, f, "cpu="); pending[f[2] + 0] = $0; next }
	     / kvm_exit: vcpu [0-9]+ reason io .*info1 0x000000004b1d0010/ {
		split($0, f, "vcpu "); cpu = f[2] + 0
		if (cpu in pending) {
			print substr(pending[cpu], 1, 110)
			print substr($0, 1, 110) " ..."
			delete pending[cpu]
		}
	     }' "$TIMELINE"
}

main()
{
	local status=0

	[ -x "$MERGE" ] || die "$MERGE not built: run 'make tools'"
	mkdir -p "$VM_DIR"
	record
	# Status 3 still wrote everything; the summary says which events.
	"$MERGE" --quiet -H "$EXPORT/host.dat" -g guest="$EXPORT/guest.dat" \
		-k "$(host_tsc_khz)" -F time,source,cpu,event,info -o "$TIMELINE" -j "$JSON" \
		-s "$SUMMARY" || status=$?
	[ "$status" = 0 ] || [ "$status" = 3 ] || die "kvm-tsc-merge failed with status $status"
	cat "$SUMMARY"
	echo
	echo "Merged timeline (host time in seconds), around each vCPU's TSC write:"
	show_writes
	echo
	echo "Each guest marker and the host's exit for the port write that follows it:"
	show_markers
	echo
	note "timeline: $TIMELINE ($(wc -l <"$TIMELINE") events)"
	note "Chrome JSON for the Perfetto UI or chrome://tracing: $JSON"
}

main "$@"
