#!/bin/bash
# vmtest.sh: run a command inside the test kernel under QEMU (TCG, nested SVM) and return its exit status.
#
# usage: vmtest.sh COMMAND...
#
# The repository is shared with the VM over 9p (virtio), read-only, as
# /ktt, where COMMAND runs; VMTEST_DIR/export (default build/vmtest/export)
# is shared writable as /export for what the command brings out. Its output
# is printed here; the console log stays in VMTEST_DIR. KERNEL_VARIANT
# (test or debug) picks the kernel and its modules. The run fails when the
# VM does not report a status before VMTEST_TIMEOUT seconds (default 900),
# or when the kernel log shows a warning, BUG, Oops, KASAN or lockdep report.
#
# VMTEST_NESTED=1 also puts into the initramfs what a nested guest needs:
# qemu-system-x86_64 and trace-cmd with their libraries and QEMU's
# firmware, and in /nested the kernel and the nested guest's initramfs
# (scripts/nested-guest-init.sh as /init, busybox, trace-cmd), and gives
# the VM one CPU unless VMTEST_CPUS says otherwise; scripts/vm-nested-trace.sh
# says why.

set -eu

. "$(dirname "$0")/common.sh"

readonly VM_DIR=${VMTEST_DIR:-$BUILD_DIR/vmtest}
readonly VM_ROOT=$VM_DIR/root
readonly INITRAMFS=$VM_DIR/initramfs.cpio.gz
readonly CONSOLE_LOG=$VM_DIR/console.log
readonly OUTPUT_LOG=$VM_DIR/output.log
readonly STATUS_FILE=$VM_DIR/status
readonly QEMU_LOG=$VM_DIR/qemu.log
readonly EXPORT_DIR=$VM_DIR/export
readonly NESTED=${VMTEST_NESTED:-0}
readonly L2_ROOT=$VM_DIR/l2-root
# What QEMU loads to boot a -kernel on the pc machine, from its firmware path.
readonly QEMU_FIRMWARE="/usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin /usr/share/qemu/kvmvapic.bin"
readonly TIMEOUT=${VMTEST_TIMEOUT:-900}
if [ "$NESTED" = 1 ]; then
	readonly VM_CPUS=${VMTEST_CPUS:-1}
else
	readonly VM_CPUS=${VMTEST_CPUS:-2}
fi
readonly VM_MEM=${VMTEST_MEM:-2G}
readonly BZIMAGE=$KBUILD_OUT/arch/x86/boot/bzImage
# Kernel messages that fail a run whatever the payload said.
readonly SPLAT_RE='WARNING: CPU:|BUG: |Oops|Kernel panic|KASAN|UBSAN|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|Marking TSC unstable'

cleanup()
{
	[ -n "${QEMU_PID:-}" ] && kill "$QEMU_PID" 2>/dev/null
	return 0
}

# busybox, /init and the payload: the rest comes over 9p. kselftest's
# runner calls /usr/bin/timeout --foreground, which busybox's lacks.
build_initramfs()
{
	[ -f "$BZIMAGE" ] || die "$BZIMAGE not built: run 'make kernel'"
	[ -d "$KBUILD_OUT/modroot/lib/modules" ] || die "$KBUILD_OUT/modroot missing: run 'make kernel'"
	rm -rf "$VM_ROOT"
	mkdir -p "$VM_ROOT/bin"
	cp /bin/busybox "$VM_ROOT/bin/busybox"
	cp "$TOP_DIR/scripts/guest-init.sh" "$VM_ROOT/init"
	copy_with_libs /usr/bin/timeout "$VM_ROOT"
	[ "$NESTED" = 1 ] && add_nested
	printf '%s\n' "$*" >"$VM_ROOT/payload"
	(cd "$VM_ROOT" && find . | cpio -o -H newc --quiet | gzip -1) >"$INITRAMFS"
}

# The nested guest's initramfs: its /init, busybox and trace-cmd.
build_l2_initramfs()
{
	local out=$1

	rm -rf "$L2_ROOT"
	mkdir -p "$L2_ROOT/bin"
	cp /bin/busybox "$L2_ROOT/bin/busybox"
	cp "$TOP_DIR/scripts/nested-guest-init.sh" "$L2_ROOT/init"
	copy_with_libs trace-cmd "$L2_ROOT"
	(cd "$L2_ROOT" && find . | cpio -o -H newc --quiet | gzip -9) >"$out"
}

# What vm-nested-trace.sh runs a nested guest with.
add_nested()
{
	local fw

	need_cmd trace-cmd trace-cmd
	copy_with_libs qemu-system-x86_64 "$VM_ROOT"
	copy_with_libs trace-cmd "$VM_ROOT"
	for fw in $QEMU_FIRMWARE; do
		[ -f "$fw" ] || die "$fw missing: install the Debian packages seabios and qemu-system-data"
		mkdir -p "$VM_ROOT${fw%/*}"
		cp -L "$fw" "$VM_ROOT$fw"
	done
	mkdir -p "$VM_ROOT/nested"
	cp "$BZIMAGE" "$VM_ROOT/nested/bzImage"
	build_l2_initramfs "$VM_ROOT/nested/l2-initramfs.cpio.gz"
}

run_qemu()
{
	local tsc_khz

	# Telling the guest the rate spares it a calibration that fails without
	# a reference timer.
	tsc_khz=${VMTEST_TSC_KHZ:-$(host_tsc_khz)}

	: >"$OUTPUT_LOG"
	rm -f "$STATUS_FILE"
	rm -rf "$EXPORT_DIR"
	mkdir -p "$EXPORT_DIR"
	# thread=single: with multi-threaded TCG, a vCPU sometimes ran into the
	# int3 of a finished jump-label patch ("Oops: int3" in rcu_sched).
	# ktt_kernel= reaches /init as a variable: where its modules are.
	# pci=noacpi: the PCI interrupts come from the BIOS's routing table;
	# evaluating ACPI's _PRT took the debug kernel past ACPICA's 30 s loop
	# limit on a busy machine, and the 9p devices were left without IRQs.
	qemu-system-x86_64 -accel tcg,thread=single -cpu EPYC -smp "$VM_CPUS" -m "$VM_MEM" \
		-nodefaults -display none -no-reboot \
		-kernel "$BZIMAGE" -initrd "$INITRAMFS" \
		-append "console=ttyS0 panic=-1 oops=panic tsc_early_khz=$tsc_khz tsc=reliable pci=noacpi ktt_kernel=${KBUILD_OUT#"$TOP_DIR"/}" \
		-virtfs "local,path=$TOP_DIR,mount_tag=ktt,security_model=none,readonly=on" \
		-virtfs "local,path=$EXPORT_DIR,mount_tag=export,security_model=none" \
		-serial "file:$CONSOLE_LOG" -serial "file:$OUTPUT_LOG" -serial "file:$STATUS_FILE" \
		2>"$QEMU_LOG" &
	QEMU_PID=$!
	tail -n +1 -f --pid="$QEMU_PID" "$OUTPUT_LOG" &
	if ! wait_qemu; then
		kill "$QEMU_PID" 2>/dev/null || true
		wait "$QEMU_PID" 2>/dev/null || true
		QEMU_PID=
		die "the VM did not finish within ${TIMEOUT}s and was killed; console log: $CONSOLE_LOG"
	fi
	QEMU_PID=
	wait
}

# Bounded wait: poll, since bash's wait has no timeout.
wait_qemu()
{
	local waited=0

	while kill -0 "$QEMU_PID" 2>/dev/null; do
		[ "$waited" -lt "$TIMEOUT" ] || return 1
		sleep 1
		waited=$((waited + 1))
	done
	wait "$QEMU_PID" || note "qemu exited with status $?, see $QEMU_LOG"
	return 0
}

# The payload's status counts only if the kernel stayed healthy.
payload_status()
{
	local status

	if grep -Eq "$SPLAT_RE" "$CONSOLE_LOG"; then
		grep -E -m5 "$SPLAT_RE" "$CONSOLE_LOG" >&2
		die "the test kernel reported a problem (above); console log: $CONSOLE_LOG"
	fi
	status=$(tr -dc 0-9 <"$STATUS_FILE" 2>/dev/null || true)
	[ -n "$status" ] || die "the VM stopped without reporting a status; console log: $CONSOLE_LOG"
	return "$status"
}

main()
{
	[ $# -gt 0 ] || die "usage: ${0##*/} COMMAND..."
	need_cmd qemu-system-x86_64 qemu-system-x86
	need_cmd cpio cpio
	[ -x /bin/busybox ] && file -b /bin/busybox 2>/dev/null | grep -q static ||
		die "/bin/busybox is not a static busybox: install the Debian package busybox-static"
	case $KBUILD_OUT in
	"$TOP_DIR"/*) ;;
	*) die "$KBUILD_OUT is outside $TOP_DIR, which is all the VM sees" ;;
	esac
	trap cleanup EXIT
	mkdir -p "$VM_DIR"
	build_initramfs "$@"
	run_qemu
	payload_status
}

main "$@"
