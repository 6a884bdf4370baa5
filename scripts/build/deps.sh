#!/bin/bash
# deps.sh: install, with apt-get, the Debian packages the project needs that are not installed yet.

set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly PACKAGES="build-essential gcc make flex bison bc libelf-dev libssl-dev cpio
	kmod pkg-config git file qemu-system-x86 busybox-static linux-source-6.12
	trace-cmd libtracefs-dev libtraceevent-dev libtracecmd-dev libzstd-dev zlib1g-dev sparse ccache
	seabios qemu-system-data jq rsync python3-ply
	bochs bochsbios vgabios isolinux syslinux-common xorriso
	libkshark-dev libjson-c-dev protobuf-compiler protobuf-c-compiler libprotobuf-c-dev
	clang afl++ shellcheck dkms"

missing_packages()
{
	local pkg

	for pkg in $PACKAGES; do
		dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' ||
			echo "$pkg"
	done
}

main()
{
	local missing

	missing=$(missing_packages | tr '\n' ' ')
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
