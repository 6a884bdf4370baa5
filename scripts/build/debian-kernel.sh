#!/bin/bash
# debian-kernel.sh: download a Debian kernel's image and headers packages with apt-get download and unpack them into one directory tree, installing nothing.
#
# usage: debian-kernel.sh KVER DIR     (KVER as uname -r prints it: 6.1.0-56-amd64)
#
# DIR/root is the packages' files as dpkg would lay them out from /: the
# kernel in boot/vmlinuz-KVER, its modules in lib/modules/KVER (indexed by
# depmod), the headers in usr/src/linux-headers-KVER, ready for
# make -C ... M= and dkms --kernelsourcedir with DIR/root/usr/bin on PATH. DIR/packages lists the .debs,
# written last: an interrupted run leaves no list, and the next starts over.

set -eu -o pipefail

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# The image, its headers, and what the headers need to build a module: the
# common headers and kbuild's programs (not gcc, which the machine has), and
# pahole, which the kernel's config records and module BTF is made with.
kernel_packages()
{
	local kver=$1 headers=linux-headers-$1

	echo "linux-image-$kver-unsigned" "$headers" pahole
	apt-cache depends "$headers" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-\(headers\|kbuild\)-[^ ]*\)$/\1/p'
}

download_packages()
{
	local kver=$1 dir=$2 packages

	packages=$(kernel_packages "$kver")
	[ "$(wc -w <<<"$packages")" -ge 5 ] ||
		die "the Debian archive has no headers package linux-headers-$kver (apt-get update?)"
	mkdir -p "$dir/debs"
	# shellcheck disable=SC2086 # one word a package
	(cd "$dir/debs" && apt-get download -q=2 -o APT::Sandbox::User=root $packages) ||
		die "apt-get download failed for: $packages"
}

# The headers' Makefile includes the common headers' by absolute path, and
# the build link points into /usr/src: both made to point into ROOT.
relocate_headers()
{
	local kver=$1 root=$2 makefile

	makefile=$root/usr/src/linux-headers-$kver/Makefile
	sed -i "s|^include /usr/src/|include $root/usr/src/|" "$makefile"
	grep -q "^include $root/" "$makefile" || die "$makefile: no include of the common headers"
	ln -sfn "../../../usr/src/linux-headers-$kver" "$root/lib/modules/$kver/build"
}

unpack_packages()
{
	local kver=$1 dir=$2 deb

	rm -rf "$dir/root"
	while read -r deb; do
		dpkg-deb -x "$deb" "$dir/root" || die "cannot unpack $deb"
	done < <(printf '%s\n' "$dir"/debs/*.deb)
	[ -f "$dir/root/boot/vmlinuz-$kver" ] || die "no boot/vmlinuz-$kver in the image package"
	relocate_headers "$kver" "$dir/root"
	depmod -b "$dir/root" "$kver" || die "depmod failed for $kver"
}

main()
{
	local kver=${1:-} dir=${2:-}

	[ $# = 2 ] || die "usage: ${0##*/} KVER DIR"
	need_cmd apt-get apt
	need_cmd depmod kmod
	dir=$(realpath -m "$dir")
	rm -rf "$dir"
	download_packages "$kver" "$dir"
	unpack_packages "$kver" "$dir"
	(cd "$dir/debs" && ls) >"$dir/packages.new"
	rm -rf "$dir/debs"
	mv "$dir/packages.new" "$dir/packages"
}

main "$@"
