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

# A silently dropped option (unmet dependency, typo) is an error naming it.
verify_config()
{
	local config=$1 frag line missing=0

	shift
	for frag in "$@"; do
		while read -r line; do
			grep -qxF "$line" "$config" && continue
			echo "${0##*/}: error: $line (from $frag) is not in the final config; got: $(grep -m1 -e "^${line%%=*}=" -e "^# ${line%%=*} is not set" "$config" || echo unset)" >&2
			missing=1
		done < <(grep -E '^CONFIG_[A-Za-z0-9_]+=' "$frag")
	done
	[ "$missing" = 0 ] || die "the kernel config lacks requested options (see above)"
}

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
