#!/bin/sh
# vm-module-checks.sh: kvm_tsc_probe checks inside the test VM: its own selftest, KVM coming and going, load/unload cycles.
#
# Runs from /ktt under busybox sh, after guest-init.sh loaded kvm_amd;
# prints TAP and exits non-zero if a check failed. Leaves kvm_amd loaded
# and kvm_tsc_probe unloaded.

readonly MODULE=module/kvm_tsc_probe.ko
readonly DEBUGFS=/sys/kernel/debug/kvm_tsc_probe
readonly CYCLES=100
readonly WARMUP=10
readonly EVENTS="kvm_write_tsc_offset kvm_write_tsc_multiplier kvm_nested_tsc_offset"

. scripts/tap.sh

check_selftest()
{
	local rc=0

	insmod "$MODULE" selftest=1 || { echo "# insmod selftest=1 failed"; return 1; }
	echo "# selftest: $(cat $DEBUGFS/selftest)"
	grep -q '^passed: 9 violations counted' $DEBUGFS/selftest || rc=1
	rmmod kvm_tsc_probe || rc=1
	return $rc
}

# Every TSC tracepoint shows WHERE ("kvm" or "waiting") in the attached file.
expect_attached()
{
	local where=$1 event

	for event in $EVENTS; do
		grep -qx "$event $where" $DEBUGFS/attached && continue
		echo "# $event: expected '$where', attached says:"
		sed 's/^/#   /' $DEBUGFS/attached
		return 1
	done
}

check_kvm_comes_and_goes()
{
	local rc=0

	rmmod kvm_amd kvm || return 1
	insmod "$MODULE" || return 1
	expect_attached waiting || rc=1
	modprobe kvm_amd nested=1 && expect_attached kvm || rc=1
	rmmod kvm_amd kvm && expect_attached waiting || rc=1
	modprobe kvm_amd nested=1 && expect_attached kvm || rc=1
	rmmod kvm_tsc_probe || rc=1
	return $rc
}

vmalloc_used_kb()
{
	sed -n 's/^VmallocUsed: *\([0-9]*\) kB$/\1/p' /proc/meminfo
}

load_unload()
{
	insmod "$MODULE" && rmmod kvm_tsc_probe
}

# The TSC writes of the VM that tsc_writer keeps running reach the module.
check_events_flow()
{
	local offsets

	insmod "$MODULE" || return 1
	sleep 1
	offsets=$(sed -n 's/^kvm_write_tsc_offset //p' $DEBUGFS/counters)
	TABLE_KB=$(($(sed -n 's/^table_bytes //p' $DEBUGFS/counters) / 1024))
	rmmod kvm_tsc_probe || return 1
	echo "# $offsets kvm_write_tsc_offset events in a second of tsc_writer"
	[ "${offsets:-0}" -gt 0 ]
}

# Cycles while a VM writes TSC values, so probes fire during (un)registration.
# VmallocUsed moves by a few pages from one cycle to the next whatever the
# module does (vmap stacks, module memory freed later); a leaked table
# would add its size at every cycle, so the growth over the cycles after a
# warm-up must stay below a quarter of what leaking one each time would add.
run_cycles()
{
	local before after i=0 start rc=0

	check_events_flow || { echo "# no TSC event reached the module"; return 1; }
	start=$(date +%s)
	while [ $i -lt $WARMUP ] && load_unload; do
		i=$((i + 1))
	done
	before=$(vmalloc_used_kb)
	while [ $i -lt $CYCLES ] && load_unload; do
		i=$((i + 1))
	done
	after=$(vmalloc_used_kb)
	echo "# $i load/unload cycles in $(($(date +%s) - start)) s; VmallocUsed $before kB after $WARMUP, $after kB after $i; table $TABLE_KB kB"
	[ $i = $CYCLES ] || { echo "# cycle $((i + 1)) failed"; rc=1; }
	[ $((after - before)) -lt $(((CYCLES - WARMUP) * TABLE_KB / 4)) ] ||
		{ echo "# vmalloc memory grows with the cycles"; rc=1; }
	! grep -q '^kvm_tsc_probe ' /proc/modules || { echo "# still loaded"; rc=1; }
	return $rc
}

check_load_cycles()
{
	local writer rc

	selftests/tsc_writer 600 >/dev/null &
	writer=$!
	run_cycles
	rc=$?
	kill -0 $writer 2>/dev/null || { echo "# tsc_writer died during the cycles"; rc=1; }
	kill $writer 2>/dev/null
	wait $writer 2>/dev/null
	return $rc
}

echo "TAP version 13"
echo "1..3"
check_selftest
tap_result $? "kvm_tsc_probe selftest=1: the validator counts exactly the 9 planted violations"
check_kvm_comes_and_goes
tap_result $? "kvm_tsc_probe attaches when kvm.ko loads after it and waits when kvm.ko goes"
check_load_cycles
tap_result $? "$CYCLES load/unload cycles while a VM writes TSC values leave no memory behind"
exit $TAP_FAILED
