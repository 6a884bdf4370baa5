#!/bin/bash
# nested-root.sh: fill a directory with what the test VM needs to run a nested guest, for vmtest.sh --add.
#
# usage: nested-root.sh [--linux] DIR
#
# DIR gets QEMU with its firmware, and under /nested the test kernel and
# the nested guest's initramfs: busybox, scripts/guest/nested-guest-init.sh
# as /init, trace-cmd, the test kernel's KVM modules and
# tsc_nested_payload, so that the nested guest can run a guest of its own.
# With --linux, that guest is a Linux guest: the nested guest's initramfs
# also gets QEMU, the kernel, the innermost guest's initramfs and the
# scripts that record it (vm-nested-trace.sh and record-host.sh) in its
# /ktt. scripts/guest/vm-nested-trace.sh runs the nested guest from these.

set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# What QEMU loads to boot a -kernel on the pc machine, from its firmware path.
readonly QEMU_FIRMWARE="/usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin /usr/share/qemu/kvmvapic.bin"
readonly BZIMAGE=$KBUILD_OUT/arch/x86/boot/bzImage
# The innermost guest's program, which the nested guest's initramfs gets.
readonly NESTED_PAYLOAD=$BUILD_DIR/selftests-install/kvm-tsc-trace/tsc_nested_payload
# What a nested guest that records a Linux guest runs, under its /ktt.
readonly RECORDER_FILES="scripts/guest/vm-nested-trace.sh tools/record-host/record-host.sh scripts/lib/poll.sh"

# A nested guest's root in ROOT: its /init, busybox and trace-cmd. glibc
# loads libgcc_s with dlopen() for pthread_exit(), which ldd does not list:
# without it, trace-cmd agent aborts when a recording ends ("libgcc_s.so.1
# must be installed for pthread_exit to work").
fill_guest_root()
{
	local root=$1 lib

	rm -rf "$root"
	mkdir -p "$root/bin"
	cp /bin/busybox "$root/bin/busybox"
	cp "$TOP_DIR/scripts/guest/nested-guest-init.sh" "$root/init"
	copy_with_libs trace-cmd "$root"
	add_poll_lib "$root"
	# Where glibc looks for it: beside the libc trace-cmd runs with.
	lib=$(ldd "$(command -v trace-cmd)" | sed -n 's/.*libc\.so\.6 => \(\/[^ ]*\)\/libc\.so\.6 .*/\1/p')/libgcc_s.so.1
	[ -f "$lib" ] || die "$lib not found: install the Debian package libgcc-s1"
	mkdir -p "$root${lib%/*}"
	cp -L "$lib" "$root$lib"
}

# ROOT as a gzipped initramfs OUT.
pack_root()
{
	(cd "$1" && find . | cpio -o -H newc --quiet | gzip -9) >"$2"
}

# What the nested guest needs to be a KVM host itself: the test kernel's
# KVM modules (the nested guest boots that kernel), and
# tsc_nested_payload, which selftests/Makefile links statically like
# every program of the collection, so that it needs no library; stripped,
# to keep the initramfs small. A payload not built is only noted: the
# modes without a guest in the nested guest do without it, and the nested
# guest's mode nested says it is missing.
add_kvm()
{
	local root=$1

	mkdir -p "$root/lib"
	cp -a "$KBUILD_OUT/modroot/lib/modules" "$root/lib/"
	if [ -x "$NESTED_PAYLOAD" ]; then
		mkdir -p "$root/usr/bin"
		strip -o "$root/usr/bin/${NESTED_PAYLOAD##*/}" "$NESTED_PAYLOAD"
	else
		note "$NESTED_PAYLOAD not built ('make selftests'): the nested guest's mode nested will fail"
	fi
}

# QEMU, its firmware and the kernel in ROOT, to boot a guest with; the
# guest's initramfs is the caller's.
add_vmm()
{
	local root=$1 fw

	copy_with_libs qemu-system-x86_64 "$root"
	for fw in $QEMU_FIRMWARE; do
		[ -f "$fw" ] || die "$fw missing: install the Debian packages seabios and qemu-system-data"
		mkdir -p "$root${fw%/*}"
		cp -L "$fw" "$root$fw"
	done
	mkdir -p "$root/nested"
	cp "$BZIMAGE" "$root/nested/bzImage"
}

main()
{
	local linux='' dir work

	[ "${1:-}" = --linux ] && { linux=1; shift; }
	[ $# = 1 ] || die "usage: ${0##*/} [--linux] DIR"
	[ -f "$BZIMAGE" ] || die "$BZIMAGE not built: run 'make kernel'"
	dir=$1
	work=$dir.work
	rm -rf "$dir" "$work"
	mkdir -p "$dir" "$work"
	add_vmm "$dir"
	fill_guest_root "$work/guest"
	add_kvm "$work/guest"
	if [ -n "$linux" ]; then
		add_vmm "$work/guest"
		fill_guest_root "$work/inner"
		pack_root "$work/inner" "$work/guest/nested/l2-initramfs.cpio.gz"
		# shellcheck disable=SC2086 # a list of paths
		add_ktt_files "$work/guest" $RECORDER_FILES
	fi
	pack_root "$work/guest" "$dir/nested/l2-initramfs.cpio.gz"
	rm -rf "$work"
}

main "$@"
