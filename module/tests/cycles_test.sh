#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# cycles_test.sh: 100 kvm_tsc_probe load/unload cycles while a VM writes TSC values leave no memory behind.
#
# tsc_writer (from the kvm-tsc-trace collection) keeps a VM writing
# IA32_TSC, so probes fire while they are registered and unregistered.

# 'local' is not POSIX, but ktap_helpers.sh needs it too, and busybox ash,
# dash and bash all have it.
# shellcheck disable=SC3043

set -u

TEST_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=probe_lib.sh
. "$TEST_DIR/probe_lib.sh"

readonly CYCLES=100
readonly WARMUP=10
readonly WRITER_SECONDS=600
WRITER_PID=
TABLE_KB=0
LOADED=0

vmalloc_used_kb()
{
	sed -n 's/^VmallocUsed: *\([0-9]*\) kB$/\1/p' /proc/meminfo
}

load_unload()
{
	insmod "$PROBE_KO" && rmmod "$PROBE"
}

start_writer()
{
	"$TSC_WRITER" "$WRITER_SECONDS" >/dev/null &
	WRITER_PID=$!
}

writer_alive()
{
	kill -0 "$WRITER_PID" 2>/dev/null
}

stop_writer()
{
	kill "$WRITER_PID" 2>/dev/null
	wait "$WRITER_PID" 2>/dev/null
	WRITER_PID=
}

# The writer's TSC writes reach the module: count them for a second. The
# table's size, read meanwhile, sets what a leak per cycle would add.
events_reach_probe()
{
	local offsets

	insmod "$PROBE_KO" || { print_probe_messages; ktap_exit_fail_msg "cannot load $PROBE_KO"; }
	sleep 1
	offsets=$(sed -n 's/^kvm_write_tsc_offset //p' "$DEBUGFS/counters")
	TABLE_KB=$(($(sed -n 's/^table_bytes //p' "$DEBUGFS/counters") / 1024))
	unload_probe || ktap_exit_fail_msg "cannot unload $PROBE"
	ktap_print_msg "${offsets:-0} kvm_write_tsc_offset events in a second of tsc_writer"
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
	before=$(vmalloc_used_kb)
	[ "$LOADED" = "$WARMUP" ] && LOADED=$(repeat_until_failure load_unload "$WARMUP" "$CYCLES")
	after=$(vmalloc_used_kb)
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

# However the test ends: no writer left running, no probe left loaded.
clean_up()
{
	if [ -n "$WRITER_PID" ]; then
		stop_writer
	fi
	unload_if_loaded "$PROBE"
}

start_test
require_probe_ko
require_probe_unloaded
require_debugfs
require_dev_kvm
[ -x "$TSC_WRITER" ] || skip_all "$TSC_WRITER is missing: install the kvm-tsc-trace collection beside this one, or set TSC_WRITER"
ktap_set_plan 4
trap clean_up EXIT
trap 'exit 1' INT TERM
start_writer
ktap_test_result "TSC writes of tsc_writer's VM reach $PROBE" events_reach_probe
cycle
ktap_test_result "$CYCLES load/unload cycles succeed and leave $PROBE unloaded" cycles_done
ktap_test_result "VmallocUsed grows by less than a quarter table per cycle after $WARMUP" memory_stays
ktap_test_result "tsc_writer keeps running through the cycles" writer_alive
ktap_finished
