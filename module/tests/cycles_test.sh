#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# cycles_test.sh: kvm_tsc_probe under churn: load/unload cycles while two processes create and destroy VMs writing TSC values leave no memory behind, and 10000 VMs with it loaded keep its table at its cap with no violation.
#
# Two tsc_writer processes (from the kvm-tsc-trace collection) keep
# creating VMs, writing IA32_TSC on their vCPUs and destroying them, so
# probes fire while they are registered and unregistered. CHURN_CYCLES
# (default 100) and CHURN_VMS (default 10000) set the counts.

# shellcheck source-path=SCRIPTDIR source=probe_lib.sh
. "$(dirname "$0")/probe_lib.sh"
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/poll.sh # installed beside the tests
. "$(dirname "$0")/poll.sh"

readonly CYCLES="${CHURN_CYCLES:-100}"
readonly VMS="${CHURN_VMS:-10000}"
readonly WARMUP=10
readonly WRITER_SECONDS=3600
# As many VMs as the writers can make in their time: they churn until stopped.
readonly WRITER_VMS=1000000000
WRITER_PIDS=

load_unload()
{
	insmod "$PROBE_KO" && rmmod "$PROBE"
}

start_writers()
{
	local _

	for _ in 1 2; do
		"$TSC_WRITER" "$WRITER_SECONDS" "$WRITER_VMS" >/dev/null &
		WRITER_PIDS="$WRITER_PIDS $!"
	done
}

writers_alive()
{
	local pid

	for pid in $WRITER_PIDS; do
		kill -0 "$pid" 2>/dev/null || return 1
	done
}

stop_writers()
{
	local pid

	for pid in $WRITER_PIDS; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	WRITER_PIDS=
}

counter()
{
	sed -n "s/^$1 //p" "$DEBUGFS/counters"
}

offsets_counted()
{
	[ "$(counter kvm_write_tsc_offset)" -gt 0 ] 2>/dev/null
}

# The writers' TSC writes reach the module: wait up to 10 s for the first
# (a debug kernel can take more than a second to create a VM). The table's
# size, read meanwhile, sets what a leak per cycle would add.
events_reach_probe()
{
	local offsets

	insmod "$PROBE_KO" || { print_probe_messages; ktap_exit_fail_msg "cannot load $PROBE_KO"; }
	wait_until 10 offsets_counted
	offsets=$(counter kvm_write_tsc_offset)
	TABLE_KB=$(($(counter table_bytes) / 1024))
	unload_probe || ktap_exit_fail_msg "cannot unload $PROBE"
	ktap_print_msg "${offsets:-0} kvm_write_tsc_offset events from two tsc_writers"
	[ "${offsets:-0}" -gt 0 ]
}

# VmallocUsed moves by a few pages from one cycle to the next whatever the
# module does (vmap stacks, module memory freed later); a leaked table
# would add its size at every cycle, so the growth over the cycles after a
# warm-up must stay below a quarter of what leaking one each time would add.
cycle()
{
	local start before after

	start=$(date +%s)
	LOADED=$(repeat_until_failure load_unload 0 "$WARMUP")
	before=$(meminfo_kb VmallocUsed)
	[ "$LOADED" = "$WARMUP" ] && LOADED=$(repeat_until_failure load_unload "$WARMUP" "$CYCLES")
	after=$(meminfo_kb VmallocUsed)
	ktap_print_msg "$LOADED load/unload cycles in $(($(date +%s) - start)) s;" \
		"VmallocUsed $before kB after $WARMUP, $after kB after $LOADED; table $TABLE_KB kB"
	GROWTH=$((after - before))
}

cycles_done()
{
	[ "$LOADED" = "$CYCLES" ] || ktap_print_msg "cycle $((LOADED + 1)) failed"
	! is_loaded "$PROBE" || ktap_print_msg "$PROBE is still loaded"
	[ "$LOADED" = "$CYCLES" ] && ! is_loaded "$PROBE"
}

memory_stays()
{
	[ "$GROWTH" -lt $(((CYCLES - WARMUP) * TABLE_KB / 4)) ]
}

# VMS VMs of two vCPUs, the churning writers stopped: far more vCPUs than
# the probe's table holds, so it evicts.
vms_with_probe_loaded()
{
	local bytes start made

	insmod "$PROBE_KO" || { print_probe_messages; return 1; }
	bytes=$(counter table_bytes)
	start=$(date +%s)
	made=$("$TSC_WRITER" "$WRITER_SECONDS" "$VMS" | sed -n 's/.* in \([0-9]*\) VMs$/\1/p')
	ktap_print_msg "$made VMs in $(($(date +%s) - start)) s: table $bytes bytes at load," \
		"$(counter table_bytes) after; $(counter table_size) entries, $(counter evictions) evictions," \
		"$(counter violations) violations, $(counter kvm_write_tsc_offset) kvm_write_tsc_offset"
	[ "${made:-0}" = "$VMS" ] && [ "$(counter table_bytes)" = "$bytes" ] &&
		[ "$(counter violations)" = 0 ] && [ "$(counter evictions)" -gt 0 ]
}

start_test
require_probe
require_dev_kvm
[ -x "$TSC_WRITER" ] || skip_all "$TSC_WRITER is missing: install the kvm-tsc-trace collection beside this one, or set TSC_WRITER"
ktap_set_plan 6
clean_up_on_exit "stop_writers; unload_if_loaded $PROBE"
clear_kmemleak
start_writers
ktap_test_result "TSC writes of two VM-churning tsc_writers reach $PROBE" events_reach_probe
cycle
ktap_test_result "$CYCLES load/unload cycles succeed and leave $PROBE unloaded" cycles_done
ktap_test_result "VmallocUsed grows by less than a quarter table per cycle after $WARMUP" memory_stays
ktap_test_result "both tsc_writers keep creating VMs through the cycles" writers_alive
stop_writers
ktap_test_result "$VMS VMs with $PROBE loaded: its table stays as allocated, it evicts, no violation" \
	vms_with_probe_loaded
check_kmemleak
ktap_finished
