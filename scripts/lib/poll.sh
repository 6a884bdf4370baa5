# poll.sh: wait_until, the bounded wait of the scripts on the host and in the test VMs, and pid_gone, its most common condition (sourced, not run; POSIX sh).

# shellcheck shell=sh
# shellcheck disable=SC3043 # 'local' is not POSIX, but busybox ash, dash and bash have it

# Run COMMAND every 0.1 s until it succeeds: 0 then, 1 after TIMEOUT
# seconds, 2 at once when COMMAND returns 2 (a failure it has told).
wait_until()
{
	local timeout="$1" tries=0 rc

	shift
	while :; do
		rc=0
		"$@" || rc=$?
		[ "$rc" = 0 ] && return 0
		[ "$rc" = 2 ] && return 2
		[ "$tries" -lt $((timeout * 10)) ] || return 1
		sleep 0.1
		tries=$((tries + 1))
	done
}

# For wait_until: process PID has exited.
pid_gone()
{
	! kill -0 "$1" 2>/dev/null
}
