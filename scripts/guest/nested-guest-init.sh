#!/bin/busybox sh
# nested-guest-init.sh: /init of the nested (L2) guest of the merge test: write port-tagged markers around a TSC write on every vCPU, traced by L2 itself (x86-tsc) or by trace-cmd's agent for the host's trace-cmd record -A, or run and trace a KVM guest of its own.
#
# vm-nested-trace.sh boots it inside the test VM (L1) with the test kernel.
# On every vCPU, each marker is a write to trace_marker immediately followed
# by a 1-byte write to MARKER_PORT, which no device of QEMU's pc machine,
# SeaBIOS or Linux uses. In L1's host trace that write is a kvm_exit of the
# same vCPU with SVM exit code 0x7b ("io") whose info1 holds the port in
# bits 31:16, so every marker has a host-side timestamp of its own to check a
# merged timeline against. Markers "before" are written, then every vCPU's
# IA32_TSC (MSR 0x10) jumps forward by TSC_JUMP through /dev/cpu/N/msr (L1's
# KVM traces the new offset with kvm_write_tsc_offset), then markers "after".
# A marker reads "ktt-marker PHASE cpu=N seq=K".
#
# ktt_mode on the kernel command line picks who records L2's trace: "self"
# (the default) traces with trace-cmd start -C x86-tsc and extracts the
# trace to /export/guest.dat; "agent" runs `trace-cmd agent` (vsock, a
# vhost-vsock-pci device from L1) for L1's `trace-cmd record -A`, which
# chooses the events and the clock and takes the trace over vsock when it
# stops: L2 writes its markers once that recording runs, and stays up until
# L1 says quit. "nested" makes L2 a KVM host in turn: it loads kvm_amd
# (kvm_intel under Bochs), traces itself as "self" does, with its KVM's
# events, and runs tsc_nested_payload, whose tiny guest (N) makes a ucall
# right after each rdtsc, a port exit that reaches L1's KVM first, and
# which writes each value N read into L2's trace as "ktt-n-marker cpu=C
# seq=K tsc=T"; half way, each of N's vCPUs jumps TSC_JUMP ahead, so that
# L2's KVM writes a new offset and L1's KVM a new one for N on L2's vCPU.
# ktt_n_vcpus and ktt_n_markers (default 1 and 50) are N's vCPUs and the
# markers of each; ktt_n_tsc_khz, when given, N's TSC rate (TSC scaling).
# "linux-n" makes L2 the host of a Linux guest (N): it loads KVM and runs
# vm-nested-trace.sh (nested-root.sh --linux puts it in /ktt) in its
# mode own, as L1 runs L2: record-host.sh records L2's trace from before N
# boots, and N, booting this initramfs without KVM, traces itself and
# writes its markers around its TSC jump; those files go to /export/own.
#
# Its other files go to /export, a directory of L1 shared over 9p. Serial
# ports: ttyS0 is the console; ttyS1 carries "ktt-l2-ready", then
# "ktt-l2-status N" once the markers are written (and, when L2 traced
# itself, its trace); ttyS2 brings "go" from L1 once L1 has read KVM's
# debugfs TSC offsets (and its recording runs), and in agent mode "quit"
# once L1's trace-cmd record has the guest's trace.

# shellcheck shell=dash # busybox sh, which has local
# shellcheck source-path=SCRIPTDIR source=../lib/poll.sh # where vmtest.sh puts it in L2's initramfs
. /lib/ktt/poll.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

readonly TRACEFS=/sys/kernel/tracing
readonly MARKER_PORT=0x4b1d
readonly TSC_JUMP=1000000000000
readonly MARKERS_PER_PHASE=3
readonly GO_TIMEOUT=300
# L1's trace-cmd record stops and takes the trace after the markers.
readonly QUIT_TIMEOUT=300
# trace-cmd agent listening, then the recording L1 starts running.
readonly AGENT_TIMEOUT=60
readonly MODE=${ktt_mode:-self}
readonly N_PAYLOAD=/usr/bin/tsc_nested_payload
readonly N_VCPUS=${ktt_n_vcpus:-1}
readonly N_MARKERS=${ktt_n_markers:-50}
readonly N_TSC_KHZ=${ktt_n_tsc_khz:-}
# Mode linux-n: N boots and runs three levels down, under TCG, every exit
# of N through L1's KVM and L2's; vm-nested-trace.sh's own timeouts are
# for a guest one level down.
readonly N_BOOT_TIMEOUT=1200
readonly N_RUN_TIMEOUT=900
AGENT_PID=
readonly OUT=/export
readonly OUT_TTY=/dev/ttyS1
readonly CTL_TTY=/dev/ttyS2

fail()
{
	echo "ktt-l2-error $*" >"$OUT_TTY"
	echo "nested-guest-init.sh: error: $*" >&2
	return 1
}

setup()
{
	/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
	/bin/busybox --install -s
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
	mount -t tmpfs tmpfs /tmp
	mount -t tracefs tracefs "$TRACEFS"
	# KVM's per-vCPU TSC offsets, which record-host.sh and
	# vm-nested-trace.sh read in mode linux-n.
	mount -t debugfs debugfs /sys/kernel/debug
	stty -F "$OUT_TTY" raw -echo
	stty -F "$CTL_TTY" raw -echo
	mkdir -p "$OUT"
	mount -t 9p -o trans=virtio,version=9p2000.L export "$OUT" ||
		fail "cannot mount L1's export directory on $OUT"
}

# Mode linux-n: N's run, as vm-nested-trace.sh in L1 runs L2 (its own
# timeouts raised), its output in n-run.log; its duration as L2's clock
# sees it.
run_linux_n()
{
	local t0 status=0

	t0=$(cut -d' ' -f1 /proc/uptime)
	(cd /ktt && KTT_L2_BOOT_TIMEOUT=$N_BOOT_TIMEOUT KTT_L2_RUN_TIMEOUT=$N_RUN_TIMEOUT \
		sh scripts/guest/vm-nested-trace.sh 1 own) >"$OUT/n-run.log" 2>&1 || status=$?
	echo "n_run_s $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.2f\n", b - a }')" \
		>>"$OUT/l2-info.txt"
	[ "$status" = 0 ] || { fail "vm-nested-trace.sh exited with status $status: $(tail -1 "$OUT/n-run.log")"; return 1; }
}

# Run on one vCPU (taskset): marker, then at once the port write.
write_markers()
{
	local cpu=$1 phase=$2 seq=1

	while [ "$seq" -le "$MARKERS_PER_PHASE" ]; do
		echo "ktt-marker $phase cpu=$cpu seq=$seq" >"$TRACEFS/trace_marker" || return 1
		dd if=/dev/zero of=/dev/port bs=1 seek=$((MARKER_PORT)) count=1 conv=notrunc 2>/dev/null ||
			return 1
		seq=$((seq + 1))
		sleep 0.1
	done
}

markers_on_all_cpus()
{
	local phase=$1 cpu=0

	while [ "$cpu" -lt "$NCPUS" ]; do
		taskset -c "$cpu" sh /init markers "$cpu" "$phase" ||
			{ fail "writing the '$phase' markers on cpu $cpu"; return 1; }
		cpu=$((cpu + 1))
	done
}

# Mode nested: L2 becomes a KVM host for N. Its CPU shows svm (QEMU) or
# vmx (Bochs) only when L1's KVM exposes nested virtualization to it.
load_kvm()
{
	local module

	if grep -qw svm /proc/cpuinfo; then
		module=kvm_amd
	elif grep -qw vmx /proc/cpuinfo; then
		module=kvm_intel
	else
		fail "L2's CPU has neither svm nor vmx: L1's KVM does not expose nested virtualization"
		return 1
	fi
	echo "kvm_module $module" >>"$OUT/l2-info.txt"
	modprobe "$module" >"$OUT/modprobe.log" 2>&1 ||
		{ fail "modprobe $module: $(tail -1 "$OUT/modprobe.log")"; return 1; }
	[ -c /dev/kvm ] || { fail "no /dev/kvm after modprobe $module: $(dmesg | grep -i kvm | tail -1)"; return 1; }
}

# N's run, its output in n-payload.log; its duration as L2's clock sees it
# (L2's own TSC does not jump in this mode, only N's).
run_payload()
{
	local t0 status=0

	[ -x "$N_PAYLOAD" ] ||
		{ fail "$N_PAYLOAD is not in L2's initramfs: 'make selftests' before nested-root.sh"; return 1; }
	t0=$(cut -d' ' -f1 /proc/uptime)
	"$N_PAYLOAD" -v "$N_VCPUS" -n "$N_MARKERS" -j "$TSC_JUMP" ${N_TSC_KHZ:+-k "$N_TSC_KHZ"} \
		>"$OUT/n-payload.log" 2>&1 || status=$?
	echo "n_run_s $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.2f\n", b - a }')" \
		>>"$OUT/l2-info.txt"
	[ "$status" = 0 ] || { fail "$N_PAYLOAD exited with status $status: $(tail -1 "$OUT/n-payload.log")"; return 1; }
}

read_tsc()
{
	dd if="/dev/cpu/$1/msr" bs=8 skip=2 count=1 2>/dev/null | od -A n -t u8 | tr -d ' '
}

# IA32_TSC (MSR 0x10, the 8-byte block at offset 16 of /dev/cpu/N/msr)
# written on vCPU N, as 8 little-endian bytes.
write_tsc()
{
	local cpu=$1 value=$2 bytes='' i=0

	while [ "$i" -lt 8 ]; do
		bytes="$bytes\\$(printf %03o $((value & 255)))"
		value=$((value >> 8))
		i=$((i + 1))
	done
	# shellcheck disable=SC2059
	printf "$bytes" | dd of="/dev/cpu/$cpu/msr" bs=8 seek=2 count=1 conv=notrunc 2>/dev/null
}

# One target for all vCPUs keeps their TSCs together (within the few
# milliseconds between the writes), so the guest's clock stays sane.
jump_tsc()
{
	local before target cpu=0

	before=$(read_tsc 0)
	[ -n "$before" ] || { fail "cannot read IA32_TSC through /dev/cpu/0/msr"; return 1; }
	target=$((before + TSC_JUMP))
	while [ "$cpu" -lt "$NCPUS" ]; do
		write_tsc "$cpu" "$target" || { fail "cannot write IA32_TSC through /dev/cpu/$cpu/msr"; return 1; }
		echo "cpu${cpu}_tsc_after_write $(read_tsc "$cpu")" >>"$OUT/l2-info.txt"
		cpu=$((cpu + 1))
	done
	echo "cpu0_tsc_before_write $before" >>"$OUT/l2-info.txt"
	echo "tsc_target $target" >>"$OUT/l2-info.txt"
}

# Mode self's events: the scheduler, and the guest's own view of the TSC
# write, when the kernel has the event.
self_events()
{
	local events="-e sched:sched_switch"

	[ -d "$TRACEFS/events/msr/write_msr" ] && events="$events -e msr:write_msr -f msr==0x10"
	echo "$events"
}

# Mode nested's: what L2's KVM does for N (its TSC offsets, and the
# series' other TSC events where this kernel has them; entries and exits),
# and task_newtask, which ties the payload's vCPU threads to the process
# whose thread created the vCPUs (and wrote their first multiplier and
# offset), as kvm-tsc-merge needs. The payload's markers, ftrace:print, are
# not named: the buffer records every trace_marker write while tracing is
# on, and trace-cmd 3.1.6 refuses the event, which has no enable file ("No
# events enabled with ftrace:print").
nested_events()
{
	local events="-e sched:sched_switch -e task:task_newtask -e kvm:kvm_write_tsc_offset -e kvm:kvm_entry -e kvm:kvm_exit" ev

	for ev in kvm_write_tsc_multiplier kvm_nested_tsc_offset; do
		[ -d "$TRACEFS/events/kvm/$ev" ] && events="$events -e kvm:$ev"
	done
	echo "$events"
}

start_tracing()
{
	# shellcheck disable=SC2086 # a list of trace-cmd options
	trace-cmd start -C x86-tsc $1 >"$OUT/trace-cmd-start.log" 2>&1 ||
		{ fail "trace-cmd start: $(tail -1 "$OUT/trace-cmd-start.log")"; return 1; }
	grep -q '\[x86-tsc\]' "$TRACEFS/trace_clock" ||
		{ fail "the trace clock is not x86-tsc: $(cat "$TRACEFS/trace_clock")"; return 1; }
}

# trace-cmd agent makes its vsock socket, listens and sleeps in accept():
# a socket among its descriptors and the process asleep. True as well once
# it is gone, which the caller tells apart.
agent_listening_or_gone()
{
	local fd

	kill -0 "$AGENT_PID" 2>/dev/null || return 0
	[ "$(cut -d' ' -f3 "/proc/$AGENT_PID/stat")" = S ] || return 1
	for fd in "/proc/$AGENT_PID/fd"/*; do
		case $(readlink "$fd") in socket:*) return 0 ;; esac
	done
	return 1
}

# The agent's recording for L1's trace-cmd record: it sets the events, then
# turns tracing on last (tracing_on was 0 until then: start_agent).
agent_recording()
{
	[ "$(cat "$TRACEFS/tracing_on")" = 1 ] &&
		[ "$(cat "$TRACEFS/events/sched/sched_switch/enable")" = 1 ]
}

start_agent()
{
	echo 0 >"$TRACEFS/tracing_on"
	trace-cmd agent >"$OUT/trace-cmd-agent.log" 2>&1 &
	AGENT_PID=$!
	wait_until "$AGENT_TIMEOUT" agent_listening_or_gone ||
		{ fail "trace-cmd agent did not listen within ${AGENT_TIMEOUT}s"; return 1; }
	kill -0 "$AGENT_PID" 2>/dev/null ||
		{ fail "trace-cmd agent exited: $(tail -1 "$OUT/trace-cmd-agent.log")"; return 1; }
}

# L1 reads KVM's debugfs offsets between "ready" and "go" (and in agent
# mode starts its trace-cmd record -A).
wait_for_go()
{
	local line

	echo "ktt-l2-ready uptime=$(cut -d' ' -f1 /proc/uptime)" >"$OUT_TTY"
	# shellcheck disable=SC3045 # busybox's read has -t, dash's has not
	read -r -t "$GO_TIMEOUT" line <&3 || { fail "no 'go' from L1 on $CTL_TTY within ${GO_TIMEOUT}s"; return 1; }
	[ "$line" = go ] || { fail "expected 'go' on $CTL_TTY, got '$line'"; return 1; }
}

# Agent mode: L1's trace-cmd record takes the trace from the agent when it
# stops, then L1 says quit.
wait_for_quit()
{
	local line

	# shellcheck disable=SC3045 # busybox's read has -t, dash's has not
	read -r -t "$QUIT_TIMEOUT" line <&3 || { fail "no 'quit' from L1 on $CTL_TTY within ${QUIT_TIMEOUT}s"; return 1; }
	[ "$line" = quit ] || { fail "expected 'quit' on $CTL_TTY, got '$line'"; return 1; }
}

run()
{
	NCPUS=$(nproc)
	{
		echo "mode $MODE"
		echo "cpus $NCPUS"
		if [ "$MODE" = nested ]; then
			echo "n_vcpus $N_VCPUS"
			echo "n_markers $N_MARKERS"
		else
			echo "marker_port $MARKER_PORT"
			echo "markers_per_phase $MARKERS_PER_PHASE"
		fi
		echo "tsc_jump $TSC_JUMP"
		echo "kernel $(uname -r)"
	} >"$OUT/l2-info.txt"
	case $MODE in
	self) start_tracing "$(self_events)" || return 1 ;;
	agent) start_agent || return 1 ;;
	nested) { load_kvm && start_tracing "$(nested_events)"; } || return 1 ;;
	linux-n) load_kvm || return 1 ;;
	*) fail "ktt_mode=$MODE: use self, agent, nested or linux-n"; return 1 ;;
	esac
	wait_for_go || return 1
	if [ "$MODE" = agent ]; then
		wait_until "$AGENT_TIMEOUT" agent_recording ||
			{ fail "L1's trace-cmd record did not start the agent's recording within ${AGENT_TIMEOUT}s"; return 1; }
		echo "trace_clock $(cat "$TRACEFS/trace_clock")" >>"$OUT/l2-info.txt"
	fi
	echo "uptime_go $(cut -d' ' -f1 /proc/uptime)" >>"$OUT/l2-info.txt"
	case $MODE in
	nested) run_payload || return 1 ;;
	linux-n) run_linux_n || return 1 ;;
	*)
		markers_on_all_cpus before || return 1
		jump_tsc || return 1
		markers_on_all_cpus after || return 1
		;;
	esac
	if [ "$MODE" = self ] || [ "$MODE" = nested ]; then
		trace-cmd stop >/dev/null 2>&1 || { fail "trace-cmd stop"; return 1; }
		# Uncompressed, as record-host.sh records: see its --compression.
		trace-cmd extract --compression none -o "$OUT/guest.dat" >"$OUT/trace-cmd-extract.log" 2>&1 ||
			{ fail "trace-cmd extract: $(tail -1 "$OUT/trace-cmd-extract.log")"; return 1; }
	fi
	echo "uptime_done $(cut -d' ' -f1 /proc/uptime)" >>"$OUT/l2-info.txt"
}

main()
{
	local status=0

	setup || status=1
	exec 3<"$CTL_TTY"
	[ "$status" = 0 ] && { run || status=1; }
	dmesg >"$OUT/l2-dmesg.txt"
	sync
	echo "ktt-l2-status $status" >"$OUT_TTY"
	if [ -n "$AGENT_PID" ]; then
		wait_for_quit
		dmesg >"$OUT/l2-dmesg.txt"
		sync
	fi
	reboot -f
}

case ${1:-} in
markers) write_markers "$2" "$3" ;;
*) main ;;
esac
