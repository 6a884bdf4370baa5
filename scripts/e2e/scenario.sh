# scenario.sh: read_scenario, level_key and next_key: how the end-to-end scripts read a scenario file at every level (sourced, not run; POSIX sh).

# shellcheck shell=sh
# shellcheck disable=SC3043 # 'local' is not POSIX, but busybox ash, dash and bash have it

# Set a shell variable named as the key for every key=value line of FILE,
# so that a key has one name in the file, in C and in every script.
read_scenario()
{
	local key value

	[ -r "$1" ] || { echo "scenario.sh: cannot read $1" >&2; return 1; }
	# shellcheck disable=SC2034 # value is read through eval
	while IFS='=' read -r key value; do
		case $key in
		'' | '#'*) continue ;;
		*[!a-z0-9_]*) echo "scenario.sh: $1: bad key '$key'" >&2; return 1 ;;
		esac
		eval "$key=\$value"
	done <"$1"
}

# The value of KEY for this level, LEVEL (lLEVEL_KEY).
level_key()
{
	eval "echo \"\${l${LEVEL}_$1:-}\""
}

# The value of KEY for the level below this one, or nothing where the
# scenario has no such level.
next_key()
{
	eval "echo \"\${l$((LEVEL + 1))_$1:-}\""
}
