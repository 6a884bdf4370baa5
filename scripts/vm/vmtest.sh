#!/bin/bash
# vmtest.sh: run a command inside the test kernel under QEMU (AMD SVM) or Bochs (Intel VMX) and return its exit status.
#
# usage: vmtest.sh COMMAND...
#
# VMTEST_VMM picks the emulator: qemu (the default: TCG, nested SVM) or
# bochs (Intel VMX with nested VMX and TSC scaling, which TCG lacks).
# COMMAND runs in /ktt, the repository. QEMU shares it over 9p (virtio),
# read-only, and VMTEST_DIR/export (default build/vmtest/export) writable
# as /export for what the command brings out. Bochs has no 9p: the
# repository paths listed in VMTEST_FILES (and the kernel's modules) are
# copied into the initramfs's /ktt, and what the command leaves in /export
# comes back as a gzipped tar on the fourth serial port. The command's
# output is printed here; the console log stays in VMTEST_DIR.
# KERNEL_VARIANT (test or debug) picks the kernel and its modules. The run
# fails when the VM does not report a status before VMTEST_TIMEOUT seconds
# (default 900), or when the kernel log shows a warning, BUG, Oops, KASAN or
# lockdep report.
#
# VMTEST_NESTED=1 also puts into the initramfs what a nested guest needs:
# qemu-system-x86_64 and trace-cmd with their libraries and QEMU's
# firmware, and in /nested the kernel and the nested guest's initramfs
# (scripts/guest/nested-guest-init.sh as /init, busybox, trace-cmd and the
# libgcc_s its threads need), and gives
# the VM one CPU unless VMTEST_CPUS says otherwise; scripts/guest/vm-nested-trace.sh
# says why.

set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly VMM=${VMTEST_VMM:-qemu}
readonly VM_DIR=${VMTEST_DIR:-$BUILD_DIR/vmtest}
readonly VM_ROOT=$VM_DIR/root
readonly INITRAMFS=$VM_DIR/initramfs.cpio.gz
readonly CONSOLE_LOG=$VM_DIR/console.log
readonly OUTPUT_LOG=$VM_DIR/output.log
readonly STATUS_FILE=$VM_DIR/status
readonly VMM_LOG=$VM_DIR/$VMM.log
readonly EXPORT_DIR=$VM_DIR/export
readonly EXPORT_TAR=$VM_DIR/export.tar.gz
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
# Where the modules are, relative to /ktt, for guest-init.sh.
readonly MODROOT=${KBUILD_OUT#"$TOP_DIR"/}/modroot
# Kernel messages that fail a run whatever the payload said.
readonly SPLAT_RE='WARNING: CPU:|BUG: |Oops|Kernel panic|KASAN|UBSAN|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|Marking TSC unstable'
# Bochs: a Skylake-X with VMX (EPT, unrestricted guest, shadow VMCS, TSC
# offsetting and scaling), its TSC at the 3.5 GHz its CPUID reports.
readonly BOCHS_TSC_KHZ=3500000
readonly BOCHS_CPU="model=corei7_skylake_x, ips=${BOCHS_TSC_KHZ}000"
readonly ISOLINUX_FILES="/usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32"

cleanup()
{
	[ -n "${VM_PID:-}" ] && kill "$VM_PID" 2>/dev/null
	return 0
}

# busybox, /init and the payload, and under Bochs what the payload reads
# from /ktt. kselftest's runner calls /usr/bin/timeout --foreground, which
# busybox's lacks; trace-cmd is for record-host.sh and its test.
build_initramfs()
{
	[ -f "$BZIMAGE" ] || die "$BZIMAGE not built: run 'make kernel'"
	[ -d "$TOP_DIR/$MODROOT/lib/modules" ] || die "$TOP_DIR/$MODROOT missing: run 'make kernel'"
	rm -rf "$VM_ROOT"
	mkdir -p "$VM_ROOT/bin"
	cp /bin/busybox "$VM_ROOT/bin/busybox"
	cp "$TOP_DIR/scripts/guest/guest-init.sh" "$VM_ROOT/init"
	copy_with_libs /usr/bin/timeout "$VM_ROOT"
	need_cmd trace-cmd trace-cmd
	copy_with_libs trace-cmd "$VM_ROOT"
	[ "$NESTED" = 1 ] && add_nested
	# shellcheck disable=SC2086 # VMTEST_FILES is a list of paths, split on blanks
	[ "$VMM" = bochs ] && add_ktt_files "$MODROOT" ${VMTEST_FILES:-}
	printf '%s\n' "$*" >"$VM_ROOT/payload"
	(cd "$VM_ROOT" && find . | cpio -o -H newc --quiet | gzip -1) >"$INITRAMFS"
}

# Copy repository paths into the initramfs's /ktt, where 9p would show them.
add_ktt_files()
{
	local path

	for path in "$@"; do
		[ -e "$TOP_DIR/$path" ] || die "VMTEST_FILES: $TOP_DIR/$path does not exist"
		mkdir -p "$VM_ROOT/ktt/$(dirname "$path")"
		cp -a "$TOP_DIR/$path" "$VM_ROOT/ktt/$path"
	done
}

# The nested guest's initramfs: its /init, busybox and trace-cmd. glibc
# loads libgcc_s with dlopen() for pthread_exit(), which ldd does not list:
# without it, trace-cmd agent aborts when a recording ends ("libgcc_s.so.1
# must be installed for pthread_exit to work").
build_l2_initramfs()
{
	local out=$1 lib

	rm -rf "$L2_ROOT"
	mkdir -p "$L2_ROOT/bin"
	cp /bin/busybox "$L2_ROOT/bin/busybox"
	cp "$TOP_DIR/scripts/guest/nested-guest-init.sh" "$L2_ROOT/init"
	copy_with_libs trace-cmd "$L2_ROOT"
	# Where glibc looks for it: beside the libc trace-cmd runs with.
	lib=$(ldd "$(command -v trace-cmd)" | sed -n 's/.*libc\.so\.6 => \(\/[^ ]*\)\/libc\.so\.6 .*/\1/p')/libgcc_s.so.1
	[ -f "$lib" ] || die "$lib not found: install the Debian package libgcc-s1"
	mkdir -p "$L2_ROOT${lib%/*}"
	cp -L "$lib" "$L2_ROOT$lib"
	(cd "$L2_ROOT" && find . | cpio -o -H newc --quiet | gzip -9) >"$out"
}

# What vm-nested-trace.sh runs a nested guest with.
add_nested()
{
	local fw

	copy_with_libs qemu-system-x86_64 "$VM_ROOT"
	for fw in $QEMU_FIRMWARE; do
		[ -f "$fw" ] || die "$fw missing: install the Debian packages seabios and qemu-system-data"
		mkdir -p "$VM_ROOT${fw%/*}"
		cp -L "$fw" "$VM_ROOT$fw"
	done
	mkdir -p "$VM_ROOT/nested"
	cp "$BZIMAGE" "$VM_ROOT/nested/bzImage"
	build_l2_initramfs "$VM_ROOT/nested/l2-initramfs.cpio.gz"
}

# Start QEMU in the background, in VM_PID.
start_qemu()
{
	local tsc_khz

	# Telling the guest the rate spares it a calibration that fails without
	# a reference timer.
	tsc_khz=${VMTEST_TSC_KHZ:-$(host_tsc_khz)}
	# thread=single: with multi-threaded TCG, a vCPU sometimes ran into the
	# int3 of a finished jump-label patch ("Oops: int3" in rcu_sched).
	# pci=noacpi: the PCI interrupts come from the BIOS's routing table;
	# evaluating ACPI's _PRT took the debug kernel past ACPICA's 30 s loop
	# limit on a busy machine, and the 9p devices were left without IRQs.
	qemu-system-x86_64 -accel tcg,thread=single -cpu EPYC -smp "$VM_CPUS" -m "$VM_MEM" \
		-nodefaults -display none -no-reboot \
		-kernel "$BZIMAGE" -initrd "$INITRAMFS" \
		-append "console=ttyS0 panic=-1 oops=panic tsc_early_khz=$tsc_khz tsc=reliable pci=noacpi ktt_modroot=$MODROOT ktt_share=9p" \
		-virtfs "local,path=$TOP_DIR,mount_tag=ktt,security_model=none,readonly=on" \
		-virtfs "local,path=$EXPORT_DIR,mount_tag=export,security_model=none" \
		-serial "file:$CONSOLE_LOG" -serial "file:$OUTPUT_LOG" -serial "file:$STATUS_FILE" \
		2>"$VMM_LOG" &
	VM_PID=$!
}

# Bochs has no -kernel: isolinux boots the kernel and initramfs from a CD.
make_iso()
{
	local iso_dir=$VM_DIR/iso f

	rm -rf "$iso_dir"
	mkdir -p "$iso_dir"
	for f in $ISOLINUX_FILES; do
		[ -f "$f" ] || die "$f missing: install the Debian packages isolinux and syslinux-common"
		cp "$f" "$iso_dir/"
	done
	cp "$BZIMAGE" "$iso_dir/bzImage"
	cp "$INITRAMFS" "$iso_dir/initrd.gz"
	# panic=0: Bochs cannot be told not to reboot; a panicked kernel waits
	# for the timeout instead of running the payload again.
	cat >"$iso_dir/isolinux.cfg" <<-EOF
		DEFAULT ktt
		PROMPT 0
		LABEL ktt
		  KERNEL /bzImage
		  INITRD /initrd.gz
		  APPEND console=ttyS0 panic=0 oops=panic tsc_early_khz=$BOCHS_TSC_KHZ tsc=reliable loglevel=4 ktt_modroot=$MODROOT
	EOF
	xorriso -as mkisofs -quiet -o "$VM_DIR/boot.iso" -b isolinux.bin -c boot.cat \
		-no-emul-boot -boot-load-size 4 -boot-info-table "$iso_dir" 2>"$VM_DIR/xorriso.log" ||
		die "xorriso could not make the boot CD: $VM_DIR/xorriso.log"
}

# Start Bochs in the background, in VM_PID. It has no headless display but
# rfb (VNC) without waiting for a client; its sound mixer thread aborts
# ("buffer overflow detected") unless the sound driver is the dummy one;
# its debugger stops before the first instruction and is told to continue
# on stdin.
start_bochs()
{
	make_iso
	cat >"$VM_DIR/bochsrc" <<-EOF
		cpu: $BOCHS_CPU
		memory: guest=${VM_MEM%G}000, host=${VM_MEM%G}000
		romimage: file=/usr/share/bochs/BIOS-bochs-latest
		vgaromimage: file=/usr/share/bochs/VGABIOS-lgpl-latest
		ata0-master: type=cdrom, path="$VM_DIR/boot.iso", status=inserted
		boot: cdrom
		clock: sync=none, time0=local
		com1: enabled=1, mode=file, dev="$CONSOLE_LOG"
		com2: enabled=1, mode=file, dev="$OUTPUT_LOG"
		com3: enabled=1, mode=file, dev="$STATUS_FILE"
		com4: enabled=1, mode=file, dev="$EXPORT_TAR"
		display_library: rfb, options="timeout=0"
		sound: driver=dummy
		log: "$VM_DIR/bochs-events.log"
		panic: action=fatal
		error: action=report
		info: action=ignore
	EOF
	echo c | bochs -q -f "$VM_DIR/bochsrc" >"$VMM_LOG" 2>&1 &
	VM_PID=$!
}

# Run the VM to its end with the payload's output shown as it comes.
run_vm()
{
	: >"$OUTPUT_LOG"
	: >"$CONSOLE_LOG"
	rm -f "$STATUS_FILE" "$EXPORT_TAR"
	rm -rf "$EXPORT_DIR"
	mkdir -p "$EXPORT_DIR"
	"start_$VMM"
	tail -n +1 -f --pid="$VM_PID" "$OUTPUT_LOG" &
	if ! wait_vm; then
		kill "$VM_PID" 2>/dev/null || true
		wait "$VM_PID" 2>/dev/null || true
		VM_PID=
		die "the VM did not finish within ${TIMEOUT}s and was killed; console log: $CONSOLE_LOG"
	fi
	VM_PID=
	wait
	[ "$VMM" = bochs ] && unpack_export
	return 0
}

# What the payload left in the VM's /export, from the serial port.
unpack_export()
{
	[ -s "$EXPORT_TAR" ] || return 0
	tar -xzf "$EXPORT_TAR" -C "$EXPORT_DIR" ||
		die "the VM's /export came back damaged: $EXPORT_TAR"
}

# Bounded wait: poll, since bash's wait has no timeout. Bochs exits 1 on
# the guest's power-off: its status is the payload's, on the serial port.
wait_vm()
{
	local waited=0

	while kill -0 "$VM_PID" 2>/dev/null; do
		[ "$waited" -lt "$TIMEOUT" ] || return 1
		sleep 1
		waited=$((waited + 1))
	done
	wait "$VM_PID" || [ "$VMM" = bochs ] || note "$VMM exited with status $?, see $VMM_LOG"
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

check_vmm()
{
	case $VMM in
	qemu) need_cmd qemu-system-x86_64 qemu-system-x86 ;;
	bochs)
		need_cmd bochs bochs
		need_cmd xorriso xorriso
		;;
	*) die "VMTEST_VMM=$VMM: use qemu or bochs" ;;
	esac
}

main()
{
	[ $# -gt 0 ] || die "usage: ${0##*/} COMMAND..."
	check_vmm
	need_cmd cpio cpio
	if [ ! -x /bin/busybox ] || ! file -b /bin/busybox 2>/dev/null | grep -q static; then
		die "/bin/busybox is not a static busybox: install the Debian package busybox-static"
	fi
	case $KBUILD_OUT in
	"$TOP_DIR"/*) ;;
	*) die "$KBUILD_OUT is outside $TOP_DIR, which is all the VM sees" ;;
	esac
	trap cleanup EXIT
	mkdir -p "$VM_DIR"
	build_initramfs "$@"
	run_vm
	payload_status
}

main "$@"
