#!/bin/busybox sh
# guest-init.sh: /init of a guest that record-pair.sh boots: record this level's trace, write port-tagged markers around a TSC write or run a guest of its own, as the scenario says.
#
# The level comes on the kernel command line as ktt_level, the scenario
# in /export, the directory the host shares over 9p, where this level
# also says "ready", waits for "go", gives its "status" and waits for
# "quit", which the host says once its recording has stopped. Between go
# and the status it does what the next level's recorder calls for
# (run_workload); the payload writes "ktt-n-marker cpu=C seq=K tsc=T"
# before each ucall and moves its guest's TSC half way.
#
# A marker is "ktt-marker before|after cpu=N seq=K" written into
# trace_marker on vCPU N and followed at once by a 1-byte write to
# marker_port, which nothing of QEMU's pc machine, SeaBIOS or Linux uses:
# the host traces that write as the vCPU's next kvm_exit, so each marker has
# a host timestamp of its own. Between the "before" and the "after" markers
# every vCPU's IA32_TSC is set to CPU 0's TSC plus lN_tsc_jump through
# /dev/cpu/N/msr, which the host's KVM traces as kvm_write_tsc_offset.

# shellcheck shell=dash # busybox sh, which has local
# shellcheck disable=SC2154 # the scenario's keys, which read_scenario sets
# shellcheck source-path=SCRIPTDIR source=../lib/poll.sh # where guest-root.sh puts it
. /lib/ktt/poll.sh
# shellcheck source-path=SCRIPTDIR source=scenario.sh # beside it in /e2e
. /e2e/scenario.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

readonly TRACEFS=/sys/kernel/tracing
readonly SHARE=/export
readonly PAYLOAD=/usr/bin/tsc_nested_payload
# How long the host may take to say go and quit, and trace-cmd agent to
# listen and then to be told to record.
readonly HOST_TIMEOUT=300
readonly AGENT_TIMEOUT=60
AGENT_PID=

fail()
{
	echo "guest-init.sh: L$LEVEL: error: $*" | tee "$SHARE/failure" >&2
	return 1
}

say()
{
	echo "guest-init.sh: L$LEVEL: $*"
}

mount_all()
{
	/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
	/bin/busybox --install -s
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
	mount -t tmpfs tmpfs /tmp
	mount -t tracefs tracefs "$TRACEFS"
	# KVM's per-vCPU TSC state, which kvm-tsc-record's snapshot reads.
	mount -t debugfs debugfs /sys/kernel/debug
	mkdir -p "$SHARE"
	mount -t 9p -o trans=virtio,version=9p2000.L export "$SHARE"
}

# Marker SEQ of PHASE on this vCPU, CPU, then at once its port write.
write_marker()
{
	echo "ktt-marker $1 cpu=$2 seq=$3" >"$TRACEFS/trace_marker" &&
		dd if=/dev/zero of=/dev/port bs=1 seek=$((marker_port)) count=1 conv=notrunc 2>/dev/null
}

# The markers of PHASE on each vCPU in turn, this shell moved onto it.
markers_on_all_cpus()
{
	local phase=$1 cpu seq

	for cpu in $(seq 0 $((NCPUS - 1))); do
		taskset -p -c "$cpu" $$ >/dev/null || { fail "cannot move onto cpu $cpu"; return 1; }
		for seq in $(seq "$(level_key markers)"); do
			write_marker "$phase" "$cpu" "$seq" ||
				{ fail "writing the '$phase' markers on cpu $cpu"; return 1; }
			sleep 0.1
		done
	done
	taskset -p -c "0-$((NCPUS - 1))" $$ >/dev/null
	say "markers $phase written on $NCPUS vCPUs"
}

# IA32_TSC (MSR 0x10) of CPU, as 8 little-endian bytes at offset 0x10 * 8.
write_tsc()
{
	local cpu=$1 value=$2 bytes='' _

	for _ in 1 2 3 4 5 6 7 8; do
		bytes="$bytes\\$(printf %03o $((value & 255)))"
		value=$((value >> 8))
	done
	# shellcheck disable=SC2059 # the bytes are the format
	printf "$bytes" | dd of="/dev/cpu/$cpu/msr" bs=8 seek=2 count=1 conv=notrunc 2>/dev/null
}

jump_tsc()
{
	local target cpu

	target=$(dd if=/dev/cpu/0/msr bs=8 skip=2 count=1 2>/dev/null | od -A n -t u8 | tr -d ' ')
	[ -n "$target" ] || { fail "cannot read IA32_TSC through /dev/cpu/0/msr"; return 1; }
	target=$((target + $(level_key tsc_jump)))
	for cpu in $(seq 0 $((NCPUS - 1))); do
		write_tsc "$cpu" "$target" || { fail "cannot write IA32_TSC through /dev/cpu/$cpu/msr"; return 1; }
	done
	say "IA32_TSC of $NCPUS vCPUs set to $target"
}

# The events this level records itself: its scheduling and TSC writes,
# and its KVM's when it runs a guest.
self_events()
{
	local events="-e sched:sched_switch" ev

	[ -d "$TRACEFS/events/msr/write_msr" ] && events="$events -e msr:write_msr -f msr==0x10"
	[ "$NEXT" = payload ] || { echo "$events"; return; }
	for ev in task:task_newtask kvm:kvm_write_tsc_offset kvm:kvm_entry kvm:kvm_exit \
		kvm:kvm_write_tsc_multiplier kvm:kvm_nested_tsc_offset; do
		[ -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ] && events="$events -e $ev"
	done
	echo "$events"
}

start_tracing()
{
	# shellcheck disable=SC2046 # a list of options
	trace-cmd start -C x86-tsc $(self_events) >"$SHARE/trace-cmd-start.log" 2>&1 ||
		{ fail "trace-cmd start: $(tail -1 "$SHARE/trace-cmd-start.log")"; return 1; }
}

# trace-cmd agent is listening once it sleeps with a socket open.
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

agent_recording()
{
	[ "$(cat "$TRACEFS/tracing_on")" = 1 ] &&
		[ "$(cat "$TRACEFS/events/sched/sched_switch/enable")" = 1 ]
}

start_agent()
{
	echo 0 >"$TRACEFS/tracing_on"
	trace-cmd agent >"$SHARE/trace-cmd-agent.log" 2>&1 &
	AGENT_PID=$!
	wait_until "$AGENT_TIMEOUT" agent_listening_or_gone ||
		{ fail "trace-cmd agent did not listen within ${AGENT_TIMEOUT}s"; return 1; }
	kill -0 "$AGENT_PID" 2>/dev/null ||
		{ fail "trace-cmd agent exited: $(tail -1 "$SHARE/trace-cmd-agent.log")"; return 1; }
}

load_kvm()
{
	local module=kvm_intel

	grep -qw svm /proc/cpuinfo && module=kvm_amd
	grep -qw "svm\|vmx" /proc/cpuinfo ||
		{ fail "neither svm nor vmx: the host's KVM does not expose nested virtualization"; return 1; }
	modprobe "$module" >"$SHARE/modprobe.log" 2>&1 ||
		{ fail "modprobe $module: $(tail -1 "$SHARE/modprobe.log")"; return 1; }
	[ -c /dev/kvm ] || { fail "no /dev/kvm after modprobe $module"; return 1; }
}

wait_for_host()
{
	wait_until "$HOST_TIMEOUT" test -e "$SHARE/$1" || { fail "no '$1' from the host within ${HOST_TIMEOUT}s"; return 1; }
}

start_recording()
{
	case $(level_key recorder) in
	self) start_tracing ;;
	agent) start_agent ;;
	esac
}

# What this level does between go and its status.
run_workload()
{
	local status=0

	case $NEXT in
	payload)
		[ -x "$PAYLOAD" ] || { fail "$PAYLOAD is missing: 'make selftests' before guest-root.sh"; return 1; }
		set -- -v "$(next_key vcpus)" -n "$(next_key markers)" -j "$(next_key tsc_jump)"
		[ "$(next_key tsc_khz)" = 0 ] || set -- "$@" -k "$(next_key tsc_khz)"
		"$PAYLOAD" "$@" >"$SHARE/payload.log" 2>&1 || status=$?
		[ "$status" = 0 ] || { fail "$PAYLOAD exited with status $status: $(tail -1 "$SHARE/payload.log")"; return 1; }
		;;
	self)
		# Its steps on this level's console, which the host relays.
		(cd /ktt && sh scripts/e2e/record-pair.sh --level "$LEVEL" "$SHARE/scenario") ||
			{ fail "record-pair.sh one level down: $(tail -1 "$SHARE/$mode/failure" 2>/dev/null)"; return 1; }
		;;
	none)
		markers_on_all_cpus before && jump_tsc && markers_on_all_cpus after
		;;
	esac
}

extract_trace()
{
	trace-cmd stop >/dev/null 2>&1 || { fail "trace-cmd stop"; return 1; }
	trace-cmd extract --compression none -o "$SHARE/guest.dat" >"$SHARE/trace-cmd-extract.log" 2>&1 ||
		{ fail "trace-cmd extract: $(tail -1 "$SHARE/trace-cmd-extract.log")"; return 1; }
}

run()
{
	NCPUS=$(nproc)
	[ "$NEXT" = none ] || load_kvm || return 1
	start_recording || return 1
	: >"$SHARE/ready"
	say "ready"
	wait_for_host go || return 1
	[ "$(level_key recorder)" != agent ] || wait_until "$AGENT_TIMEOUT" agent_recording ||
		{ fail "the host's trace-cmd record did not start the agent's recording within ${AGENT_TIMEOUT}s"; return 1; }
	run_workload || return 1
	[ "$(level_key recorder)" != self ] || extract_trace
}

main()
{
	local status=0

	LEVEL=${ktt_level:?}
	mount_all && read_scenario "$SHARE/scenario" || status=1
	NEXT=$(next_key recorder)
	NEXT=${NEXT:-none}
	[ "$status" = 0 ] && { run || status=1; }
	dmesg >"$SHARE/dmesg.txt"
	# Whole when the host sees it: written aside, then renamed.
	echo "$status" >"$SHARE/status.new" && mv "$SHARE/status.new" "$SHARE/status"
	sync
	wait_for_host quit
	reboot -f
}

main
