#!/bin/bash
# kvm-modules.sh: build kvm.ko, kvm-amd.ko and kvm-intel.ko from a tree with the series for a distribution kernel, from that kernel's headers, so they load in place of its own.
#
# usage: [KSRC=/path/to/linux] [KHEADERS=DIR] [OUT=DIR] [STOCK=DIR] [VMLINUX=FILE] kvm-modules.sh
#        (make kvm-modules [KVER=RELEASE] [KSRC=...] [KHEADERS=...])
#
# KSRC is the kernel's own source with the series applied (default the
# packaged tree, build/linux); KHEADERS the kernel's build directory, with
# its .config, Module.symvers and generated headers (default
# /lib/modules/$(uname -r)/build); OUT where the modules go (default
# build/kvm-modules/RELEASE); STOCK the directory of the kernel's own
# modules that the built ones are compared with (default
# /lib/modules/RELEASE/kernel). JOBS=N sets make's jobs; VMLINUX=FILE gives
# the kernel's BTF where the headers have no vmlinux (see btf_base).
#
# Only the headers' files are read, never their Makefile: kbuild runs from
# KSRC with an object directory OUT/obj of its own, which gets the headers'
# .config and KERNELRELEASE (so vermagic is the kernel's, byte for byte) and
# their Module.symvers (so the modules' symbol versions and depends are the
# kernel's). arch/x86/kvm is then built there as an external module (M=):
# only that mode reads Module.symvers, and virt/kvm comes along through
# ../../../virt/kvm as in the tree, both from a tree of symbolic links to
# KSRC under OUT/src, since M= builds in its source directory.

set -eu -o pipefail

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly KVM_MODULES="kvm kvm-amd kvm-intel"

check_headers()
{
	local dir=$1 f

	for f in .config Module.symvers include/generated/utsrelease.h include/generated/uapi/linux/version.h; do
		[ -f "$dir/$f" ] ||
			die "KHEADERS=$dir is not a kernel's build directory: $f is missing (install the kernel's headers package, e.g. linux-headers-$(uname -r))"
	done
}

# The compiler the kernel was built with, as its config names it (Debian:
# x86_64-linux-gnu-gcc-12): the same name gives the same CONFIG_CC_VERSION_TEXT,
# so syncconfig changes nothing and kbuild does not warn that it differs.
kernel_compiler()
{
	local config=$1 cc

	cc=$(option_value CONFIG_CC_VERSION_TEXT "$config")
	cc=${cc#\"}
	cc=${cc%% *}
	[ -n "$cc" ] && [ "$cc" != unset ] || die "$config has no CONFIG_CC_VERSION_TEXT"
	command -v "$cc" >/dev/null 2>&1 ||
		die "the kernel was built with $cc, which is not installed (Debian: the package gcc-${cc##*-}, or the kernel's linux-compiler-gcc-* package)"
	echo "$cc"
}

# The release as vermagic has it: UTS_RELEASE, not include/config/kernel.release,
# which Debian's 6.1 headers give as the plain version (6.1.192).
kernel_release()
{
	sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$1/include/generated/utsrelease.h"
}

# The kernel's version, from its uapi version.h (Debian's 6.1.0-56 is 6.1.192).
kernel_version()
{
	local f=$1/include/generated/uapi/linux/version.h

	printf '%s.%s.%s\n' "$(awk '/define LINUX_VERSION_MAJOR/ { print $3 }' "$f")" \
		"$(awk '/define LINUX_VERSION_PATCHLEVEL/ { print $3 }' "$f")" \
		"$(awk '/define LINUX_VERSION_SUBLEVEL/ { print $3 }' "$f")"
}

# A tree of another version builds modules the kernel refuses or, worse,
# loads with structures laid out differently.
check_source_version()
{
	local tree=$1 want=$2 version

	version=$(kernel_version_of "$tree")
	[ "$version" = "$want" ] ||
		die "KSRC=$tree is Linux $version, the kernel is $want ($RELEASE): use that kernel's own source (Debian: linux-source-${want%.*} of the same version as the image)"
}

# Debian's package version of the kernel (6.12.117-1~deb12u1), from its
# UTS_VERSION, and of the packaged tree kernel-tree.sh unpacked: a revision
# with other Debian patches has the same kernelversion.
check_debian_version()
{
	local tree=$1 theirs ours

	theirs=$(sed -n 's/.* Debian \([^ ]*\) .*/\1/p' "$KHEADERS_DIR/include/generated/utsversion.h" 2>/dev/null || true)
	[ -n "$theirs" ] || return 0
	ours=$(cat "$tree/.git/kvm-tsc-trace.version" 2>/dev/null || true)
	if [ -z "$ours" ]; then
		note "the kernel is Debian's $theirs: KSRC=$tree must be that version's linux-source too (not checked)"
	elif [ "$ours" != "$theirs" ]; then
		die "KSRC=$tree is Debian's linux-source $ours, the kernel is Debian's $theirs: install linux-source of $theirs"
	fi
}

# The .config copied only when it changed, so a second build is incremental.
copy_if_changed()
{
	cmp -s "$1" "$2" || cp "$1" "$2"
}

# Under make, its jobserver; otherwise JOBS or one job a core.
make_jobs()
{
	case ${MAKEFLAGS:-} in
	*jobserver*) ;;
	*) echo "-j${JOBS:-$(nproc)}" ;;
	esac
}

# Kconfig records the rustc it finds, which Debian's builds had none of
# (6.12: CONFIG_RUSTC_VERSION=0; 6.1: no CONFIG_RUST_IS_AVAILABLE): unless
# the kernel's config says it had one, this build is shown none either.
rustc_arg()
{
	local version

	[ "$(option_value CONFIG_RUST_IS_AVAILABLE "$1")" != y ] || return 0
	version=$(option_value CONFIG_RUSTC_VERSION "$1")
	[ "$version" = 0 ] || [ "$version" = unset ] || return 0
	echo RUSTC=kvm-tsc-trace-no-rustc
}

kbuild()
{
	local log=$1

	shift
	# shellcheck disable=SC2046 # make_jobs and rustc_arg print one word or none
	make -C "$KSRC_DIR" O="$OBJ" CC="$KCC" KERNELRELEASE="$RELEASE" $(rustc_arg "$KHEADERS_DIR/.config") \
		$(make_jobs) "$@" >>"$log" 2>&1 ||
		die "make $* failed: $log says:
$(grep -m5 -e 'error' -e 'Error' "$log" || tail -5 "$log")"
}

# modules_prepare's config must be the kernel's: an option syncconfig turned
# off (no pahole, another compiler) changes the modules' code or layout.
check_config_same()
{
	local ours=$1 theirs=$2 diffs

	diffs=$(diff <(grep '^CONFIG_' "$theirs" | sort) <(grep '^CONFIG_' "$ours" | sort) | grep '^[<>]' || true)
	[ -z "$diffs" ] || die "the build's config differs from the kernel's (< kernel, > build):
$(head -10 <<<"$diffs")"
}

# A header the kernel and the build each generated, compared on one define.
check_generated_same()
{
	local header=$1 define=$2 theirs ours

	theirs=$(grep -E "define ${define}[[:space:]]" "$KHEADERS_DIR/include/generated/$header" 2>/dev/null || true)
	# Before 6.3 compile.h is made with vmlinux, not by modules_prepare.
	ours=$(grep -E "define ${define}[[:space:]]" "$OBJ/include/generated/$header" 2>/dev/null || true)
	[ -n "$theirs" ] && [ -n "$ours" ] || { note "$header: $define not compared (the kernel's or the build's has none)"; return 0; }
	[ "$ours" = "$theirs" ] || die "$define differs from the kernel's: $ours, the kernel's: $theirs"
}

prepare_objtree()
{
	local log=$OUT/build.log

	mkdir -p "$OBJ"
	copy_if_changed "$KHEADERS_DIR/.config" "$OBJ/.config"
	note "modules_prepare in $OBJ (log: $log)"
	kbuild "$log" modules_prepare
	check_config_same "$OBJ/.config" "$KHEADERS_DIR/.config"
	check_generated_same utsrelease.h UTS_RELEASE
	check_generated_same compile.h LINUX_COMPILER
	copy_if_changed "$KHEADERS_DIR/Module.symvers" "$OBJ/Module.symvers"
	[ "$(option_value CONFIG_DEBUG_INFO_BTF_MODULES "$OBJ/.config")" = y ] && link_btf_base
	return 0
}

# The kernel's BTF, which module BTF is split BTF on: VMLINUX=FILE (an ELF
# vmlinux, such as scripts/extract-vmlinux makes of the image's vmlinuz, or
# raw BTF), the headers' vmlinux (Debian's 6.12 headers have one, 6.1's
# not), or the running kernel's when it is the one built for.
btf_base()
{
	if [ -n "${VMLINUX:-}" ]; then
		[ -f "$VMLINUX" ] || die "VMLINUX=$VMLINUX: no such file"
		realpath "$VMLINUX"
	elif [ -f "$KHEADERS_DIR/vmlinux" ]; then
		echo "$KHEADERS_DIR/vmlinux"
	elif [ "$(uname -r)" = "$RELEASE" ] && [ -f /sys/kernel/btf/vmlinux ]; then
		echo /sys/kernel/btf/vmlinux
	fi
}

# kbuild makes module BTF when OBJ/vmlinux is there. Without it the modules
# have no BTF: they load and trace the same, only BPF tools miss it.
link_btf_base()
{
	local base

	base=$(btf_base)
	if [ -z "$base" ]; then
		note "no BTF of the kernel (no vmlinux in $KHEADERS_DIR; give VMLINUX=FILE): the modules get no BTF"
		rm -f "$OBJ/vmlinux"
	elif [ "$(readlink "$OBJ/vmlinux" 2>/dev/null)" != "$base" ]; then
		ln -sfn "$base" "$OBJ/vmlinux"
		# Another base: the modules are linked again, with BTF on it.
		rm -f "$SRC"/arch/x86/kvm/*.ko
	fi
}

# Links, made afresh each time, so a file the tree dropped is gone here too;
# make sees the sources' own times through them.
link_sources()
{
	local dir

	for dir in arch/x86/kvm virt/kvm; do
		mkdir -p "$SRC/$dir"
		find "$SRC/$dir" -type l -delete
		cp -rs "$KSRC_DIR/$dir/." "$SRC/$dir/"
	done
}

build_modules()
{
	local log=$OUT/build.log m

	link_sources
	note "building arch/x86/kvm for $RELEASE with $KCC (log: $log)"
	kbuild "$log" M="$SRC/arch/x86/kvm" modules
	! grep -q 'compiler differs' "$log" || die "kbuild says the compiler differs from the kernel's, see $log"
	# Without their DWARF, as modules_install INSTALL_MOD_STRIP=1 and Debian's
	# packages have them (kvm.ko: 23 MB with it); their BTF stays. The ones
	# with it stay in OUT/src/arch/x86/kvm.
	for m in $KVM_MODULES; do
		rm -f "$OUT/$m.ko"
		[ -f "$SRC/arch/x86/kvm/$m.ko" ] || continue
		strip --strip-debug -o "$OUT/$m.ko" "$SRC/arch/x86/kvm/$m.ko"
	done
	[ -f "$OUT/kvm.ko" ] || die "no kvm.ko was built: is CONFIG_KVM=m in $KHEADERS_DIR/.config?"
}

# The stock module M, compressed or not, under STOCK_DIR.
stock_module()
{
	local f

	for f in "$STOCK_DIR/arch/x86/kvm/$1.ko"{,.xz,.zst,.gz}; do
		[ -f "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}

# Each module's vermagic is the stock kvm.ko's, and its depends the stock
# module's; without the stock modules, vermagic starts with the release.
check_modules()
{
	local m stock vermagic want depends

	want=$(stock_module kvm | xargs -r modinfo -F vermagic || true)
	[ -n "$want" ] || note "no stock kvm.ko under STOCK=$STOCK_DIR: vermagic checked against the release only"
	for m in $KVM_MODULES; do
		[ -f "$OUT/$m.ko" ] || continue
		vermagic=$(modinfo -F vermagic "$OUT/$m.ko")
		depends=$(modinfo -F depends "$OUT/$m.ko")
		if [ -n "$want" ]; then
			[ "$vermagic" = "$want" ] || die "$m.ko: vermagic '$vermagic', the stock kvm.ko's is '$want'"
		else
			[[ $vermagic == "$RELEASE "* ]] || die "$m.ko: vermagic '$vermagic' is not for $RELEASE"
		fi
		if stock=$(stock_module "$m"); then
			[ "$depends" = "$(modinfo -F depends "$stock")" ] ||
				die "$m.ko: depends '$depends', the stock $m's is '$(modinfo -F depends "$stock")'"
		fi
		printf '%s\t%s bytes\tvermagic: %s\tdepends: %s\n' "$OUT/$m.ko" "$(stat -c %s "$OUT/$m.ko")" "$vermagic" "$depends"
	done
}

main()
{
	need_cmd make make
	need_cmd modinfo kmod
	need_cmd strip binutils
	KSRC_DIR=$(kernel_tree)
	check_kernel_tree "$KSRC_DIR"
	KHEADERS_DIR=${KHEADERS:-/lib/modules/$(uname -r)/build}
	[ -d "$KHEADERS_DIR" ] || die "KHEADERS=$KHEADERS_DIR: no such directory (install the kernel's headers package, or give KHEADERS=DIR)"
	KHEADERS_DIR=$(cd "$KHEADERS_DIR" && pwd -P)
	check_headers "$KHEADERS_DIR"
	RELEASE=$(kernel_release "$KHEADERS_DIR")
	[ -n "$RELEASE" ] || die "$KHEADERS_DIR/include/generated/utsrelease.h has no UTS_RELEASE"
	check_source_version "$KSRC_DIR" "$(kernel_version "$KHEADERS_DIR")"
	check_debian_version "$KSRC_DIR"
	KCC=$(kernel_compiler "$KHEADERS_DIR/.config")
	# ccache as the project's kernel builds use it, when it is there.
	command -v ccache >/dev/null 2>&1 && KCC="ccache $KCC"
	[ "$(option_value CONFIG_DEBUG_INFO_BTF "$KHEADERS_DIR/.config")" = y ] && need_cmd pahole pahole
	OUT=${OUT:-$BUILD_DIR/kvm-modules/$RELEASE}
	mkdir -p "$OUT"
	OUT=$(cd "$OUT" && pwd -P)
	OBJ=$OUT/obj
	SRC=$OUT/src
	STOCK_DIR=${STOCK:-/lib/modules/$RELEASE/kernel}
	: >"$OUT/build.log"
	prepare_objtree
	build_modules
	check_modules
}

main "$@"
