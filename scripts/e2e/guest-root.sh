#!/bin/bash
# guest-root.sh: fill a directory with what a KVM host needs to record the end-to-end guests, for vmtest.sh --add.
#
# usage: guest-root.sh [--linux] DIR
#
# DIR gets QEMU with its firmware and, under /e2e, the test kernel, the
# guest's initramfs (guest.cpio.gz) and scenario.sh, which
# scripts/e2e/record-pair.sh boots and reads. The guest's initramfs has
# busybox, scripts/e2e/guest-init.sh as /init, scenario.sh, trace-cmd, the
# test kernel's KVM modules and tsc_nested_payload, so that it can run a
# guest of its own. With --linux, that guest is a Linux guest: the guest's
# initramfs also gets QEMU, the kernel, an initramfs for its own guest and
# what records it (record-pair.sh and record-host.sh under /ktt).

set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# What QEMU loads to boot a -kernel on the pc machine, from its firmware path.
readonly QEMU_FIRMWARE="/usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin /usr/share/qemu/kvmvapic.bin"
readonly BZIMAGE=$KBUILD_OUT/arch/x86/boot/bzImage
# The payload whose guest the guest runs in scenario nested.
readonly PAYLOAD=$BUILD_DIR/selftests-install/kvm-tsc-trace/tsc_nested_payload
# What a guest that records a Linux guest of its own runs, under its /ktt.
readonly RECORDER_FILES="scripts/e2e/record-pair.sh tools/record-host/record-host.sh scripts/lib/poll.sh"

# A guest's root in ROOT: its /init, busybox, trace-cmd and scenario.sh. glibc
# loads libgcc_s with dlopen() for pthread_exit(), which ldd does not list:
# without it, trace-cmd agent aborts when a recording ends ("libgcc_s.so.1
# must be installed for pthread_exit to work").
fill_guest_root()
{
	local root=$1 lib

	start_root "$root" scripts/e2e/guest-init.sh
	add_scenario_lib "$root"
	# Where glibc looks for it: beside the libc trace-cmd runs with.
	lib=$(ldd "$(command -v trace-cmd)" | sed -n 's/.*libc\.so\.6 => \(\/[^ ]*\)\/libc\.so\.6 .*/\1/p')/libgcc_s.so.1
	[ -f "$lib" ] || die "$lib not found: install the Debian package libgcc-s1"
	mkdir -p "$root${lib%/*}"
	cp -L "$lib" "$root$lib"
}

# What the guest needs to be a KVM host itself: the test kernel's KVM
# modules (the guest boots that kernel), and tsc_nested_payload, which
# selftests/Makefile links statically like every program of the
# collection, so that it needs no library; stripped, to keep the
# initramfs small. A payload not built is only noted: the scenarios
# without it do without, and guest-init.sh says it is missing.
add_kvm()
{
	local root=$1

	mkdir -p "$root/lib"
	cp -a "$KBUILD_OUT/modroot/lib/modules" "$root/lib/"
	if [ -x "$PAYLOAD" ]; then
		mkdir -p "$root/usr/bin"
		strip -o "$root/usr/bin/${PAYLOAD##*/}" "$PAYLOAD"
	else
		note "$PAYLOAD not built ('make selftests'): scenario nested will fail"
	fi
}

# scenario.sh, where the scripts of every level source it.
add_scenario_lib()
{
	mkdir -p "$1/e2e"
	cp "$TOP_DIR/scripts/e2e/scenario.sh" "$1/e2e/"
}

# QEMU, its firmware, the kernel and scenario.sh in ROOT, to boot a guest
# with; the guest's initramfs is the caller's.
add_vmm()
{
	local root=$1 fw

	copy_with_libs qemu-system-x86_64 "$root"
	for fw in $QEMU_FIRMWARE; do
		[ -f "$fw" ] || die "$fw missing: install the Debian packages seabios and qemu-system-data"
		mkdir -p "$root${fw%/*}"
		cp -L "$fw" "$root$fw"
	done
	add_scenario_lib "$root"
	cp "$BZIMAGE" "$root/e2e/bzImage"
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
		pack_root "$work/inner" "$work/guest/e2e/guest.cpio.gz" 9
		# shellcheck disable=SC2086 # a list of paths
		add_ktt_files "$work/guest" $RECORDER_FILES
	fi
	pack_root "$work/guest" "$dir/e2e/guest.cpio.gz" 9
	rm -rf "$work"
}

main "$@"
