#!/bin/bash
# build-kernel.sh: configure and build the test kernel (bzImage and modules) out of tree under build/.
#
# The config is tinyconfig + Kconfig.snippet + scripts/qemu.config (+
# scripts/debug.config for KERNEL_VARIANT=debug), merged with the kernel's
# merge_config.sh; every requested option is then checked in the result.
# .config is only replaced when it changes, so an unchanged tree rebuilds
# nothing. Modules are installed under the build directory for the initramfs.

set -eu

. "$(dirname "$0")/common.sh"

readonly VARIANT=${KERNEL_VARIANT:-test}

fragments()
{
	echo "$TOP_DIR/Kconfig.snippet"
	echo "$TOP_DIR/scripts/qemu.config"
	[ "$VARIANT" = debug ] && echo "$TOP_DIR/scripts/debug.config"
	return 0
}

# kbuild records CC in every .cmd file: use ccache whenever it is installed so
# the choice, and hence the build, stays stable from one run to the next.
compiler()
{
	if command -v ccache >/dev/null 2>&1; then
		echo "ccache gcc"
	else
		echo gcc
	fi
}

# A silently dropped option (unmet dependency, typo) is an error naming it.
verify_config()
{
	local config=$1 frag line missing=0

	for frag in $(fragments); do
		while read -r line; do
			grep -qxF "$line" "$config" && continue
			echo "${0##*/}: error: $line (from ${frag#"$TOP_DIR"/}) is not in the final config; got: $(grep -m1 -e "^${line%%=*}=" -e "^# ${line%%=*} is not set" "$config" || echo unset)" >&2
			missing=1
		done < <(grep -E '^CONFIG_[A-Za-z0-9_]+=' "$frag")
	done
	[ "$missing" = 0 ] || die "the kernel config lacks requested options (see above)"
}

# What the config is made of: the fragments and the tree's commit.
config_inputs()
{
	local tree=$1

	{
		git -C "$tree" rev-parse HEAD
		cat $(fragments)
	} | sha256sum | cut -d' ' -f1
}

# Regenerated only when its inputs change: tinyconfig and merge_config.sh
# take seconds that an unchanged tree should not pay.
make_config()
{
	local tree=$1 out=$2 scratch=$BUILD_DIR/kconfig-$VARIANT inputs

	inputs=$(config_inputs "$tree")
	[ -f "$out/.config" ] && [ "$(cat "$out/.config.inputs" 2>/dev/null)" = "$inputs" ] &&
		return 0
	mkdir -p "$scratch" "$out"
	make -s -C "$tree" O="$scratch" tinyconfig >/dev/null
	(cd "$tree" && scripts/kconfig/merge_config.sh -O "$scratch" "$scratch/.config" $(fragments)) \
		>"$scratch/merge.log" 2>&1 || die "merge_config.sh failed, see $scratch/merge.log"
	verify_config "$scratch/.config"
	if ! cmp -s "$scratch/.config" "$out/.config"; then
		note "new kernel config in $out/.config"
		cp "$scratch/.config" "$out/.config"
	fi
	echo "$inputs" >"$out/.config.inputs"
}

build()
{
	local tree=$1 out=$2

	make -C "$tree" O="$out" CC="$(compiler)" -j"$(nproc)" bzImage modules >"$out/build.log" 2>&1 ||
		die "kernel build failed, last lines of $out/build.log:
$(tail -20 "$out/build.log")"
	rm -rf "$out/modroot"
	make -s -C "$tree" O="$out" INSTALL_MOD_PATH="$out/modroot" INSTALL_MOD_STRIP=1 \
		modules_install >/dev/null || die "modules_install failed"
}

main()
{
	local tree out cmd

	for cmd in flex:flex bison:bison bc:bc gcc:gcc; do
		need_cmd "${cmd%%:*}" "${cmd#*:}"
	done
	[ -f /usr/include/libelf.h ] || die "libelf.h not found: install the Debian package libelf-dev"
	[ -f /usr/include/openssl/ssl.h ] || die "openssl/ssl.h not found: install the Debian package libssl-dev"
	tree=$(kernel_tree)
	out=$KBUILD_OUT
	make_config "$tree" "$out"
	build "$tree" "$out"
	note "$out/arch/x86/boot/bzImage ($(make -s -C "$tree" O="$out" kernelrelease))"
}

main "$@"
