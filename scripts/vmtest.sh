#!/bin/bash
# vmtest.sh: run a command inside the test kernel under QEMU (TCG, nested SVM) and return its exit status.
#
# usage: vmtest.sh COMMAND...
#
# COMMAND runs from /ktt inside the VM, which holds scripts/, the installed
# selftests, the in-tree KVM selftests and the module. Its output is printed
# here; the console log and the payload output stay in build/vmtest/ (or
# VMTEST_DIR). KERNEL_VARIANT picks the kernel and module to boot. The run
# fails when the VM does not report a status before VMTEST_TIMEOUT, or when
# the kernel log shows a warning, BUG, Oops, KASAN or lockdep report.
#
# Files the payload sends to /dev/ttyS3 as scripts/serial-export.sh frames
# are checked and unpacked into export/ of the log directory after the run.
# VMTEST_NESTED=1 also puts into the VM what a nested guest needs:
# qemu-system-x86_64 and trace-cmd with their libraries and QEMU's firmware,
# and in /ktt/nested the kernel and the nested guest's initramfs
# (scripts/nested-guest-init.sh as /init, busybox, trace-cmd), and gives
# the VM one CPU unless VMTEST_CPUS says otherwise; scripts/vm-nested-trace.sh
# says why.

set -eu

. "$(dirname "$0")/common.sh"
. "$TOP_DIR/scripts/serial-export.sh"

readonly VM_DIR=${VMTEST_DIR:-$BUILD_DIR/vmtest}
readonly VM_ROOT=$VM_DIR/root
readonly INITRAMFS=$VM_DIR/initramfs.cpio.gz
readonly CONSOLE_LOG=$VM_DIR/console.log
readonly OUTPUT_LOG=$VM_DIR/output.log
readonly STATUS_FILE=$VM_DIR/status
readonly QEMU_LOG=$VM_DIR/qemu.log
readonly EXPORT_SERIAL=$VM_DIR/export.serial
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

build_initramfs()
{
	local kmods=$KBUILD_OUT/modroot/lib/modules

	[ -f "$BZIMAGE" ] || die "$BZIMAGE not built: run 'make kernel'"
	[ -d "$kmods" ] || die "$kmods missing: run 'make kernel'"
	rm -rf "$VM_ROOT"
	mkdir -p "$VM_ROOT"/{bin,lib,ktt}
	cp /bin/busybox "$VM_ROOT/bin/busybox"
	cp "$TOP_DIR/scripts/guest-init.sh" "$VM_ROOT/init"
	cp -r "$kmods" "$VM_ROOT/lib/modules"
	cp -r "$TOP_DIR/scripts" "$VM_ROOT/ktt/scripts"
	[ -d "$BUILD_DIR/selftests-install" ] && cp -r "$BUILD_DIR/selftests-install" "$VM_ROOT/ktt/selftests"
	[ -d "$BUILD_DIR/kvm-selftests-install" ] &&
		cp -r "$BUILD_DIR/kvm-selftests-install" "$VM_ROOT/ktt/kvm-selftests"
	if [ -f "$MODULE_OUT/kvm_tsc_probe.ko" ]; then
		mkdir -p "$VM_ROOT/ktt/module"
		cp "$MODULE_OUT/kvm_tsc_probe.ko" "$VM_ROOT/ktt/module/"
	fi
	[ "$NESTED" = 1 ] && add_nested
	printf '%s\n' "$*" >"$VM_ROOT/ktt/payload"
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
	cp "$TOP_DIR/scripts/serial-export.sh" "$L2_ROOT/serial-export.sh"
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
	mkdir -p "$VM_ROOT/ktt/nested"
	cp "$BZIMAGE" "$VM_ROOT/ktt/nested/bzImage"
	build_l2_initramfs "$VM_ROOT/ktt/nested/l2-initramfs.cpio.gz"
}

run_qemu()
{
	local tsc_khz

	# Telling the guest the rate spares it a calibration that fails without
	# a reference timer.
	tsc_khz=${VMTEST_TSC_KHZ:-$(host_tsc_khz)}

	: >"$OUTPUT_LOG"
	: >"$EXPORT_SERIAL"
	rm -f "$STATUS_FILE"
	rm -rf "$EXPORT_DIR"
	# thread=single: with multi-threaded TCG, a vCPU sometimes ran into the
	# int3 of a finished jump-label patch ("Oops: int3" in rcu_sched).
	qemu-system-x86_64 -accel tcg,thread=single -cpu EPYC -smp "$VM_CPUS" -m "$VM_MEM" \
		-nodefaults -display none -no-reboot \
		-kernel "$BZIMAGE" -initrd "$INITRAMFS" \
		-append "console=ttyS0 panic=-1 oops=panic tsc_early_khz=$tsc_khz tsc=reliable" \
		-serial "file:$CONSOLE_LOG" -serial "file:$OUTPUT_LOG" -serial "file:$STATUS_FILE" \
		-serial "file:$EXPORT_SERIAL" 2>"$QEMU_LOG" &
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

# Unpack and check what the payload exported, if anything.
import_export()
{
	[ -s "$EXPORT_SERIAL" ] || return 0
	import_files "$EXPORT_SERIAL" "$EXPORT_DIR" >"$VM_DIR/export.files" ||
		die "the files the VM exported over ttyS3 are damaged (above); stream: $EXPORT_SERIAL"
	note "exported into $EXPORT_DIR: $(tr '\n' ' ' <"$VM_DIR/export.files")"
}

main()
{
	local status=0

	[ $# -gt 0 ] || die "usage: ${0##*/} COMMAND..."
	need_cmd qemu-system-x86_64 qemu-system-x86
	need_cmd cpio cpio
	[ -x /bin/busybox ] && file -b /bin/busybox 2>/dev/null | grep -q static ||
		die "/bin/busybox is not a static busybox: install the Debian package busybox-static"
	trap cleanup EXIT
	mkdir -p "$VM_DIR"
	build_initramfs "$@"
	run_qemu
	payload_status || status=$?
	import_export
	return "$status"
}

main "$@"
