#!/bin/sh
# vm-nested-trace.sh: in the test VM (L1), record a host trace while a nested Linux guest (L2) traces itself, and put both traces in /export.
#
# usage (on the build machine):
#     VMTEST_NESTED=1 scripts/vmtest.sh sh scripts/vm-nested-trace.sh [L2_CPUS [L2_TSC_KHZ]]
#
# VMTEST_NESTED=1 gives the test VM one CPU: with two TCG CPUs in the test VM, the nested guest failed
# in 12 of 29 runs tried: its kernel died ("BUG: ENTRY_TRAMPOLINE stack
# guard page was hit", a bad GS base on an interrupt from user mode) or it
# slowed down tenfold, whether its vCPU threads were pinned or not and with
# or without FSGSBASE; with one CPU, 16 runs in a row passed.
#
# Runs from /ktt under busybox sh. VMTEST_NESTED=1 puts into /nested
# what it needs: the kernel and L2's initramfs (scripts/nested-guest-init.sh
# as /init); qemu-system-x86_64 and trace-cmd are in the VM's /usr/bin.
# Steps: record-host.sh starts recording; L2 boots with L2_CPUS vCPUs
# (default 2) whose TSC runs at L2_TSC_KHZ (default L1's rate; another rate
# needs TSC scaling, which Bochs has and TCG has not); once it says it is ready, KVM's debugfs TSC offsets of its
# vCPUs are saved (what trace-cmd would sample) and L2 is told to go; L2
# writes its markers around a TSC write and its trace into a directory
# shared with it over 9p; recording stops. The files are copied to /export,
# which is $VMTEST_DIR/export/ on the build machine: host.dat, guest.dat, l2-info.txt,
# debugfs-tsc-offset.txt, nested-run.txt (timings), l2-console.log,
# record-host.log and L2's own logs. Exits 0 on success, 4 after a
# "# SKIP reason" line when this VM cannot run a nested guest, 1 after a
# line naming the step that failed.

readonly NESTED=/nested
readonly WORK=/tmp/nested
readonly L2_CPUS=${1:-2}
# The kernel's TSC rate, which KVM scales from: the refined calibration
# can end a kHz away from tsc_early_khz. Printed as MHz with three decimals.
L1_TSC_KHZ=$(dmesg | sed -n -e 's/.*Refined TSC clocksource calibration: \([0-9]*\)\.\([0-9]*\) MHz.*/\1\2/p' \
	-e 's/.*tsc: Detected \([0-9]*\)\.\([0-9]*\) MHz.*/\1\2/p' | tail -1)
readonly L1_TSC_KHZ
readonly L2_TSC_KHZ=${2:-$L1_TSC_KHZ}
readonly L2_MEM=256M
readonly BOOT_TIMEOUT=60
readonly RUN_TIMEOUT=90
readonly RECORD=scripts/record-host.sh
readonly DEBUGFS_KVM=/sys/kernel/debug/kvm
# The TSC jump moves L2's clock and jiffies forward by minutes at once: RCU
# would report a stall that is none.
readonly L2_RCU_OPT=rcupdate.rcu_cpu_stall_suppress=1

export RECORD_STATE=$WORK/record
QEMU_PID=
RECORDING=
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
	echo "vm-nested-trace.sh: error: step '$STEP' failed: $*"
	return 1
}

cleanup()
{
	if [ -n "$QEMU_PID" ] && kill -0 "$QEMU_PID" 2>/dev/null; then
		kill -KILL "$QEMU_PID" 2>/dev/null
	fi
	# Also removes the tracefs instance of a recording cut short.
	[ -n "$RECORDING" ] && sh "$RECORD" stop >/dev/null 2>&1
	return 0
}

check_requirements()
{
	if [ ! -c /dev/kvm ]; then
		echo "# SKIP the test VM has no /dev/kvm (kvm_amd or kvm_intel did not load)"
		return 4
	fi
	for f in "$NESTED/bzImage" "$NESTED/l2-initramfs.cpio.gz" /usr/bin/qemu-system-x86_64 /usr/bin/trace-cmd; do
		[ -e "$f" ] || { fail "$f is missing: build the initramfs with VMTEST_NESTED=1"; return 1; }
	done
	[ -n "$L1_TSC_KHZ" ] || { fail "the kernel log does not say the TSC rate"; return 1; }
}

start_l2()
{
	local cpu=host,tsc-adjust=off

	# QEMU asks KVM for another rate with KVM_SET_TSC_KHZ.
	[ "$L2_TSC_KHZ" = "$L1_TSC_KHZ" ] || cpu=$cpu,tsc-frequency=${L2_TSC_KHZ}000
	mkfifo "$WORK/l2-ctl.in" "$WORK/l2-ctl.out" || { fail "mkfifo $WORK/l2-ctl.*"; return 1; }
	mkdir -p "$WORK/l2"
	: >"$WORK/l2-serial.log"
	# tsc-adjust=off: with IA32_TSC_ADJUST the guest kernel restores it within
	# a second of the TSC write ("TSC ADJUST differs"), undoing the jump.
	# debug-threads=on names the vCPU threads "CPU N/KVM" in the host trace.
	# L2 is told its rate, as vmtest.sh told L1.
	qemu-system-x86_64 -name l2,debug-threads=on -enable-kvm -cpu "$cpu" -smp "$L2_CPUS" -m "$L2_MEM" \
		-nodefaults -display none -no-reboot \
		-kernel "$NESTED/bzImage" -initrd "$NESTED/l2-initramfs.cpio.gz" \
		-append "console=ttyS0 panic=-1 tsc_early_khz=$L2_TSC_KHZ tsc=reliable pci=noacpi msr.allow_writes=on $L2_RCU_OPT" \
		-virtfs "local,path=$WORK/l2,mount_tag=export,security_model=none" \
		-serial "file:$WORK/l2-console.log" -serial "file:$WORK/l2-serial.log" \
		-serial "pipe:$WORK/l2-ctl" >"$WORK/l2-qemu.log" 2>&1 &
	QEMU_PID=$!
}

# Bounded wait for a line from L2 on its serial port, while L2 runs.
wait_for_l2_line()
{
	local pattern=$1 timeout=$2 waited=0

	until grep -q "$pattern" "$WORK/l2-serial.log"; do
		# Looked again after the exit: the line may have come just before it.
		kill -0 "$QEMU_PID" 2>/dev/null || grep -q "$pattern" "$WORK/l2-serial.log" ||
			{ fail "L2's qemu exited before '$pattern': $(tail -3 "$WORK/l2-qemu.log"; grep ktt-l2-error "$WORK/l2-serial.log")"; return 1; }
		[ "$waited" -lt $((timeout * 10)) ] || { fail "no '$pattern' from L2 within ${timeout}s"; return 1; }
		sleep 0.1
		waited=$((waited + 1))
	done
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
	} >"$WORK/debugfs-tsc-offset.txt"
	[ -n "$found" ] || { fail "no $DEBUGFS_KVM/$QEMU_PID-*/vcpu*/tsc-offset"; return 1; }
}

wait_l2_exit()
{
	local waited=0

	while kill -0 "$QEMU_PID" 2>/dev/null; do
		[ "$waited" -lt $((RUN_TIMEOUT * 10)) ] || { fail "L2 did not stop within ${RUN_TIMEOUT}s"; return 1; }
		sleep 0.1
		waited=$((waited + 1))
	done
	wait "$QEMU_PID"
	QEMU_PID=
}

run()
{
	local t0 t_rec t_ready t_done status

	t0=$(now)
	STEP=record-start
	sh "$RECORD" start "$WORK/host.dat" || { fail "$RECORD start"; return 1; }
	RECORDING=1
	t_rec=$(now)
	STEP=l2-boot
	start_l2 || return 1
	wait_for_l2_line '^ktt-l2-ready' "$BOOT_TIMEOUT" || return 1
	t_ready=$(now)
	STEP=debugfs
	save_debugfs_offsets || return 1
	echo go >"$WORK/l2-ctl.in"
	STEP=l2-run
	wait_for_l2_line '^ktt-l2-status' "$RUN_TIMEOUT" || return 1
	wait_l2_exit || return 1
	t_done=$(now)
	STEP=record-stop
	RECORDING=
	sh "$RECORD" stop || { fail "$RECORD stop"; return 1; }
	status=$(sed -n 's/^ktt-l2-status //p' "$WORK/l2-serial.log")
	[ "$status" = 0 ] ||
		{ fail "L2 reported status '$status': $(grep ktt-l2-error "$WORK/l2-serial.log")"; return 1; }
	{
		echo "l2_cpus $L2_CPUS"
		echo "l1_tsc_khz $L1_TSC_KHZ"
		echo "l2_tsc_khz $L2_TSC_KHZ"
		echo "record_start_s $(elapsed "$t0" "$t_rec")"
		echo "l2_boot_s $(elapsed "$t_rec" "$t_ready")"
		echo "l2_run_s $(elapsed "$t_ready" "$t_done")"
		echo "payload_s $(elapsed "$t0" "$(now)")"
		echo "l1_uptime_at_start_s $t0"
	} >"$WORK/nested-run.txt"
}

export_all()
{
	local f

	for f in "$WORK/host.dat" "$WORK/l2/guest.dat" "$WORK/l2/l2-info.txt" "$WORK/debugfs-tsc-offset.txt" \
		"$WORK/nested-run.txt" "$WORK/l2-console.log" "$WORK/l2-qemu.log" "$WORK/l2/l2-dmesg.txt" \
		"$WORK/l2/trace-cmd-start.log" "$WORK/l2/trace-cmd-extract.log"; do
		[ -f "$f" ] && cp "$f" /export/
	done
	[ -f "$RECORD_STATE/log" ] && cp "$RECORD_STATE/log" /export/record-host.log
	return 0
}

main()
{
	local status=0 t_exp

	trap cleanup EXIT
	check_requirements || return $?
	mkdir -p "$WORK"
	run || status=1
	cleanup
	t_exp=$(now)
	STEP='export'
	export_all
	[ "$status" = 0 ] || return 1
	sed 's/^/# /' "$WORK/nested-run.txt"
	echo "# copy to /export: $(elapsed "$t_exp" "$(now)") s"
	echo "# files: host.dat $(wc -c <"$WORK/host.dat") bytes, guest.dat $(wc -c <"$WORK/l2/guest.dat") bytes"
	echo "nested trace recorded"
}

main "$@"
