#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# validator_test.sh: kvm_tsc_probe selftest=1 counts exactly the 12 violations planted in its known event sequence.

# shellcheck source-path=SCRIPTDIR source=probe_lib.sh
. "$(dirname "$0")/probe_lib.sh"

readonly PLANTED=12

# A failed selftest fails the load, so the reason is in the kernel log.
selftest_counts_planted()
{
	local rc=0

	insmod "$PROBE_KO" selftest=1 || { print_probe_messages; return 1; }
	ktap_print_msg "selftest: $(cat "$DEBUGFS/selftest")"
	grep -q "^passed: $PLANTED violations counted" "$DEBUGFS/selftest" || rc=1
	unload_probe || rc=1
	return $rc
}

start_test
require_probe
ktap_set_plan 1
# If interrupted, still leave the probe unloaded for the tests after this one.
clean_up_on_exit "unload_if_loaded $PROBE"
ktap_test_result "$PROBE selftest=1 counts exactly the $PLANTED planted violations" \
	selftest_counts_planted
ktap_finished
