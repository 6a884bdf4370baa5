# SPDX-License-Identifier: GPL-2.0
# probe_lib.sh: what the module tests share: where kvm_tsc_probe, tsc_writer and debugfs are, the checks that skip a test, and the set-up and clean-up steps the tests repeat (POSIX sh, sourced).

# shellcheck shell=sh
# shellcheck disable=SC2034 # the constants are for the tests that source this file

set -u

TEST_DIR=$(cd "$(dirname "$0")" && pwd)
readonly TEST_DIR
readonly PROBE=kvm_tsc_probe
readonly DEBUGFS_ROOT=/sys/kernel/debug
readonly DEBUGFS=$DEBUGFS_ROOT/$PROBE
readonly KMEMLEAK=$DEBUGFS_ROOT/kmemleak
# The installed collection holds the module next to the tests; tsc_writer's
# collection, kvm-tsc-trace, is beside it.
readonly PROBE_KO="${KVM_TSC_PROBE_KO:-$TEST_DIR/$PROBE.ko}"
readonly TSC_WRITER="${TSC_WRITER:-$TEST_DIR/../kvm-tsc-trace/tsc_writer}"
# The TSC tracepoints, as include/tsc_event_names.h names them.
readonly TSC_EVENTS="kvm_write_tsc_offset kvm_write_tsc_multiplier kvm_nested_tsc_offset"
# The vendor module, kvm_amd or kvm_intel, once require_kvm_vendor found it.
VENDOR=

# The installed copy first, then the kernel's kselftest directory that an
# install of the kernel's own collections puts at the root.
source_ktap_helpers()
{
	local f

	for f in "$TEST_DIR/ktap_helpers.sh" "$TEST_DIR/../kselftest/ktap_helpers.sh"; do
		# shellcheck source=/dev/null
		[ -r "$f" ] && { . "$f"; return; }
	done
	echo "Bail out! ktap_helpers.sh is neither in $TEST_DIR nor in $TEST_DIR/../kselftest"
	exit 1
}

# On the project's test kernels (KTT_TEST_KERNEL=1) everything a test needs
# is there: its absence is a failure, as in the C suite.
skip_all()
{
	[ "${KTT_TEST_KERNEL:-}" = 1 ] && ktap_exit_fail_msg "on the test kernel: $*"
	ktap_skip_all "$*"
	exit "$KSFT_SKIP"
}

is_loaded()
{
	grep -q "^$1 " /proc/modules
}

# Kernel messages about the probe, for when insmod or rmmod fails.
print_probe_messages()
{
	dmesg 2>/dev/null | grep "$PROBE" | tail -n 5 | sed 's/^/# dmesg: /'
}

unload_if_loaded()
{
	! is_loaded "$1" || rmmod "$1"
}

unload_probe()
{
	rmmod "$PROBE" || { print_probe_messages; return 1; }
}

mount_debugfs()
{
	grep -q " $DEBUGFS_ROOT debugfs " /proc/mounts ||
		mount -t debugfs debugfs "$DEBUGFS_ROOT" 2>/dev/null
}

# The probe's files live there.
require_debugfs()
{
	mount_debugfs || skip_all "debugfs is not mounted on $DEBUGFS_ROOT and cannot be"
}

# What a test that loads the probe itself needs: the module, not loaded by
# someone else (whose probe it must not take), and debugfs for its files.
require_probe()
{
	[ -r "$PROBE_KO" ] || skip_all "$PROBE_KO is missing: build the module and install it with the tests"
	! is_loaded "$PROBE" ||
		skip_all "$PROBE is already loaded by someone else: unload it first"
	require_debugfs
}

require_dev_kvm()
{
	[ -c /dev/kvm ] || skip_all "/dev/kvm is missing: no KVM on this machine"
}

# Sets VENDOR to the vendor module loaded, kvm_amd or kvm_intel, or skips.
require_kvm_vendor()
{
	for VENDOR in kvm_amd kvm_intel; do
		is_loaded "$VENDOR" && { ktap_print_msg "vendor module: $VENDOR"; return; }
	done
	skip_all "neither kvm_amd nor kvm_intel is loaded as a module"
}

load_kvm()
{
	modprobe "$VENDOR" nested=1
}

unload_kvm()
{
	rmmod "$VENDOR" kvm
}

# For the clean-up of a test that unloads KVM: leave it loaded, as found.
reload_kvm_if_gone()
{
	is_loaded "$VENDOR" || load_kvm || ktap_print_msg "cannot reload $VENDOR nested=1"
}

meminfo_kb()
{
	sed -n "s/^$1: *\([0-9]*\) kB$/\1/p" /proc/meminfo
}

# Runs COMMAND from run FROM until TO or its first failure; prints the count.
repeat_until_failure()
{
	local cmd="$1" i="$2" count="$3"

	while [ "$i" -lt "$count" ] && "$cmd"; do
		i=$((i + 1))
	done
	echo "$i"
}

# kmemleak reports an object once it is 5 s old and unreferenced at a scan.
kmemleak_finds_nothing()
{
	local nr

	sleep 6
	echo scan >"$KMEMLEAK"
	echo scan >"$KMEMLEAK"
	nr=$(grep -c '^unreferenced object' "$KMEMLEAK")
	[ "$nr" = 0 ] && return 0
	ktap_print_msg "$nr objects kmemleak suspects, the first:"
	head -n 20 "$KMEMLEAK" | sed 's/^/#   /'
	return 1
}

# Forget what kmemleak suspected before, so that only new reports count.
clear_kmemleak()
{
	[ -w "$KMEMLEAK" ] || return 0
	echo scan >"$KMEMLEAK"
	echo clear >"$KMEMLEAK"
}

# One result: kmemleak's new suspects, or a skip where the kernel has none.
check_kmemleak()
{
	if [ -w "$KMEMLEAK" ]; then
		ktap_test_result "kmemleak finds no new leak" kmemleak_finds_nothing
	else
		ktap_test_skip "kmemleak finds no new leak: this kernel has no kmemleak"
	fi
}

# Prints the KTAP header and skips unless modules can be loaded at all.
start_test()
{
	source_ktap_helpers
	ktap_print_header
	[ "$(id -u)" = 0 ] || skip_all "must run as root: it loads and unloads kernel modules"
	[ -r /proc/modules ] || skip_all "this kernel cannot load modules: /proc/modules is missing"
}

# CLEAN_UP, a command line, runs however the test ends, INT and TERM too.
clean_up_on_exit()
{
	# The command is meant to expand now.
	# shellcheck disable=SC2064
	trap "$1" EXIT
	trap 'exit 1' INT TERM
}
