#!/bin/bash
# deps.sh: install, with apt-get, the Debian packages of the groups named (build, tools, test; default all) that are not installed yet.

set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# The packages by what needs them, so that each make target installs only
# its own: "build" builds a kernel (a user's, with make apply and make
# kernel-config); "tools" builds and tests kvm-tsc-merge and records traces;
# "test" builds the project's test kernels and selftests, boots them in QEMU
# and Bochs, and fuzzes and lints (make check, make demo). Not pahole:
# installed, it changes CONFIG_PAHOLE_VERSION in the test kernels' config,
# and every object ccache kept; the Debian kernels' builds, which need it,
# use the copy debian-kernel.sh unpacks, with its libraries from here.
readonly BUILD_PACKAGES="build-essential gcc make flex bison bc libelf-dev libssl-dev cpio
	kmod git patch file"
readonly TOOLS_PACKAGES="build-essential pkg-config git file trace-cmd libtracefs-dev
	libtraceevent-dev libtracecmd-dev libzstd-dev zlib1g-dev clang jq
	libkshark-dev libjson-c-dev protobuf-compiler protobuf-c-compiler libprotobuf-c-dev
	libprotobuf-dev"
readonly TEST_PACKAGES="qemu-system-x86 busybox-static linux-source-6.12 sparse ccache
	seabios qemu-system-data rsync python3-ply
	bochs bochsbios vgabios isolinux syslinux-common xorriso
	linux-source-6.1 afl++ shellcheck dkms libdw1 libbpf1"

# The packages of the groups named, each once; all three groups when none is.
group_packages()
{
	local group

	[ $# != 0 ] || set -- build tools test
	for group in "$@"; do
		case $group in
		build) echo "$BUILD_PACKAGES" ;;
		tools) echo "$TOOLS_PACKAGES" ;;
		test) echo "$TEST_PACKAGES" ;;
		*) die "unknown package group '$group': build, tools or test" ;;
		esac
	done
}

missing_packages()
{
	local pkg

	for pkg in $(printf '%s\n' $1 | sort -u); do
		dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' ||
			echo "$pkg"
	done
}

main()
{
	local packages missing

	packages=$(group_packages "$@")
	missing=$(missing_packages "$packages" | tr '\n' ' ')
	if [ -z "${missing// /}" ]; then
		note "all packages installed"
		return 0
	fi
	[ "$(id -u)" = 0 ] || die "missing Debian packages, install them as root: apt-get install $missing"
	note "installing $missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || die "apt-get update failed"
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
		die "apt-get install failed for: $missing"
}

main "$@"
