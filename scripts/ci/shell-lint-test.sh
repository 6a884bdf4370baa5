#!/bin/bash
# shell-lint-test.sh: TAP: shellcheck -x -S warning on every shell script git tracks, one result a file.
#
# A shell script is a tracked file named *.sh (the sourced libraries have no
# #! line) or one that file(1) calls a shell script (.ci/run). Each file is
# checked from the top of the repository, following what it sources (-x);
# its findings at warning level and above, shown as comments, fail it. The
# results are written by kvm-tsc-merge's tap.sh, which needs no kernel tree
# as kselftest's ktap_helpers.sh does.

set -u

TOP_DIR=$(cd "$(dirname "$0")/../.." && pwd)
readonly TOP_DIR
# shellcheck source-path=SCRIPTDIR source=../../tools/tsc-merge/tests/tap.sh
. "$TOP_DIR/tools/tsc-merge/tests/tap.sh"

shell_scripts()
{
	{
		git ls-files -- '*.sh'
		git ls-files -z | xargs -0 -r file -N --mime-type -- |
			sed -n 's/: *text\/x-shellscript$//p'
	} | sort -u
}

main()
{
	local files file out status

	cd "$TOP_DIR" || exit 1
	tap_header
	command -v shellcheck >/dev/null 2>&1 ||
		tap_skip_all "shellcheck is not installed: run scripts/build/deps.sh"
	git rev-parse --is-inside-work-tree >/dev/null 2>&1 || tap_skip_all "$TOP_DIR is not a git checkout"
	mapfile -t files < <(shell_scripts)
	echo "# $(shellcheck --version | sed -n 's/^version: /shellcheck /p')"
	tap_plan "${#files[@]}"
	for file in "${files[@]}"; do
		out=$(shellcheck -x -S warning -- "$file" 2>&1)
		status=$?
		# shellcheck disable=SC2001 # at the start of every line, not of the string
		[ "$status" = 0 ] || sed 's/^/# /' <<<"$out"
		tap_result "$status" "shellcheck: $file"
	done
	tap_finished
}

main "$@"
