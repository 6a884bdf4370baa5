#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# watch_test.sh: kvm_tsc_probe, loaded before the other collections ran, counted no violation over them; unload it.
#
# Runs first in its collection, last of all collections: whoever runs the
# collections inserts the probe before all of them, and this test reports
# what it saw and unloads it for the tests after it.

# shellcheck source-path=SCRIPTDIR source=probe_lib.sh
. "$(dirname "$0")/probe_lib.sh"

counted_no_violation()
{
	grep -qx 'violations 0' "$DEBUGFS/counters"
}

start_test
is_loaded "$PROBE" || skip_all "$PROBE was not loaded while the suites ran"
require_debugfs
ktap_set_plan 2
sed 's/^/# counters: /' "$DEBUGFS/counters"
sed 's/^/# violation: /' "$DEBUGFS/violations"
ktap_test_result "$PROBE counted no violation over the suites that ran before it" \
	counted_no_violation
ktap_test_result "$PROBE unloads after watching them" unload_probe
ktap_finished
