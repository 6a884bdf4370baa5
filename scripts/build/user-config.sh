#!/bin/bash
# user-config.sh: merge Kconfig.snippet into a user's kernel config with merge_config.sh and say which options it changed.
#
# usage: KSRC=/path/to/linux [BASE_CONFIG=FILE] [O=DIR] user-config.sh
#        (make kernel-config KSRC=... [BASE_CONFIG=...] [O=...])
#
# The result is O/.config (default KSRC/.config); a snippet option left out fails.

set -eu -o pipefail

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly SNIPPET=$TOP_DIR/Kconfig.snippet

# The first of BASE_CONFIG, the output's .config, the running kernel's.
base_config()
{
	local out=$1 running

	running=/boot/config-$(uname -r)
	if [ -n "${BASE_CONFIG:-}" ]; then
		[ -f "$BASE_CONFIG" ] || die "BASE_CONFIG=$BASE_CONFIG: no such file"
		echo "$BASE_CONFIG"
	elif [ -f "$out/.config" ]; then
		echo "$out/.config"
	elif [ -f "$running" ]; then
		echo "$running"
	else
		die "no base config: give BASE_CONFIG=FILE (neither $out/.config nor $running exists)"
	fi
}

# One line per snippet option whose value changed, and a count of the rest.
report_changes()
{
	local before=$1 after=$2 option old new same=0

	while read -r option; do
		old=$(option_value "$option" "$before")
		new=$(option_value "$option" "$after")
		if [ "$old" = "$new" ]; then
			same=$((same + 1))
		else
			echo "  $option: $old -> $new"
		fi
	done < <(grep -oE '^CONFIG_[A-Za-z0-9_]+' "$SNIPPET")
	echo "  unchanged: $same of the snippet's options, already so in the base"
}

main()
{
	local tree out base

	[ -n "${KSRC:-}" ] || die "give the kernel tree: make kernel-config KSRC=/path/to/linux"
	tree=$(kernel_tree)
	check_kernel_tree "$tree"
	out=${O:-$tree}
	mkdir -p "$out"
	out=$(cd "$out" && pwd -P)
	base=$(base_config "$out")
	# The base may be the .config merge_config.sh overwrites.
	BEFORE=$(mktemp)
	trap 'rm -f "$BEFORE"' EXIT
	cp "$base" "$BEFORE"
	(cd "$tree" && scripts/kconfig/merge_config.sh -m -O "$out" "$BEFORE" "$SNIPPET") >"$out/merge_config.log" 2>&1 ||
		die "merge_config.sh failed, see $out/merge_config.log"
	make -s -C "$tree" ${O:+O="$out"} olddefconfig >>"$out/merge_config.log" 2>&1 ||
		die "make olddefconfig failed, see $out/merge_config.log"
	echo "$out/.config: $base with Kconfig.snippet; changed:"
	report_changes "$BEFORE" "$out/.config"
	verify_config "$out/.config" "$SNIPPET"
}

main "$@"
