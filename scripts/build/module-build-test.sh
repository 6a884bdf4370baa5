#!/bin/bash
# module-build-test.sh: TAP tests of the modules' build: from Debian's headers packages alone with dkms, and each kernel it must refuse.
#
# usage: module-build-test.sh KVER...   (the Debian kernels make check builds for)
#
# The dkms builds are make's (build/dkms/KVER); this checks what they made
# and what kbuild says of a kernel the modules cannot build for, and of a
# tracepoint declaration that differs from KVM's own trace.h.

# shellcheck source-path=SCRIPTDIR source=../lib/script-test.sh
. "$(dirname "$0")/../lib/script-test.sh"

debian_headers()
{
	echo "$BUILD_DIR/debian/$1/root/usr/src/linux-headers-$1"
}

# Both modules were built for KVER, with the vermagic of its own kvm.ko.
test_dkms_build()
{
	local kver=$1 stock ko want got

	stock=$(find "$BUILD_DIR/debian/$kver/root/lib/modules/$kver/kernel/arch/x86/kvm" -name 'kvm.ko*')
	want=$(modinfo -F vermagic "$stock") || return 1
	for ko in kvm_tsc_probe test_kvm_tsc; do
		got=$(modinfo -F vermagic "$BUILD_DIR/dkms/$kver/$ko.ko") || return 1
		[ "$got" = "$want" ] || { echo "# $ko.ko: vermagic '$got', $stock: '$want'"; return 1; }
	done
}

# Build the modules' sources, copied into WORK/NAME, against KDIR, with
# make's extra VAR=VALUE arguments.
build_modules()
{
	local name=$1 kdir=$2

	shift 2
	run_cmd make -C "$TOP_DIR/module" KDIR="$kdir" OUT="$WORK/$name" "$@"
}

# Kbuild refuses a kernel whose config lacks OPTION, in a line naming it.
test_refused_option()
{
	build_modules "no-$1" "$(debian_headers "$2")" "CONFIG_$1="
	expect_error "/Kbuild:[0-9]*: \*\*\* kvm-tsc-trace: Linux $2 has no .*: CONFIG_$1 is not set"
}

test_refused_version()
{
	build_modules old-version "$(debian_headers "$1")" PATCHLEVEL=5
	expect_error "tsc_tracepoints.h has no tracepoint declarations for Linux 6.5, only for 6.1 6.12"
}

# Against a full tree with the series, a declaration that differs from
# trace.h's fails the build, naming the tracepoint.
test_wrong_declaration()
{
	build_modules wrong-declaration "$KBUILD_OUT" &&
		sed -i 's/struct kvm_vcpu \*vcpu, u64 previous_tsc_offset/struct kvm_vcpu *vcpu, u32 previous_tsc_offset/' \
			"$WORK/wrong-declaration/tsc_tracepoints.h" &&
		run_cmd make -C "$KBUILD_OUT" M="$WORK/wrong-declaration" modules
	expect_error "tsc_tracepoints.h declares kvm_nested_tsc_offset unlike arch/x86/kvm/trace.h of $(cat "$KBUILD_OUT/include/config/kernel.release")"
}

main()
{
	local kver

	start_test
	ktap_set_plan $(($# + 4))
	for kver in "$@"; do
		ktap_test_result "dkms built both modules for Debian's $kver from its headers package alone" \
			test_dkms_build "$kver"
	done
	ktap_test_result "a kernel without KVM is refused in one line naming CONFIG_KVM" test_refused_option KVM "$1"
	ktap_test_result "a kernel without tracepoints is refused in one line naming CONFIG_TRACEPOINTS" \
		test_refused_option TRACEPOINTS "$1"
	ktap_test_result "a kernel version without declarations is refused, naming the versions there are" \
		test_refused_version "$1"
	ktap_test_result "a declaration unlike the full tree's trace.h fails the build, naming the tracepoint" \
		test_wrong_declaration
	ktap_finished
}

main "$@"
