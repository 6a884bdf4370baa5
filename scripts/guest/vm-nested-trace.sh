#!/bin/sh
# vm-nested-trace.sh: in the test VM (L1), record a host trace while a nested Linux guest (L2) is traced, in the ways users record one, and put each trace pair in /export.
#
# usage (on the build machine):
#     scripts/vm/nested-root.sh DIR
#     scripts/vm/vmtest.sh --cpus 1 --add DIR -- sh scripts/guest/vm-nested-trace.sh [L2_CPUS [L2_TSC_KHZ]] [MODE...]
#
# The test VM gets one CPU, because the nested guest's kernel is not
# stable on two TCG CPUs.
#
# Runs from /ktt under busybox sh. nested-root.sh puts into /nested
# what it needs: the kernel and L2's initramfs (scripts/guest/nested-guest-init.sh
# as /init); qemu-system-x86_64 and trace-cmd are in the VM's /usr/bin.
# L2 has L2_CPUS vCPUs (default 2) whose TSC runs at L2_TSC_KHZ (default
# L1's rate; another rate needs TSC scaling, which Bochs has and TCG has
# not). Once L2 says it is ready, KVM's debugfs TSC offsets of its vCPUs
# are saved (what trace-cmd's kvm protocol samples) and L2 is told to go:
# on every vCPU it writes markers, moves its TSC, writes markers. Each MODE
# is one such run, with an L2 of its own, one after the other:
#
#   own    record-host.sh starts recording before L2 boots; L2 traces
#          itself (x86-tsc) and writes its trace into a directory shared
#          with it over 9p: host.dat, guest.dat
#   late   the same, but record-host.sh starts once L2 has booted:
#          late-host.dat, late-guest.dat
#   agent  trace-cmd's own guest workflow: L2 gets a vhost-vsock-pci device
#          and runs `trace-cmd agent`; once it has booted, L1 runs
#          `trace-cmd record ... -A l2@CID ...` with trace-cmd's default
#          clock, stops it with SIGINT after the markers and only then lets
#          L2 power off: agent-host.dat, agent-guest.dat (trace-cmd's
#          trace.dat and trace-l2.dat)
#   nested as own, but L2 is a KVM host in turn (nested virtualization, which
#          L1's kvm_amd nested=1 exposes to -cpu host): instead of its
#          markers it runs tsc_nested_payload, whose guest (N, of
#          KTT_N_VCPUS vCPUs, default 1) writes KTT_N_MARKERS markers
#          (default 50) a vCPU into L2's trace (its TSC at KTT_N_TSC_KHZ
#          when set, through L2's TSC scaling), each value of N's rdtsc
#          right before a port exit that L1's KVM sees first; half way,
#          each of N's vCPUs moves its TSC: host.dat, guest.dat, and N's
#          output in n-payload.log. L2 gets one vCPU whatever L2_CPUS
#          says (l2_cpus), so that all of N's vCPUs run on it:
#          merge-e2e-test.sh looks for each N marker's port exit on that
#          one vCPU of L2's in the host trace
#   linux-n as nested, but N is a Linux guest (nested-root.sh --linux):
#          L2 runs this script in its mode own, with N as its L2, and L2's
#          1G holds N's QEMU and initramfs: host.dat, and what that run
#          exported in L2 (its host.dat, L2's trace from before N booted;
#          its guest.dat, N's own; N's logs) under in-l2/
#
# With no MODE, runs own and puts its files in /export itself; with modes,
# each run's files go to /export/MODE/. /export is vmtest.sh's DIR/export/ on
# the build machine. Besides the pair: l2-info.txt, debugfs-tsc-offset.txt,
# nested-run.txt (timings), l2-console.log, l2-qemu.log, L2's own logs,
# record-host.log or trace-cmd-record.log, and status (0, or the line
# naming the step that failed). Exits 0 when every run passed, 4 after a
# "# SKIP reason" line when this VM cannot run a nested guest, 1 after a
# line naming the mode and step that failed.

# shellcheck shell=dash # busybox sh, which has local
# shellcheck source-path=SCRIPTDIR source=../lib/poll.sh # where vmtest.sh puts it in the VM
. /lib/ktt/poll.sh
readonly NESTED=/nested
readonly WORK_ROOT=/tmp/nested
# Arguments: [L2_CPUS [L2_TSC_KHZ]] [MODE...], the numbers told by being numbers.
L2_CPUS=2
L2_TSC_KHZ=
case ${1:-} in '' | *[!0-9]*) ;; *) L2_CPUS=$1; shift ;; esac
case ${1:-} in '' | *[!0-9]*) ;; *) L2_TSC_KHZ=$1; shift ;; esac
readonly L2_CPUS MODES="$*"
readonly RECORD=tools/record-host/record-host.sh
# The kernel's TSC rate, which KVM scales from: the refined calibration
# can end a kHz away from tsc_early_khz.
L1_TSC_KHZ=$(sh "$RECORD" tsc-khz)
readonly L1_TSC_KHZ
L2_TSC_KHZ=${L2_TSC_KHZ:-$L1_TSC_KHZ}
readonly L2_TSC_KHZ
readonly L2_MEM=256M
# A nested guest that runs this script in turn (mode linux-n) sets the
# timeouts of its own guest, which runs a level further down.
readonly BOOT_TIMEOUT=${KTT_L2_BOOT_TIMEOUT:-60}
readonly RUN_TIMEOUT=${KTT_L2_RUN_TIMEOUT:-90}
# Mode nested: L2 loads KVM before it says ready, and N runs three levels
# down, every exit of N going through L1's KVM and L2's, under TCG.
readonly NESTED_BOOT_TIMEOUT=120
readonly NESTED_RUN_TIMEOUT=300
# Mode linux-n: a bigger initramfs for L2 to unpack, then N's boot and
# run (nested-guest-init.sh gives N 20 and 15 minutes).
readonly LINUX_N_BOOT_TIMEOUT=300
readonly LINUX_N_RUN_TIMEOUT=2400
readonly LINUX_N_L2_MEM=1G
readonly N_VCPUS=${KTT_N_VCPUS:-1}
readonly N_MARKERS=${KTT_N_MARKERS:-50}
readonly N_TSC_KHZ=${KTT_N_TSC_KHZ:-}
# trace-cmd record -A: from its start to its recording, and from SIGINT to
# both files written (the guest's trace comes over vsock then).
readonly AGENT_TIMEOUT=120
# Recordings started until trace-cmd finds L2's QEMU: start_agent_recorder.
readonly AGENT_ATTEMPTS=5
readonly TRACEFS=/sys/kernel/tracing
readonly DEBUGFS_KVM=/sys/kernel/debug/kvm
# L2's vsock address in agent mode (2 is the host's, 3 the first free one).
readonly L2_CID=3
# The TSC jump moves L2's clock and jiffies forward by minutes at once: RCU
# would report a stall that is none.
readonly L2_RCU_OPT=rcupdate.rcu_cpu_stall_suppress=1
# What trace-cmd record -A records on the host (the first four are needed;
# the series in patches/ adds the other two) and in L2.
readonly AGENT_HOST_EVENTS="kvm:kvm_write_tsc_offset kvm:kvm_entry kvm:kvm_exit sched:sched_switch"
readonly AGENT_HOST_OPTIONAL="kvm:kvm_write_tsc_multiplier kvm:kvm_nested_tsc_offset"

MODE=own
# The run's work directory and where its files go.
W=
DEST=
QEMU_PID=
RECORDING=
RECORDER_PID=
AGENT_ATTEMPT=
STEP=setup

now()
{
	cut -d' ' -f1 /proc/uptime
}

# Seconds between two now() values.
elapsed()
{
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", b - a }'
}

fail()
{
	echo "vm-nested-trace.sh: error: mode $MODE: step '$STEP' failed: $*" | tee -a "$W/failure"
	return 1
}

# The step that runs now, named in a failure; shown as it starts, so that
# a VM killed at its timeout still says where it was.
step()
{
	STEP=$1
	echo "# $MODE: $(now) s: $STEP"
}

# wait_until (poll.sh) for COND, failing the step with "WHAT within
# TIMEOUTs" at the timeout; COND returning 2 has told its failure itself.
wait_step()
{
	local timeout="$1" what="$2" rc=0

	shift 2
	wait_until "$timeout" "$@" || rc=$?
	[ "$rc" = 1 ] && fail "$what within ${timeout}s"
	[ "$rc" = 0 ]
}

# trace-cmd record -A leads its own process group (setsid), its per-CPU
# readers too: kill all of it, then turn off what it left on in tracefs.
kill_agent_recorder()
{
	kill -KILL -- "-$RECORDER_PID" 2>/dev/null || kill -KILL "-$RECORDER_PID" 2>/dev/null
	wait "$RECORDER_PID" 2>/dev/null
	RECORDER_PID=
	echo 0 >"$TRACEFS/tracing_on"
	echo 0 >"$TRACEFS/events/enable"
}

cleanup()
{
	if [ -n "$QEMU_PID" ] && kill -0 "$QEMU_PID" 2>/dev/null; then
		kill -KILL "$QEMU_PID" 2>/dev/null
		wait "$QEMU_PID" 2>/dev/null
	fi
	QEMU_PID=
	[ -n "$RECORDER_PID" ] && kill_agent_recorder
	# Also removes the tracefs instance of a recording cut short.
	[ -n "$RECORDING" ] && sh "$RECORD" stop -d "$W/record" >/dev/null 2>&1
	RECORDING=
	return 0
}

check_requirements()
{
	if [ ! -c /dev/kvm ]; then
		echo "# SKIP the test VM has no /dev/kvm (kvm_amd or kvm_intel did not load)"
		return 4
	fi
	for f in "$NESTED/bzImage" "$NESTED/l2-initramfs.cpio.gz" /usr/bin/qemu-system-x86_64 /usr/bin/trace-cmd; do
		[ -e "$f" ] || { fail "$f is missing: give vmtest.sh --add the directory nested-root.sh fills"; return 1; }
	done
	[ -n "$L1_TSC_KHZ" ] || { fail "the kernel log does not say the TSC rate"; return 1; }
	case " $MODES " in *" nested "* | *" linux-n "*) check_nested_virt || return 1 ;; esac
}

# Mode nested: L2 sees svm or vmx only when this KVM exposes nested
# virtualization (guest-init.sh loads it with nested=1).
check_nested_virt()
{
	local param

	for param in /sys/module/kvm_amd/parameters/nested /sys/module/kvm_intel/parameters/nested; do
		[ -r "$param" ] || continue
		case $(cat "$param") in
		1 | Y) return 0 ;;
		*) fail "$param is $(cat "$param"): L2 would not see svm or vmx"; return 1 ;;
		esac
	done
	fail "neither kvm_amd nor kvm_intel is loaded"
}

# L2 runs a guest of its own in these modes.
l2_is_host()
{
	[ "$MODE" = nested ] || [ "$MODE" = linux-n ]
}

# L2's vCPUs in this MODE: L2_CPUS, but one when L2 runs a guest (see the top).
l2_cpus()
{
	if l2_is_host; then echo 1; else echo "$L2_CPUS"; fi
}

l2_mem()
{
	if [ "$MODE" = linux-n ]; then echo "$LINUX_N_L2_MEM"; else echo "$L2_MEM"; fi
}

start_l2()
{
	local cpu=host,tsc-adjust=off vsock='' mode=self n_opts=''

	# QEMU asks KVM for another rate with KVM_SET_TSC_KHZ.
	[ "$L2_TSC_KHZ" = "$L1_TSC_KHZ" ] || cpu=$cpu,tsc-frequency=${L2_TSC_KHZ}000
	if [ "$MODE" = agent ]; then
		[ -c /dev/vhost-vsock ] || { fail "/dev/vhost-vsock is missing: the kernel needs CONFIG_VHOST_VSOCK"; return 1; }
		vsock="-device vhost-vsock-pci,guest-cid=$L2_CID"
		mode=agent
	fi
	if [ "$MODE" = nested ]; then
		mode=nested
		n_opts="ktt_n_vcpus=$N_VCPUS ktt_n_markers=$N_MARKERS${N_TSC_KHZ:+ ktt_n_tsc_khz=$N_TSC_KHZ}"
	fi
	[ "$MODE" = linux-n ] && mode=linux-n
	mkfifo "$W/l2-ctl.in" "$W/l2-ctl.out" || { fail "mkfifo $W/l2-ctl.*"; return 1; }
	mkdir -p "$W/l2"
	: >"$W/l2-serial.log"
	# tsc-adjust=off: with IA32_TSC_ADJUST the guest kernel restores it within
	# a second of the TSC write ("TSC ADJUST differs"), undoing the jump.
	# debug-threads=on names the vCPU threads "CPU N/KVM" in the host trace.
	# L2 is told its rate, as vmtest.sh told L1.
	# shellcheck disable=SC2086
	qemu-system-x86_64 -name l2,debug-threads=on -enable-kvm -cpu "$cpu" -smp "$(l2_cpus)" -m "$(l2_mem)" \
		-nodefaults -display none -no-reboot \
		-kernel "$NESTED/bzImage" -initrd "$NESTED/l2-initramfs.cpio.gz" \
		-append "console=ttyS0 panic=-1 tsc_early_khz=$L2_TSC_KHZ tsc=reliable pci=noacpi msr.allow_writes=on $L2_RCU_OPT ktt_mode=$mode $n_opts" \
		-virtfs "local,path=$W/l2,mount_tag=export,security_model=none" $vsock \
		-serial "file:$W/l2-console.log" -serial "file:$W/l2-serial.log" \
		-serial "pipe:$W/l2-ctl" >"$W/l2-qemu.log" 2>&1 &
	QEMU_PID=$!
}

# For wait_step: PATTERN on L2's serial port; 2 once L2's qemu is gone
# without it (looked again after the exit: the line may have come just
# before it).
l2_said()
{
	grep -q "$1" "$W/l2-serial.log" && return 0
	kill -0 "$QEMU_PID" 2>/dev/null && return 1
	grep -q "$1" "$W/l2-serial.log" && return 0
	fail "L2's qemu exited before '$1': $(tail -3 "$W/l2-qemu.log"; grep ktt-l2-error "$W/l2-serial.log")"
	return 2
}

wait_for_l2_line()
{
	wait_step "$2" "no '$1' from L2" l2_said "$1"
}

pid_gone()
{
	! kill -0 "$1" 2>/dev/null
}

wait_l2_exit()
{
	wait_step "$RUN_TIMEOUT" "L2 did not stop" pid_gone "$QEMU_PID" || return 1
	wait "$QEMU_PID"
	QEMU_PID=
}

# KVM's per-vCPU offsets, as trace-cmd samples them, before L2 moves its TSC.
save_debugfs_offsets()
{
	local dir found=

	{
		echo "# KVM debugfs per-vCPU TSC offsets of L2 (qemu pid $QEMU_PID), read after L2 booted and before its TSC write"
		for dir in "$DEBUGFS_KVM/$QEMU_PID"-*/vcpu*; do
			[ -r "$dir/tsc-offset" ] || continue
			echo "${dir##*/} $(cat "$dir/tsc-offset")"
			found=1
		done
	} >"$W/debugfs-tsc-offset.txt"
	[ -n "$found" ] || { fail "no $DEBUGFS_KVM/$QEMU_PID-*/vcpu*/tsc-offset"; return 1; }
}

# For wait_step: trace-cmd record turns tracing on last, once its events
# are set and its readers (the agent's too) run; tracing_on was 0 before it
# started. 2 once it has exited.
agent_recorder_started()
{
	if ! kill -0 "$RECORDER_PID" 2>/dev/null; then
		wait "$RECORDER_PID"
		fail "trace-cmd record -A exited with status $? before recording: $(tail -3 "$W/trace-cmd-record.log")"
		RECORDER_PID=
		return 2
	fi
	[ "$(cat "$TRACEFS/tracing_on")" = 1 ] && [ "$(cat "$TRACEFS/events/kvm/kvm_exit/enable")" = 1 ]
}

# trace-cmd's guest workflow as a user runs it: the host's events, then
# -A and the guest's (L2 runs this kernel: it has what L1 has), in the
# top-level buffer, trace-cmd's default clock. 3.1.6 finds a guest by name
# only through libvirt (virsh), which the test VM has not: the name comes
# with the CID, as -A NAME@CID. Both files uncompressed, as record-host.sh
# records (the guest's as told after -A, which the agent writes).
#
# With no -C, trace-cmd records with x86-tsc (and writes tsc2nsec with
# its TSC2NSEC option) and syncs with its kvm protocol only when it found
# the guest's QEMU: it connects to the CID and follows the wakeups from
# itself to a thread that enters KVM. That chain breaks when the vCPU was
# not halted (here L2's timer ticks wake its vCPUs every few ms, on L1's
# one CPU): trace-cmd then falls back to the host's clock (local) and its
# ptp protocol, whose files kvm-tsc-merge cannot convert. Such a recording
# is stopped and started again, up to AGENT_ATTEMPTS times; each attempt's
# output is in trace-cmd-record.log and their number in nested-run.txt.
start_agent_recorder()
{
	local host_events='' guest_events="--compression none -e sched:sched_switch" ev

	for ev in $AGENT_HOST_EVENTS; do
		[ -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ] || { fail "this kernel has no $ev event"; return 1; }
		host_events="$host_events -e $ev"
	done
	for ev in $AGENT_HOST_OPTIONAL; do
		[ -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ] && host_events="$host_events -e $ev"
	done
	[ -d "$TRACEFS/events/msr/write_msr" ] && guest_events="$guest_events -e msr:write_msr -f msr==0x10"
	echo "trace-cmd record --compression none -o $W/trace.dat$host_events -A l2@$L2_CID $guest_events" \
		>"$W/trace-cmd-record.cmd"
	: >"$W/trace-cmd-record.log"
	AGENT_ATTEMPT=1
	while :; do
		[ "$AGENT_ATTEMPT" = 1 ] || step "record-start, attempt $AGENT_ATTEMPT"
		echo "== attempt $AGENT_ATTEMPT" >>"$W/trace-cmd-record.log"
		rm -f "$W/trace.dat" "$W/trace-l2.dat"
		echo 0 >"$TRACEFS/tracing_on"
		echo 0 >"$TRACEFS/events/enable"
		# setsid: its own process group, for kill_agent_recorder. From W:
		# it writes its per-CPU files in the current directory.
		# shellcheck disable=SC2086
		(cd "$W" && exec setsid trace-cmd record --compression none -o "$W/trace.dat" $host_events \
			-A "l2@$L2_CID" $guest_events) </dev/null >>"$W/trace-cmd-record.log" 2>&1 &
		RECORDER_PID=$!
		wait_step "$AGENT_TIMEOUT" "trace-cmd record -A did not start recording" agent_recorder_started ||
			return 1
		grep -q '\[x86-tsc\]' "$TRACEFS/trace_clock" && return 0
		echo "== trace clock $(grep -o '\[[^]]*\]' "$TRACEFS/trace_clock"): trace-cmd did not find L2's qemu; stopped" \
			>>"$W/trace-cmd-record.log"
		stop_agent_recorder || return 1
		[ "$AGENT_ATTEMPT" -lt "$AGENT_ATTEMPTS" ] ||
			{ fail "trace-cmd record -A did not find L2's qemu by its CID in $AGENT_ATTEMPTS attempts: $(grep Negotiated "$W/trace-cmd-record.log" | tail -1)"; return 1; }
		AGENT_ATTEMPT=$((AGENT_ATTEMPT + 1))
	done
}

# SIGINT, as Ctrl-C: trace-cmd stops L2's agent, takes its trace over
# vsock and writes trace.dat and trace-l2.dat.
stop_agent_recorder()
{
	local status

	kill -INT "$RECORDER_PID"
	wait_step "$AGENT_TIMEOUT" "trace-cmd record -A did not finish after SIGINT" pid_gone "$RECORDER_PID" ||
		return 1
	wait "$RECORDER_PID"
	status=$?
	RECORDER_PID=
	[ "$status" = 0 ] || { fail "trace-cmd record -A exited with status $status: $(tail -3 "$W/trace-cmd-record.log")"; return 1; }
	for f in "$W/trace.dat" "$W/trace-l2.dat"; do
		[ -s "$f" ] || { fail "trace-cmd record -A did not write $f: $(tail -3 "$W/trace-cmd-record.log")"; return 1; }
	done
}

start_recording()
{
	step record-start
	case $MODE in
	agent) start_agent_recorder ;;
	*)
		sh "$RECORD" start -o "$W/host.dat" -d "$W/record" || { fail "$RECORD start"; return 1; }
		RECORDING=1
		;;
	esac
}

stop_recording()
{
	step record-stop
	case $MODE in
	agent) stop_agent_recorder ;;
	*)
		RECORDING=
		sh "$RECORD" stop -d "$W/record" || { fail "$RECORD stop"; return 1; }
		;;
	esac
}

# One run of MODE, in W; timings in W/nested-run.txt.
run()
{
	local t0 t_rec0 t_rec t_boot t_ready t_go t_marked t_stop t_done status
	local boot_timeout=$BOOT_TIMEOUT run_timeout=$RUN_TIMEOUT

	case $MODE in
	nested)
		boot_timeout=$NESTED_BOOT_TIMEOUT
		run_timeout=$NESTED_RUN_TIMEOUT
		;;
	linux-n)
		boot_timeout=$LINUX_N_BOOT_TIMEOUT
		run_timeout=$LINUX_N_RUN_TIMEOUT
		;;
	esac
	t0=$(now)
	if [ "$MODE" = own ] || l2_is_host; then
		t_rec0=$(now)
		start_recording || return 1
		t_rec=$(now)
	fi
	step l2-boot
	t_boot=$(now)
	start_l2 || return 1
	wait_for_l2_line '^ktt-l2-ready' "$boot_timeout" || return 1
	t_ready=$(now)
	if [ "$MODE" = late ] || [ "$MODE" = agent ]; then
		t_rec0=$(now)
		start_recording || return 1
		t_rec=$(now)
	fi
	step debugfs
	save_debugfs_offsets || return 1
	echo go >"$W/l2-ctl.in"
	t_go=$(now)
	step l2-run
	wait_for_l2_line '^ktt-l2-status' "$run_timeout" || return 1
	t_marked=$(now)
	if [ "$MODE" = agent ]; then
		# L2 waits for quit: the agent must be there when trace-cmd stops.
		stop_recording || return 1
		t_stop=$(now)
		# A fifo with no reader (L2's qemu gone) would block the write.
		kill -0 "$QEMU_PID" 2>/dev/null && echo quit >"$W/l2-ctl.in"
		step l2-exit
		wait_l2_exit || return 1
	else
		wait_l2_exit || return 1
		t_stop=$(now)
		stop_recording || return 1
	fi
	t_done=$(now)
	status=$(sed -n 's/^ktt-l2-status //p' "$W/l2-serial.log")
	[ "$status" = 0 ] ||
		{ STEP=l2-run; fail "L2 reported status '$status': $(grep ktt-l2-error "$W/l2-serial.log")"; return 1; }
	{
		echo "mode $MODE"
		echo "l2_cpus $(l2_cpus)"
		echo "l1_tsc_khz $L1_TSC_KHZ"
		echo "l2_tsc_khz $L2_TSC_KHZ"
		echo "record_start_s $(elapsed "$t_rec0" "$t_rec")"
		echo "l2_boot_s $(elapsed "$t_boot" "$t_ready")"
		echo "l2_run_s $(elapsed "$t_go" "$t_marked")"
		if [ "$MODE" = nested ]; then
			echo "n_vcpus $N_VCPUS"
			echo "n_markers $N_MARKERS"
			echo "n_tsc_khz ${N_TSC_KHZ:-$L2_TSC_KHZ}"
			# N's run alone, as L2's clock measured it.
			grep '^n_run_s ' "$W/l2/l2-info.txt"
		fi
		if [ "$MODE" = linux-n ]; then
			# N's session (its boot and run), then its boot alone, as
			# L2's clock measured them.
			grep '^n_run_s ' "$W/l2/l2-info.txt"
			sed -n 's/^l2_boot_s /n_boot_s /p' "$W/l2/own/nested-run.txt"
		fi
		if [ "$MODE" = agent ]; then
			echo "agent_attempts $AGENT_ATTEMPT"
			echo "record_stop_s $(elapsed "$t_marked" "$t_stop")"
		else
			echo "record_stop_s $(elapsed "$t_stop" "$t_done")"
		fi
		echo "payload_s $(elapsed "$t0" "$t_done")"
		echo "l1_uptime_at_start_s $t0"
	} >"$W/nested-run.txt"
}

# The run's files into DEST, the trace pair under the mode's names.
export_mode()
{
	local f host guest l2_trace=''

	case $MODE in
	own | nested) host=host.dat guest=guest.dat ;;
	# N's trace, and L2's, as L2's own run exported them.
	linux-n) host=host.dat guest=in-l2/guest.dat l2_trace=in-l2/host.dat ;;
	*) host=$MODE-host.dat guest=$MODE-guest.dat ;;
	esac
	[ "$MODE" = linux-n ] && [ -d "$W/l2/own" ] && cp -r "$W/l2/own" "$DEST/in-l2"
	if [ "$MODE" = agent ]; then
		[ -f "$W/trace.dat" ] && cp "$W/trace.dat" "$DEST/$host"
		[ -f "$W/trace-l2.dat" ] && cp "$W/trace-l2.dat" "$DEST/$guest"
	else
		[ -f "$W/host.dat" ] && cp "$W/host.dat" "$DEST/$host"
		[ -f "$W/l2/guest.dat" ] && cp "$W/l2/guest.dat" "$DEST/$guest"
	fi
	for f in "$W/l2/l2-info.txt" "$W/debugfs-tsc-offset.txt" "$W/nested-run.txt" "$W/l2-console.log" \
		"$W/l2-qemu.log" "$W/l2/l2-dmesg.txt" "$W/l2/trace-cmd-start.log" "$W/l2/trace-cmd-extract.log" \
		"$W/l2/trace-cmd-agent.log" "$W/trace-cmd-record.cmd" "$W/trace-cmd-record.log" \
		"$W/l2/modprobe.log" "$W/l2/n-payload.log" "$W/l2/n-run.log"; do
		[ -f "$f" ] && cp "$f" "$DEST/"
	done
	[ -f "$W/record/log" ] && cp "$W/record/log" "$DEST/record-host.log"
	if [ -s "$W/failure" ]; then
		cp "$W/failure" "$DEST/status"
	else
		echo 0 >"$DEST/status"
	fi
	FILES=
	for f in "$host" "$guest" $l2_trace; do
		if [ -f "$DEST/$f" ]; then
			FILES="$FILES $f $(wc -c <"$DEST/$f") bytes"
		else
			FILES="$FILES $f missing"
		fi
	done
}

# One mode: W and DEST its own (or the top of /export when FLAT).
run_mode()
{
	local status=0 t_exp

	MODE=$1
	if [ -n "$FLAT" ]; then
		W=$WORK_ROOT
		DEST=/export
	else
		W=$WORK_ROOT/$MODE
		DEST=/export/$MODE
	fi
	rm -rf "$W"
	mkdir -p "$W" "$DEST"
	STEP=setup
	run || status=1
	cleanup
	t_exp=$(now)
	STEP='export'
	export_mode
	if [ "$status" = 0 ]; then
		sed "s/^/# $MODE: /" "$W/nested-run.txt"
		echo "# $MODE: copy to $DEST: $(elapsed "$t_exp" "$(now)") s"
	fi
	echo "# $MODE: files:$FILES"
	return "$status"
}

main()
{
	local status=0 mode modes="$MODES"

	trap cleanup EXIT
	W=$WORK_ROOT
	FLAT=
	[ -n "$modes" ] || { modes=own; FLAT=1; }
	for mode in $modes; do
		case $mode in
		own | late | agent | nested | linux-n) ;;
		*) fail "unknown mode '$mode': use own, late, agent, nested or linux-n"; return 1 ;;
		esac
	done
	mkdir -p "$WORK_ROOT"
	check_requirements || return $?
	for mode in $modes; do
		run_mode "$mode" || status=1
	done
	[ "$status" = 0 ] || return 1
	echo "nested trace recorded ($modes)"
}

main
