#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tsc_loads_test.sh: 100 loads of test_kvm_tsc in a row all pass and leave no memory behind: Slab and VmallocUsed stay within noise, kmemleak (where the kernel has it) finds nothing new.

# shellcheck source-path=SCRIPTDIR source=test_module_lib.sh
. "$(dirname "$0")/test_module_lib.sh"

readonly LOADS=100
readonly WARMUP=10
# kB each load may add on average after the warm-up, to Slab and to
# VmallocUsed alike: a load creates a VM and runs its vCPUs' guests, and a
# VM or vCPU left behind costs over ten times this in either counter.
readonly KB_PER_LOAD=4

# Reclaimable caches out of the way, so that what remains is what stays.
settle_memory()
{
	sync
	echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
	return 0
}

load_unload()
{
	load_test_module "" && unload_test_module
}

run_all_loads()
{
	local start

	start=$(date +%s)
	DONE=$(repeat_until_failure load_unload 0 "$WARMUP")
	settle_memory
	SLAB_BEFORE=$(meminfo_kb Slab)
	VMALLOC_BEFORE=$(meminfo_kb VmallocUsed)
	[ "$DONE" = "$WARMUP" ] && DONE=$(repeat_until_failure load_unload "$WARMUP" "$LOADS")
	settle_memory
	SLAB_AFTER=$(meminfo_kb Slab)
	VMALLOC_AFTER=$(meminfo_kb VmallocUsed)
	ktap_print_msg "$DONE loads in $(($(date +%s) - start)) s;" \
		"after $WARMUP and after $DONE: Slab $SLAB_BEFORE kB, $SLAB_AFTER kB;" \
		"VmallocUsed $VMALLOC_BEFORE kB, $VMALLOC_AFTER kB"
}

all_loads_pass()
{
	[ "$DONE" = "$LOADS" ] && ! is_loaded "$TEST_MODULE" && return 0
	ktap_print_msg "load $((DONE + 1)) failed:"
	print_module_ktap
	return 1
}

# GROWTH_KB stays below KB_PER_LOAD kB for each load after the warm-up.
within_noise()
{
	[ "$1" -lt $(((LOADS - WARMUP) * KB_PER_LOAD)) ]
}

start_test
require_test_module
ktap_set_plan 4
clean_up_on_exit clean_up_test_module
make_load_dir
mount_debugfs
clear_kmemleak
run_all_loads
ktap_test_result "$LOADS loads in a row pass all their checks and unload" all_loads_pass
# KASAN holds freed objects in a quarantine of up to 1/32 of memory, which
# the first ~80 loads fill and which then turns over by hundreds of kB: on
# a KASAN kernel (only its symbol table has KASAN's run-time calls) Slab
# measures that, so its check skips and kmemleak's counts.
if grep -q ' __asan_load8$' /proc/kallsyms 2>/dev/null; then
	ktap_test_skip "Slab grows by less than $KB_PER_LOAD kB a load after $WARMUP: KASAN's quarantine holds freed objects"
else
	ktap_test_result "Slab grows by less than $KB_PER_LOAD kB a load after $WARMUP" \
		within_noise $((SLAB_AFTER - SLAB_BEFORE))
fi
ktap_test_result "VmallocUsed grows by less than $KB_PER_LOAD kB a load after $WARMUP" \
	within_noise $((VMALLOC_AFTER - VMALLOC_BEFORE))
check_kmemleak
ktap_finished
