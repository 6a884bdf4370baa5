#!/bin/bash
# vmtest.sh: run a command inside the test kernel under QEMU (AMD SVM) or Bochs (Intel VMX) and return its exit status.
#
# The options are in usage() below. COMMAND runs in /ktt, the repository.
# QEMU shares it over 9p (virtio), read-only, and DIR/export writable as
# /export for what the command brings out. Bochs has no 9p: the repository
# paths given with --files (and the kernel's modules) are copied into the
# initramfs's /ktt, and what the command leaves in /export comes back as a
# gzipped tar on the fourth serial port. The command's output is printed
# here; the console log stays in DIR.

set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/poll.sh
. "$(dirname "$0")/../lib/poll.sh"

usage()
{
	cat <<-EOF
		usage: ${0##*/} [OPTION...] [--] COMMAND...

		Boot the test kernel with busybox, run COMMAND, its words joined into
		one shell command line, from /ktt (the repository) and exit with its
		status; a warning, BUG, Oops, KASAN or lockdep report in the kernel
		log fails the run.

		  -m, --vmm qemu|bochs    the emulator: qemu (default; TCG, nested SVM) or
		                          bochs (Intel VMX, nested VMX and TSC scaling)
		  -d, --dir DIR           initramfs, logs and DIR/export, what the command
		                          leaves in /export (default build/vmtest)
		  -t, --timeout SECONDS   kill the VM after SECONDS (default 900)
		  -s, --silence SECONDS   stop the VM when, once the command has printed,
		                          neither the console, the command's output
		                          nor the export has grown for SECONDS, and
		                          show the console's last lines (default 120)
		  -f, --files "PATH..."   repository paths copied into /ktt under Bochs,
		                          which has no 9p
		  -a, --add DIR           copy DIR's tree into the VM's root as it is:
		                          what the command needs beyond busybox and
		                          trace-cmd (its own recipe builds DIR);
		                          repeatable
		  -c, --cpus N            the VM's CPUs (default 2)
		  -M, --mem SIZE          the VM's memory in G, like 2G (default 2G)
		  -k, --kernel test|debug|ROOT
		                          the kernel: the build in build/kernel (default)
		                          or build/kernel-debug, or a distribution's
		                          kernel package unpacked in ROOT (its
		                          boot/vmlinuz-KVER and lib/modules/KVER)
		      --tsc-khz KHZ       the guest TSC rate QEMU's guest is told
		                          (default the host's: TCG runs at its rate)
		  -h, --help              this text
	EOF
}

# The options into their variables; the command's words into ARGS.
parse_args()
{
	local kernel=test dir

	VMM=qemu VM_DIR=$BUILD_DIR/vmtest TIMEOUT=900 SILENCE=120 FILES='' ADD_DIRS=() VM_CPUS=2 VM_MEM=2G TSC_KHZ=''
	while [ $# -gt 0 ]; do
		case $1 in
		-h | --help) usage; exit 0 ;;
		--) shift; break ;;
		-*) [ $# -ge 2 ] || die "$1 needs a value (see -h)" ;;
		*) break ;;
		esac
		case $1 in
		-m | --vmm) VMM=$2 ;;
		-d | --dir) VM_DIR=$(realpath -m "$2") ;;
		-t | --timeout) TIMEOUT=$2 ;;
		-s | --silence) SILENCE=$2 ;;
		-f | --files) FILES=$2 ;;
		-a | --add) ADD_DIRS+=("$(realpath -m "$2")") ;;
		-c | --cpus) VM_CPUS=$2 ;;
		-M | --mem) VM_MEM=$2 ;;
		-k | --kernel) kernel=$2 ;;
		--tsc-khz) TSC_KHZ=$2 ;;
		*) die "unknown option $1 (see -h)" ;;
		esac
		shift 2
	done
	[ $# -gt 0 ] || { usage >&2; exit 2; }
	case $kernel in
	test) use_kernel_build "$BUILD_DIR/kernel" ;;
	debug) use_kernel_build "$BUILD_DIR/kernel-debug" ;;
	*) use_kernel_package "$(realpath -m "$kernel")" ;;
	esac
	need_number --timeout "$TIMEOUT"
	need_number --silence "$SILENCE"
	need_number --cpus "$VM_CPUS"
	[ "${VM_MEM%G}" != "$VM_MEM" ] || die "--mem $VM_MEM: give gigabytes, like 2G"
	need_number --mem "${VM_MEM%G}"
	[ -z "$TSC_KHZ" ] || need_number --tsc-khz "$TSC_KHZ"
	for dir in "${ADD_DIRS[@]}"; do
		[ -d "$dir" ] || die "--add $dir: not a directory"
	done
	ARGS=("$@")
}

# A kernel build: its bzImage, and its modules installed in its modroot,
# which the VM reaches through /ktt.
use_kernel_build()
{
	BZIMAGE=$1/arch/x86/boot/bzImage
	[ -f "$BZIMAGE" ] || die "$BZIMAGE not built: run 'make kernel'"
	case $1 in
	"$TOP_DIR"/*) MODROOT=${1#"$TOP_DIR"/}/modroot ;;
	*) die "$1 is outside $TOP_DIR, which is all the VM sees" ;;
	esac
	[ -d "$TOP_DIR/$MODROOT/lib/modules" ] || die "$TOP_DIR/$MODROOT missing: run 'make kernel'"
	PACKAGE_ROOT='' KVER=''
}

# A kernel package's files: the modules the VM needs go in the initramfs.
use_kernel_package()
{
	PACKAGE_ROOT=$1 MODROOT=''
	KVER=$(ls "$PACKAGE_ROOT/lib/modules" 2>/dev/null) ||
		die "--kernel $PACKAGE_ROOT: use test, debug or a kernel package's root with lib/modules/KVER"
	[ "$(wc -w <<<"$KVER")" = 1 ] || die "--kernel $PACKAGE_ROOT: lib/modules has more than one kernel: $KVER"
	BZIMAGE=$PACKAGE_ROOT/boot/vmlinuz-$KVER
	[ -f "$BZIMAGE" ] || die "--kernel $PACKAGE_ROOT: no boot/vmlinuz-$KVER"
}

# Fail unless VALUE, given with OPTION, is a positive number.
need_number()
{
	case $2 in
	'' | *[!0-9]* | 0) die "$1 $2: give a positive number" ;;
	esac
}

parse_args "$@"
readonly VMM VM_DIR TIMEOUT SILENCE FILES ADD_DIRS VM_CPUS VM_MEM TSC_KHZ ARGS
readonly BZIMAGE MODROOT PACKAGE_ROOT KVER
readonly VM_ROOT=$VM_DIR/root
readonly INITRAMFS=$VM_DIR/initramfs.cpio.gz
readonly CONSOLE_LOG=$VM_DIR/console.log
readonly OUTPUT_LOG=$VM_DIR/output.log
readonly STATUS_FILE=$VM_DIR/status
readonly VMM_LOG=$VM_DIR/$VMM.log
readonly EXPORT_DIR=$VM_DIR/export
readonly EXPORT_TAR=$VM_DIR/export.tar.gz
# What a kernel package's VM loads before it reaches /ktt: a distribution
# kernel has virtio, 9p, KVM and vhost's vsock (trace-cmd agent's channel
# to a guest) as modules.
readonly PACKAGE_MODULES="virtio_pci 9pnet_virtio 9p kvm_amd kvm_intel vhost_vsock"
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

# The kernel package's PACKAGE_MODULES and what they depend on, into the
# initramfs, uncompressed: busybox's modprobe reads no .ko.xz.
add_package_modules()
{
	local ko dest

	# shellcheck disable=SC2086 # a list of module names
	for ko in $(modprobe -d "$PACKAGE_ROOT" -S "$KVER" --show-depends -a $PACKAGE_MODULES |
		sed -n 's/^insmod \([^ ]*\).*/\1/p' | sort -u); do
		dest=$VM_ROOT${ko#"$PACKAGE_ROOT"}
		mkdir -p "${dest%/*}"
		case $ko in
		*.xz) xz -dc "$ko" >"${dest%.xz}" ;;
		*) cp "$ko" "$dest" ;;
		esac
	done
	cp "$PACKAGE_ROOT/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} "$VM_ROOT/lib/modules/$KVER/"
	depmod -b "$VM_ROOT" "$KVER" || die "depmod failed on the VM's modules"
}

# A distribution host's bash and kmod (modprobe, modinfo, insmod, rmmod,
# depmod), which busybox's applets stand in for elsewhere: a kernel
# package's VM runs scripts/host/kvm-swap.sh as such a host does. Placed
# before busybox installs its links, which leave these alone.
add_host_tools()
{
	local tool

	copy_with_libs bash "$VM_ROOT"
	[ -e "$VM_ROOT/bin/bash" ] || ln -s "$(command -v bash)" "$VM_ROOT/bin/bash"
	copy_with_libs kmod "$VM_ROOT"
	mkdir -p "$VM_ROOT/sbin"
	for tool in modprobe modinfo insmod rmmod depmod lsmod; do
		ln -s "$(command -v kmod)" "$VM_ROOT/sbin/$tool"
	done
}

# busybox, /init and the payload, the kernel's modules, and under Bochs
# what the payload reads from /ktt. kselftest's runner calls
# /usr/bin/timeout --foreground, which busybox's lacks; trace-cmd is for
# record-host.sh and its test.
build_initramfs()
{
	local dir

	need_cmd trace-cmd trace-cmd
	start_root "$VM_ROOT" scripts/guest/guest-init.sh
	copy_with_libs /usr/bin/timeout "$VM_ROOT"
	[ -z "$PACKAGE_ROOT" ] || { add_package_modules && add_host_tools; }
	# shellcheck disable=SC2086 # FILES is a list of paths, split on blanks
	[ "$VMM" = bochs ] && add_ktt_files "$VM_ROOT" $MODROOT $FILES
	for dir in "${ADD_DIRS[@]}"; do
		cp -a "$dir/." "$VM_ROOT/"
	done
	printf '%s\n' "$*" >"$VM_ROOT/payload"
	pack_root "$VM_ROOT" "$INITRAMFS" 1
}

# Start QEMU in the background, in VM_PID.
start_qemu()
{
	local tsc_khz=$TSC_KHZ

	# Told the rate, the guest skips a calibration failing without a reference timer.
	[ -n "$tsc_khz" ] || tsc_khz=$(host_tsc_khz)
	# thread=single: multi-threaded TCG can run a jump-label patch's stale
	# int3 (the user guide says more). pci=noacpi: the BIOS's routing table
	# gives the PCI interrupts, since the debug kernel's slow ACPI _PRT
	# evaluation can leave the 9p devices without IRQs.
	qemu-system-x86_64 -accel tcg,thread=single -cpu EPYC -smp "$VM_CPUS" -m "$VM_MEM" \
		-nodefaults -display none -no-reboot \
		-kernel "$BZIMAGE" -initrd "$INITRAMFS" \
		-append "console=ttyS0 panic=-1 oops=panic tsc_early_khz=$tsc_khz tsc=reliable pci=noacpi ${MODROOT:+ktt_modroot=$MODROOT }ktt_share=9p" \
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
		  APPEND console=ttyS0 panic=0 oops=panic tsc_early_khz=$BOCHS_TSC_KHZ tsc=reliable loglevel=4${MODROOT:+ ktt_modroot=$MODROOT}
	EOF
	xorriso -as mkisofs -quiet -o "$VM_DIR/boot.iso" -b isolinux.bin -c boot.cat \
		-no-emul-boot -boot-load-size 4 -boot-info-table "$iso_dir" 2>"$VM_DIR/xorriso.log" ||
		die "xorriso could not make the boot CD: $VM_DIR/xorriso.log"
}

# Start Bochs in the background, in VM_PID. It has no headless display but
# rfb (VNC) without waiting for a client; its sound mixer thread aborts
# ("buffer overflow detected") unless the sound driver is the dummy one; its
# debugger stops before the first instruction: "c" on stdin continues.
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
	local rc=0

	: >"$OUTPUT_LOG"
	: >"$CONSOLE_LOG"
	rm -rf "$STATUS_FILE" "$EXPORT_TAR" "$EXPORT_DIR"
	mkdir -p "$EXPORT_DIR"
	"start_$VMM"
	tail -n +1 -f --pid="$VM_PID" "$OUTPUT_LOG" &
	wait_vm || rc=$?
	if [ "$rc" != 0 ]; then
		kill "$VM_PID" 2>/dev/null || true
		wait "$VM_PID" 2>/dev/null || true
		VM_PID=
		[ "$rc" = 1 ] && die "the VM did not finish within ${TIMEOUT}s and was killed; console log: $CONSOLE_LOG"
		# The console's last lines say what a stalled kernel or guest was doing.
		echo "${0##*/}: the last lines of the VM's console:" >&2
		tail -n 15 "$CONSOLE_LOG" | sed 's/^/    /' >&2
		die "the VM printed nothing for ${SILENCE}s and was stopped; console log: $CONSOLE_LOG"
	fi
	VM_PID=
	wait
	[ "$VMM" != bochs ] || [ ! -s "$EXPORT_TAR" ] || tar -xzf "$EXPORT_TAR" -C "$EXPORT_DIR" ||
		die "the VM's /export came back damaged: $EXPORT_TAR"
}

# 0 once the VM has stopped; 2 when, once the command has printed,
# neither the VM's console, the command's output nor, under Bochs, the
# export on its serial port has grown for SILENCE seconds, so that a guest
# that stalls under TCG is stopped then, not at the timeout; 1 meanwhile.
# The boot counts only towards the timeout: under Bochs on a loaded machine
# the kernel took two silent minutes to unpack a large initramfs.
vm_done()
{
	local printed

	kill -0 "$VM_PID" 2>/dev/null || return 0
	[ -s "$OUTPUT_LOG" ] || return 1
	printed=$(stat -c %s "$CONSOLE_LOG" "$OUTPUT_LOG" "$EXPORT_TAR" 2>/dev/null | tr '\n' ' ')
	if [ "$printed" != "$PRINTED" ]; then
		PRINTED=$printed
		PRINTED_AT=$SECONDS
	elif [ $((SECONDS - PRINTED_AT)) -ge "$SILENCE" ]; then
		return 2
	fi
	return 1
}

# Bounded wait: poll, since bash's wait has no timeout. 1 at the
# timeout, 2 at a silence. Bochs exits 1 on the guest's power-off: its
# status is the payload's, on the serial port.
wait_vm()
{
	local rc=0

	PRINTED='' PRINTED_AT=$SECONDS
	wait_until "$TIMEOUT" vm_done || rc=$?
	[ "$rc" = 0 ] || return "$rc"
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

main()
{
	case $VMM in
	qemu) need_cmd qemu-system-x86_64 qemu-system-x86 ;;
	bochs)
		need_cmd bochs bochs
		need_cmd xorriso xorriso
		;;
	*) die "--vmm $VMM: use qemu or bochs" ;;
	esac
	need_cmd cpio cpio
	[ -x /bin/busybox ] && file -b /bin/busybox 2>/dev/null | grep -q static ||
		die "/bin/busybox is not a static busybox: install the Debian package busybox-static"
	trap cleanup EXIT
	mkdir -p "$VM_DIR"
	build_initramfs "${ARGS[@]}"
	run_vm
	payload_status
}

main
