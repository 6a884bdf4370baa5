#!/bin/bash
# shell-lint-test.sh: TAP: shellcheck -x -S warning on every shell script git tracks, one result a file.
#
# A shell script is a tracked file named *.sh (the sourced libraries have no
# #! line) or one that file(1) calls a shell script (.ci/run). Each file is
# checked from the top of the repository, following what it sources (-x);
# its findings at warning level and above, shown as comments, fail it. The
# results are plain TAP, without kselftest's ktap_helpers.sh, so that the
# check needs no kernel tree. Exit status: 0 when every file is clean, 1
# when one is not, 4 (a skip) without shellcheck or outside a git checkout.

set -u

TOP_DIR=$(cd "$(dirname "$0")/../.." && pwd)
readonly TOP_DIR

skip_all()
{
	echo "TAP version 13"
	echo "1..0 # SKIP $*"
	exit 4
}

# The tracked shell scripts, one a line, sorted.
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
	local files file n=0 fail=0 out

	cd "$TOP_DIR" || exit 1
	command -v shellcheck >/dev/null 2>&1 ||
		skip_all "shellcheck is not installed: run scripts/build/deps.sh"
	git rev-parse --is-inside-work-tree >/dev/null 2>&1 || skip_all "$TOP_DIR is not a git checkout"
	mapfile -t files < <(shell_scripts)
	echo "TAP version 13"
	echo "# $(shellcheck --version | sed -n 's/^version: /shellcheck /p')"
	echo "1..${#files[@]}"
	for file in "${files[@]}"; do
		n=$((n + 1))
		if out=$(shellcheck -x -S warning -- "$file" 2>&1); then
			echo "ok $n shellcheck: $file"
		else
			# shellcheck disable=SC2001 # at the start of every line, not of the string
			sed 's/^/# /' <<<"$out"
			echo "not ok $n shellcheck: $file"
			fail=$((fail + 1))
		fi
	done
	echo "# Totals: pass:$((n - fail)) fail:$fail xfail:0 xpass:0 skip:0 error:0"
	[ "$fail" = 0 ]
}

main "$@"
