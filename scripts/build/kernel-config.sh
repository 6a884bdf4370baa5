#!/bin/bash
# kernel-config.sh: write OUT/.config as tinyconfig plus the given fragments, and check that every requested option made it.
#
# usage: kernel-config.sh TREE OUT FRAGMENT...
#
# The Makefile runs it when a fragment or the tree changes. The result
# replaces OUT/.config only when it differs, so that kbuild rebuilds
# nothing for an unchanged config; it is touched otherwise, for make.

set -eu

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

main()
{
	local tree=$1 out=$2 scratch

	shift 2
	scratch=$out/kconfig.new
	rm -rf "$scratch"
	mkdir -p "$scratch"
	make -s -C "$tree" O="$scratch" tinyconfig >/dev/null
	(cd "$tree" && scripts/kconfig/merge_config.sh -O "$scratch" "$scratch/.config" "$@") \
		>"$scratch/merge.log" 2>&1 || die "merge_config.sh failed, see $scratch/merge.log"
	verify_config "$scratch/.config" "$@"
	if cmp -s "$scratch/.config" "$out/.config"; then
		touch "$out/.config"
	else
		note "new kernel config in $out/.config"
		cp "$scratch/.config" "$out/.config"
	fi
	rm -rf "$scratch"
}

main "$@"
