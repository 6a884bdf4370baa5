#!/bin/sh
# demo-guest.sh: what `make demo` runs inside the test VM: show the TSC events of a small real guest.

echo "Kernel $(uname -r), trace clocks: $(cat /sys/kernel/tracing/trace_clock)"
echo
exec selftests/tsc_guest_demo
