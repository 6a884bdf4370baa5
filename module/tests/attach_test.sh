#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# attach_test.sh: kvm_tsc_probe attaches to KVM's TSC tracepoints when kvm.ko loads after it, and waits when kvm.ko goes.

# shellcheck source-path=SCRIPTDIR source=probe_lib.sh
. "$(dirname "$0")/probe_lib.sh"

# Each TSC tracepoint shows "kvm" in the attached file if the first
# argument, a list of events, names it, else "waiting".
expect_attached()
{
	local kvm_events="${1:-}" event where

	for event in $TSC_EVENTS; do
		case " $kvm_events " in
		*" $event "*) where=kvm ;;
		*) where=waiting ;;
		esac
		grep -qx "$event $where" "$DEBUGFS/attached" && continue
		ktap_print_msg "$event: expected '$where', attached says:"
		sed 's/^/#   /' "$DEBUGFS/attached"
		return 1
	done
}

# Once kvm.ko is loaded, the probe attaches to each TSC tracepoint it has:
# a stock kvm.ko has kvm_write_tsc_offset alone.
kvm_comes()
{
	local events="" event

	load_kvm || return 1
	for event in $TSC_EVENTS; do
		[ -d "/sys/kernel/tracing/events/kvm/$event" ] && events="$events $event"
	done
	expect_attached "$events"
}

kvm_goes()
{
	unload_kvm && expect_attached
}

start_test
require_probe
require_kvm_vendor
ktap_set_plan 5
# Leave the probe unloaded and KVM loaded, as the test found them: the
# vendor module (kvm_amd or kvm_intel) reloaded with nested=1.
clean_up_on_exit "unload_if_loaded $PROBE; reload_kvm_if_gone"
unload_kvm || ktap_exit_fail_msg "cannot unload $VENDOR and kvm"
insmod "$PROBE_KO" || { print_probe_messages; ktap_exit_fail_msg "cannot load $PROBE_KO"; }
ktap_test_result "$PROBE loaded without kvm.ko waits for its tracepoints" expect_attached
ktap_test_result "$PROBE attaches when kvm.ko loads after it" kvm_comes
ktap_test_result "$PROBE waits again when kvm.ko goes" kvm_goes
ktap_test_result "$PROBE attaches again when kvm.ko comes back" kvm_comes
ktap_test_result "$PROBE unloads with kvm.ko loaded" unload_probe
ktap_finished
