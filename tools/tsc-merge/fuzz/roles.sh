# shellcheck shell=bash
# roles.sh: the fuzzing roles and the command lines fuzz/driver.c gives kvm-tsc-merge in each, for run-fuzz.sh and the scripts that replay its inputs.
#
# A trace role's input is one trace.dat of a merge, its partner the other,
# a fixed file among the seed files (FILES: mktrace's from seeds/*.spec and
# the agent pair of seeds/real, as run-fuzz.sh and replay-fuzz.sh make
# them). run-fuzz.sh starts the driver with role_driver_args; the driver
# runs role_argv's command line and, after an exit 0, role_round_trip_argv's.
# Keep both in step with driver.c. The args role's input is the whole
# argument list, NUL-separated.
# shellcheck disable=SC2034 # ARGV is the caller's

# Every role, as run-fuzz.sh runs them by default.
ROLES_ALL="host guest agent-host agent-guest snapshot-host nested-host nested-guest args"

# Every column of the text timeline, all at once.
ROLE_FIELDS=time,source,cpu,task,comm,pid,event,info,guest_ts

# role_spec ROLE sets SIDE (host: the input is -H; guest: it is -g), PARTNER
# (the other file, in FILES) and TIE (after the guest's path); it fails for
# args and for a name that is no role. fuzz/README says what each pair is.
role_spec()
{
	case $1 in
	host) SIDE=host PARTNER=guest-step.dat TIE=@1000 ;;
	guest) SIDE=guest PARTNER=host-step.dat TIE=@1000 ;;
	agent-host) SIDE=host PARTNER=agent-guest-vmx-v7-zstd.dat TIE= ;;
	agent-guest) SIDE=guest PARTNER=agent-host-vmx-v7-zstd.dat TIE= ;;
	snapshot-host) SIDE=host PARTNER=guest-step.dat TIE=@1000 ;;
	nested-host) SIDE=host PARTNER=guest-l2.dat TIE=@2000.1,l2 ;;
	nested-guest) SIDE=guest PARTNER=host-nested.dat TIE=@2000.1,l2 ;;
	*) return 1 ;;
	esac
}

# role_driver_args FILES ROLE sets ARGV: what follows the driver's name.
role_driver_args()
{
	if role_spec "$2"; then
		ARGV=("$SIDE" "$1/$PARTNER" "$TIE")
	else
		ARGV=(args)
	fi
}

# role_files FILES ROLE FILE sets HOST and GUEST, the guest without its tie.
role_files()
{
	if [ "$SIDE" = host ]; then
		HOST=$3 GUEST=$1/$PARTNER
	else
		HOST=$1/$PARTNER GUEST=$3
	fi
}

# role_argv FILES OUT ROLE FILE sets ARGV: FILE in ROLE with every output
# written at once into the folder OUT, the --sync-out copies into OUT/sync
# (which must exist, and be empty for a fresh run); for args FILE's words.
role_argv()
{
	local HOST GUEST

	if ! role_spec "$3"; then
		mapfile -d '' ARGV <"$4"
		return
	fi
	role_files "$1" "$3" "$4"
	ARGV=(-q -k 1000 -o "$2/timeline.txt" -s "$2/summary.txt" -j "$2/trace.json"
		-p "$2/trace.perfetto" -F "$ROLE_FIELDS" -S "$2/sync" -f -H "$HOST" -g "$GUEST$TIE")
}

# role_round_trip_argv FILES OUT ROLE FILE sets ARGV: role_argv's copies
# in OUT/sync merged again into OUT/round-trip.txt, which must be the same
# as OUT/timeline.txt. The guest is tied by the GUEST option of the host's
# copy, not by its pid, unless it is nested: the tool needs the pid of an
# L2 guest, since a GUEST option names only L1 guests.
role_round_trip_argv()
{
	local HOST GUEST tie=

	role_spec "$3" || return 1
	role_files "$1" "$3" "$4"
	[[ $TIE == *,l2 ]] && tie=$TIE
	ARGV=(-q -k 1000 -o "$2/round-trip.txt" -F "$ROLE_FIELDS"
		-H "$2/sync/$(basename "$HOST")" -g "$2/sync/$(basename "$GUEST")$tie")
}
