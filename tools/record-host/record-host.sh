#!/bin/sh
# record-host.sh: record a KVM host's trace for a merged host/guest timeline (TSC, entry/exit and scheduling events, x86-tsc clock, own tracefs instance).
#
# The commands and options are in usage() (-h). A merge needs, for every
# vCPU, the thread that runs it and its VMM process (task:task_newtask of
# the thread) and its TSC offset (the first kvm:kvm_write_tsc_offset). A
# recording started before the guests boot has all of these as events, the
# most exact case. For the VMs that already run, start writes, once the
# events are being recorded, a snapshot of KVM's per-vCPU TSC state from
# debugfs into the recording through the instance's trace_marker: one
# ftrace:print event per line, each a single write. It replaces their
# task_newtask clone events and first offset events; a TSC write racing
# with the snapshot is an event of its own, recorded already, whose
# previous offset a reader prefers. stop writes a second one, of the VMs
# running then, before it ends the recording. The lines (a vcpu line is
# one line):
#
#   kvm-tsc-snapshot tsc_khz=KHZ
#   kvm-tsc-snapshot vm=PID-FD pid=PID vcpu=N tid=TID tsc_offset=OFFSET \
#       tsc_scaling_ratio=RATIO tsc_scaling_ratio_frac_bits=BITS
#   kvm-tsc-snapshot end vms=VMS vcpus=VCPUS tsc_scaling=0|1
#
# KHZ: host_tsc_khz(); no tsc_khz line where it is unknown (give
# kvm-tsc-merge -k then). A vcpu line per debugfs directory
# /sys/kernel/debug/kvm/PID-FD/vcpuN (PID: the VMM process; FD: its VM's
# file descriptor), its files as KVM prints them (vcpu_fields()); TID is 0
# before the vCPU's first KVM_RUN, the scaling fields only where KVM has
# TSC scaling. The end line always ends a snapshot, with 0 VMs too (a VM
# destroyed meanwhile may have fewer vcpu lines than vCPUs); tsc_scaling
# says whether KVM scales TSCs, where kvm_tsc_scaling() can tell. stop's
# snapshot has no tsc_khz line. Where debugfs cannot be read, the file has
# no snapshot: only VMs started after the recording can be merged.
#
# The tracefs instance of its own keeps the top-level buffer untouched.
# A recording killed with SIGKILL (trace-cmd, or the OOM killer) leaves the
# instance and a half-written file: the next start says so and stops,
# clean removes them, stop cleans up too. Needs root, trace-cmd, a loaded
# kvm module and the project's poll.sh (POLL_LIB); POSIX sh, for busybox too.

set -eu

# wait_until, the project's poll helper: beside this script where kselftest
# installs the two, in PREFIX/lib/kvm-tsc-trace where make install puts it
# (this script being PREFIX/bin/kvm-tsc-record), in the repository's scripts/lib.
POLL_LIB=$(dirname "$0")/poll.sh
[ -f "$POLL_LIB" ] || POLL_LIB=$(dirname "$0")/../lib/kvm-tsc-trace/poll.sh
[ -f "$POLL_LIB" ] || POLL_LIB=$(dirname "$0")/../../scripts/lib/poll.sh
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/poll.sh
. "$POLL_LIB"

readonly REQUIRED_EVENTS="kvm:kvm_write_tsc_offset kvm:kvm_entry kvm:kvm_exit sched:sched_switch task:task_newtask"
readonly OPTIONAL_EVENTS="kvm:kvm_write_tsc_multiplier kvm:kvm_nested_tsc_offset"
# trace.dat files start with these bytes: 0x17 0x08 0x44 "tracing".
readonly DAT_MAGIC=tracing

readonly DEFAULT_INSTANCE=kvm-tsc-record DEFAULT_STATE_DIR=/tmp/kvm-tsc-record DEFAULT_TIMEOUT=60

PROG=${0##*/}
TRACEFS=
# The options, named as their long options (usage()), with their defaults.
OUTPUT=trace.dat
INSTANCE=$DEFAULT_INSTANCE
BUFFER_KB=
TSC_KHZ=
STATE_DIR=$DEFAULT_STATE_DIR
TIMEOUT=$DEFAULT_TIMEOUT
COMPRESSION=none

die()
{
	echo "$PROG: error: $*" >&2
	exit 1
}

note()
{
	echo "$PROG: $*" >&2
}

find_tracefs()
{
	local dir

	for dir in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		[ -f "$dir/trace_clock" ] && { TRACEFS=$dir; return 0; }
	done
	die "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)"
}

# The -e options: every required event, and the optional ones this kernel has.
event_args()
{
	local ev

	for ev in $REQUIRED_EVENTS; do
		[ -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ] ||
			die "this kernel has no $ev event$(
				[ "${ev%%:*}" = kvm ] && echo ' (load kvm_amd or kvm_intel first)')"
		printf ' -e %s' "$ev"
	done
	for ev in $OPTIONAL_EVENTS; do
		if [ -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ]; then
			printf ' -e %s' "$ev"
		else
			note "left out $ev: this kernel does not have it (the series in patches/ adds it)"
		fi
	done
}

# The recording's process, if it is still running.
recorder_pid()
{
	local pid

	pid=$(cat "$STATE_DIR/pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

remove_instance()
{
	local dir="$TRACEFS/instances/$INSTANCE"

	[ -d "$dir" ] || return 0
	rmdir "$dir" 2>/dev/null || { sleep 1; rmdir "$dir"; } ||
		{ note "could not remove the tracefs instance $dir"; return 1; }
}

# For wait_until: the recording runs; 2 once trace-cmd is gone. trace-cmd
# first turns the instance off, then sets the clock, enables the events,
# starts its per-CPU readers and only then turns tracing on: so
# tracing_on=1 with the clock and the events set means recording runs.
recording_started_or_gone()
{
	local dir="$TRACEFS/instances/$INSTANCE"

	[ "$(cat "$dir/tracing_on" 2>/dev/null)" = 1 ] &&
		grep -q '\[x86-tsc\]' "$dir/trace_clock" 2>/dev/null &&
		[ "$(cat "$dir/events/kvm/kvm_exit/enable" 2>/dev/null)" = 1 ] &&
		[ "$(cat "$dir/events/task/task_newtask/enable" 2>/dev/null)" = 1 ] && return 0
	recorder_pid >/dev/null || return 2
	return 1
}

# trace-cmd leads its own process group (setsid): kill all of it, its
# per-CPU readers too, which otherwise keep the instance busy.
kill_recorder()
{
	local pid

	pid=$(cat "$STATE_DIR/pid" 2>/dev/null) || return 0
	[ -n "$pid" ] || return 0
	# "--" for dash and bash, busybox wants none; a group already gone
	# (a killed recording) is no error.
	kill -s KILL -- "-$pid" 2>/dev/null || kill -s KILL "-$pid" 2>/dev/null || return 0
	sleep 1
}

# The state of an ended recording, but trace-cmd's log: pid, output, instance.
forget_recording()
{
	rm -f "$STATE_DIR/pid" "$STATE_DIR/output" "$STATE_DIR/instance"
}

# Kill a recording that did not start and leave nothing behind: no
# instance, no state, no half-written file (start removed what was there).
abort_start()
{
	local output

	kill_recorder
	remove_instance || true
	output=$(cat "$STATE_DIR/output" 2>/dev/null) && rm -f "$output"
	forget_recording
}

# The host's TSC rate in kHz: TSC_KHZ (-k), or the kernel log's last
# calibration as kHz digits (2100.000 MHz: 2100000); nothing if unknown.
host_tsc_khz()
{
	[ -z "$TSC_KHZ" ] || { echo "$TSC_KHZ"; return 0; }
	dmesg 2>/dev/null | sed -n \
		-e 's/.*tsc: Refined TSC clocksource calibration: \([0-9][0-9]*\)\.\([0-9][0-9][0-9]\) MHz.*/\1\2/p' \
		-e 's/.*tsc: Detected \([0-9][0-9]*\)\.\([0-9][0-9][0-9]\) MHz.*/\1\2/p' |
		tail -n 1 | sed 's/^0*//'
}

# KVM's debugfs directory (debugfs mounted on /sys/kernel/debug if it is
# mounted nowhere); fails, saying why, where it cannot be read.
kvm_debugfs()
{
	local root

	root=$(awk '$3 == "debugfs" { print $2; exit }' /proc/mounts 2>/dev/null) || root=
	if [ -z "$root" ]; then
		root=/sys/kernel/debug
		mount -t debugfs debugfs "$root" 2>/dev/null ||
			{ note "debugfs is not mounted and cannot be mounted on $root"; return 1; }
		note "mounted debugfs on $root"
	fi
	[ -d "$root/kvm" ] || { note "debugfs (on $root) has no kvm directory"; return 1; }
	echo "$root/kvm"
}

# Whether KVM scales guest TSCs, 1 or 0; nothing where it cannot tell.
# kvm_amd clears its tsc_scaling parameter on a CPU without the TSC ratio
# MSR; kvm_intel uses TSC scaling wherever the CPU's VMX has it, which
# /proc/cpuinfo's "vmx flags" names.
kvm_tsc_scaling()
{
	local amd=/sys/module/kvm_amd/parameters/tsc_scaling

	if [ -r "$amd" ]; then
		[ "$(cat "$amd")" = 0 ] && echo 0 || echo 1
	elif [ -d /sys/module/kvm_intel ] && grep -q '^vmx flags' /proc/cpuinfo; then
		grep -q '^vmx flags.* tsc_scaling\( \|$\)' /proc/cpuinfo && echo 1 || echo 0
	fi
}

# One line into the recording: printf's single write(2) to the marker is
# one ftrace:print event. Fails saying why.
mark()
{
	printf '%s\n' "$2" >"$1" || { note "cannot write to $1"; return 1; }
}

# For wait_until: the vCPU directory DIR has FILE; 2 once DIR is gone.
vcpu_file_or_gone()
{
	[ -e "$1/$2" ] && return 0
	[ -d "$1" ] || return 2
	return 1
}

# The number in FILE of the vCPU directory DIR, negative only if SIGNED is
# "signed". A file that is not there yet while DIR is (a vCPU being
# created) gets a second to appear. Fails saying why, or quietly where DIR
# is gone (its VM was destroyed meanwhile).
vcpu_value()
{
	local dir="$1" file="$2" signed="${3:-}" value rc=0

	wait_until 1 vcpu_file_or_gone "$dir" "$file" || rc=$?
	[ "$rc" = 0 ] || { [ "$rc" = 2 ] || note "$dir/$file is missing"; return 1; }
	# read, not cat: no process per file. KVM ends the text with a newline.
	IFS= read -r value 2>/dev/null <"$dir/$file" ||
		{ [ ! -d "$dir" ] || note "cannot read $dir/$file"; return 1; }
	[ "$signed" = signed ] || case $value in
	-*) note "$dir/$file holds '$value', a negative number"; return 1 ;;
	esac
	case ${value#-} in
	'' | *[!0-9]*) note "$dir/$file holds '$value', not a number"; return 1 ;;
	esac
	echo "$value"
}

# The fields of a vCPU line after vcpu=N, from the vCPU directory DIR: the
# scaling ones where SCALING is not empty.
vcpu_fields()
{
	local dir="$1" scaling="$2" tid offset ratio bits

	tid=$(vcpu_value "$dir" pid) || return 1
	offset=$(vcpu_value "$dir" tsc-offset signed) || return 1
	[ -n "$scaling" ] || { echo "tid=$tid tsc_offset=$offset"; return 0; }
	ratio=$(vcpu_value "$dir" tsc-scaling-ratio) || return 1
	bits=$(vcpu_value "$dir" tsc-scaling-ratio-frac-bits) || return 1
	echo "tid=$tid tsc_offset=$offset tsc_scaling_ratio=$ratio tsc_scaling_ratio_frac_bits=$bits"
}

# Writes the snapshot (format in the header) from KVM, KVM's debugfs
# directory, and KHZ (or empty) through MARKER. Fails, saying why, where a
# line cannot be written or a file of a vCPU that is still there read.
write_snapshot()
{
	local kvm="$1" khz="$2" marker="$3" scaling='' vm name vcpu id fields vms=0 vcpus=0 tsc_scaling

	[ -z "$khz" ] || mark "$marker" "kvm-tsc-snapshot tsc_khz=$khz" || return 1
	# KVM gives every vCPU the scaling files, or none (no TSC scaling):
	# any vCPU that has them tells a vCPU still being created to wait.
	set -- "$kvm"/*/vcpu*/tsc-scaling-ratio
	[ ! -e "$1" ] || scaling=1
	for vm in "$kvm"/*-*; do
		name=${vm##*/}
		case $name in
		*[!0-9-]* | -* | *- | *-*-*) continue ;;
		esac
		[ -d "$vm" ] || continue
		vms=$((vms + 1))
		for vcpu in "$vm"/vcpu*; do
			id=${vcpu##*/vcpu}
			case $id in
			'' | *[!0-9]*) continue ;;
			esac
			[ -d "$vcpu" ] || continue
			if fields=$(vcpu_fields "$vcpu" "$scaling"); then
				mark "$marker" "kvm-tsc-snapshot vm=$name pid=${name%-*} vcpu=$id $fields" || return 1
				vcpus=$((vcpus + 1))
			elif [ -d "$vcpu" ]; then
				return 1
			else
				note "VM $name was destroyed during the snapshot: vCPU $id left out"
			fi
		done
	done
	tsc_scaling=$(kvm_tsc_scaling)
	mark "$marker" "kvm-tsc-snapshot end vms=$vms vcpus=$vcpus${tsc_scaling:+ tsc_scaling=$tsc_scaling}" || return 1
	note "wrote the kvm-tsc-snapshot: $vcpus vCPUs of $vms VMs"
}

# One line of leftovers(): the tracefs instance NAME, if it is there.
instance_left()
{
	[ -d "$TRACEFS/instances/$1" ] &&
		echo "the tracefs instance $TRACEFS/instances/$1 is still there"
	return 0
}

# The instance the state directory names, the one start was given, or the default.
state_instance()
{
	local instance

	instance=$(cat "$STATE_DIR/instance" 2>/dev/null) || instance=
	echo "${instance:-$DEFAULT_INSTANCE}"
}

# What a killed recording left, one line each: its state (pid, output) and
# its instance, and INSTANCE where that is another. Only for no live recorder.
leftovers()
{
	local pid output instance

	pid=$(cat "$STATE_DIR/pid" 2>/dev/null) &&
		echo "$STATE_DIR/pid names trace-cmd record pid $pid, which is gone"
	output=$(cat "$STATE_DIR/output" 2>/dev/null) &&
		echo "$output was being written and is incomplete"
	instance=$(state_instance)
	instance_left "$instance"
	[ "$instance" = "$INSTANCE" ] || instance_left "$INSTANCE"
}

# For a message that names the next command to run: the -d it needs.
state_dir_hint()
{
	[ "$STATE_DIR" = "$DEFAULT_STATE_DIR" ] || echo " (give it -d $STATE_DIR)"
}

start()
{
	local output="$OUTPUT" events khz kvm pid found rc=0

	command -v trace-cmd >/dev/null 2>&1 || die "trace-cmd not found (Debian package trace-cmd)"
	find_tracefs
	pid=$(recorder_pid) && die "a recording is already running (pid $pid, $STATE_DIR/pid): run '$PROG stop'$(state_dir_hint)"
	found=$(leftovers)
	if [ -n "$found" ]; then
		echo "$found" | sed "s/^/$PROG: /" >&2
		die "an earlier recording was killed or another one uses the instance; '$PROG clean' removes what it left$(state_dir_hint)"
	fi
	events=$(event_args)
	khz=$(host_tsc_khz) || exit 1
	kvm=$(kvm_debugfs) || kvm=
	mkdir -p "$STATE_DIR"
	case $output in /*) ;; *) output=$(pwd)/$output ;; esac
	rm -f "$output" "$STATE_DIR/pid"
	echo "$output" >"$STATE_DIR/output"
	echo "$INSTANCE" >"$STATE_DIR/instance"
	trap 'abort_start' EXIT
	# setsid: a Ctrl-C meant for the workload must not end the recording.
	# From STATE_DIR: trace-cmd writes its per-CPU files for an instance
	# in the current directory, which may be read-only (the test VM's /ktt).
	# shellcheck disable=SC2086
	(cd "$STATE_DIR" && exec setsid trace-cmd record --compression "$COMPRESSION" -o "$output" \
		-B "$INSTANCE" -C x86-tsc ${BUFFER_KB:+-b "$BUFFER_KB"} $events) </dev/null >"$STATE_DIR/log" 2>&1 &
	echo $! >"$STATE_DIR/pid"
	wait_until "$TIMEOUT" recording_started_or_gone || rc=$?
	if [ "$rc" = 2 ]; then
		sed 's/^/  /' "$STATE_DIR/log" >&2
		die "trace-cmd record exited before recording started (log above, $STATE_DIR/log)"
	fi
	[ "$rc" = 0 ] || die "trace-cmd record did not start recording within ${TIMEOUT}s; log: $STATE_DIR/log"
	# Events on: any TSC write from here on is recorded, whatever the snapshot reads.
	[ -z "$kvm" ] || write_snapshot "$kvm" "$khz" "$TRACEFS/instances/$INSTANCE/trace_marker" ||
		die "could not write the kvm-tsc-snapshot into the recording (above); the recording is stopped"
	trap - EXIT
	note "recording into $output (instance $INSTANCE, clock x86-tsc,$(echo "$events" | sed 's/ -e / /g'))"
	[ -n "$kvm" ] ||
		note "warning: KVM's per-vCPU TSC state cannot be read (above): $output has no kvm-tsc-snapshot, so VMs already running cannot be merged from it"
	[ -z "$kvm" ] || [ -n "$khz" ] ||
		note "the host's TSC rate is unknown (not in dmesg, no -k): the snapshot has no tsc_khz, give kvm-tsc-merge -k"
}

# A second snapshot, the recording's last lines: KVM without the series has
# no event for a TSC multiplier, and a vCPU created during the recording
# with a rate of its own is told only here, while it still runs. Its lack
# costs those vCPUs, not the recording: a warning.
write_end_snapshot()
{
	local kvm

	kvm=$(kvm_debugfs) && write_snapshot "$kvm" "" "$TRACEFS/instances/$INSTANCE/trace_marker" ||
		note "warning: no kvm-tsc-snapshot at the end of the recording (above): kvm-tsc-merge cannot tell the TSC multiplier of a vCPU created during it on a kernel without kvm_write_tsc_multiplier"
}

# OUTPUT, the file trace-cmd wrote, must be a complete trace.dat.
check_output()
{
	local output="$1"

	[ -s "$output" ] || die "$output was not written; trace-cmd's log: $STATE_DIR/log"
	[ "$(dd if="$output" bs=1 skip=3 count=7 2>/dev/null)" = "$DAT_MAGIC" ] ||
		die "$output is not a trace.dat file; trace-cmd's log: $STATE_DIR/log"
	trace-cmd report -i "$output" --stat >/dev/null 2>&1 ||
		die "trace-cmd cannot read $output back; trace-cmd's log: $STATE_DIR/log"
}

stop()
{
	local pid output lost

	find_tracefs
	output=$(cat "$STATE_DIR/output" 2>/dev/null) || die "no recording to stop ($STATE_DIR/output missing)"
	trap 'remove_instance' EXIT
	if pid=$(recorder_pid); then
		write_end_snapshot
		lost=$(cat "$TRACEFS/instances/$INSTANCE"/per_cpu/cpu*/stats 2>/dev/null |
			awk '/^(overrun|dropped events):/ { n += $NF } END { print n + 0 }')
		kill -INT "$pid"
		if ! wait_until "$TIMEOUT" pid_gone "$pid"; then
			kill_recorder
			die "trace-cmd record (pid $pid) did not finish within ${TIMEOUT}s of SIGINT and was killed; $output is incomplete"
		fi
	else
		note "trace-cmd record was no longer running; log: $STATE_DIR/log"
		kill_recorder
	fi
	forget_recording
	remove_instance
	check_output "$output"
	# Lost events break a merge: say so.
	[ "${lost:-0}" = 0 ] ||
		note "warning: the ring buffer lost $lost events (overruns and drops of all CPUs): give start a larger -b"
	note "wrote $output ($(wc -c <"$output") bytes)"
}

# Remove what a killed recording left; never a live recording's.
clean()
{
	local pid found

	find_tracefs
	pid=$(recorder_pid) && die "a recording is running (pid $pid): '$PROG stop' ends it"
	found=$(leftovers)
	[ -n "$found" ] || { note "nothing to clean"; return 0; }
	echo "$found" | sed "s/^/$PROG: removing: /" >&2
	kill_recorder
	remove_instance
	forget_recording
}

usage()
{
	local pad

	pad=$(echo "$PROG start" | sed 's/./ /g')
	cat <<-EOF
		usage: $PROG start [-o FILE] [-B INSTANCE] [-b KB] [-k KHZ] [-d DIR]
		       $pad [-t SECONDS] [--compression ALGO]
		       $PROG stop [-d DIR] [-t SECONDS]
		       $PROG clean [-d DIR]
		       $PROG tsc-khz [-k KHZ]
		       $PROG -h

		Record a KVM host's trace for kvm-tsc-merge with trace-cmd, in a tracefs
		instance of its own with the x86-tsc clock: KVM's TSC events, kvm_entry,
		kvm_exit, sched_switch and task_newtask, and a snapshot of KVM's per-vCPU
		TSC state for the VMs already running. All but tsc-khz and -h need root.

		  start    start trace-cmd record in the background; returns once the
		           events are being recorded and the snapshot is in the file
		  stop     write a second snapshot, of the VMs running now, stop the
		           recording (SIGINT), wait until its file is written and
		           check it
		  clean    remove what a killed recording left: its tracefs instance
		           and its state
		  tsc-khz  print the host's TSC rate in kHz, as the snapshot gives it;
		           fails where it is unknown

		  -o, --output FILE        the trace.dat file to write (default trace.dat)
		  -B, --instance INSTANCE  the tracefs instance to record in (default
		                           $DEFAULT_INSTANCE); stop and clean take start's
		  -b, --buffer-kb KB       the instance's ring buffer per CPU, in kB
		                           (default trace-cmd's)
		  -k, --tsc-khz KHZ        the host's TSC rate in kHz (default the kernel
		                           log's)
		  -d, --state-dir DIR      where start keeps trace-cmd's pid and log, the
		                           file's and the instance's names (default
		                           $DEFAULT_STATE_DIR); give stop and clean the same
		  -t, --timeout SECONDS    how long start waits for the recording to begin,
		                           stop for trace-cmd to end (default $DEFAULT_TIMEOUT)
		      --compression ALGO   trace-cmd record's --compression (default none:
		                           trace-cmd 3.1.6 cannot always read its zstd files
		                           back)
		  -h, --help               this text
	EOF
}

# A wrong command line: the message, the usage, exit status 2.
usage_error()
{
	echo "$PROG: error: $*" >&2
	usage >&2
	exit 2
}

# VALUE, the value of option NAME, must be a positive whole number like EXAMPLE.
whole_number()
{
	case $2 in
	'' | *[!0-9]* | 0*) usage_error "$1 '$2': not a positive whole number (like $3)" ;;
	esac
}

# An operand after COMMAND, which takes none.
operand_error()
{
	[ "$1" != start ] || usage_error "start takes no operand '$2': give the output file with -o"
	usage_error "$1 takes no operand '$2'"
}

# The options after COMMAND (usage()) into the variables named like them:
# -o FILE, -oFILE, --output FILE and --output=FILE alike.
parse_options()
{
	local command="$1" arg name value given var

	shift
	while [ $# -gt 0 ]; do
		arg=$1
		shift
		case $arg in
		-h | --help) usage; exit 0 ;;
		--) [ $# = 0 ] || operand_error "$command" "$1"; return 0 ;;
		--*=*) name=${arg%%=*} value=${arg#*=} given=1 ;;
		--?* | -?) name=$arg value='' given='' ;;
		-?*) name=${arg%"${arg#-?}"} value=${arg#-?} given=1 ;;
		*) operand_error "$command" "$arg" ;;
		esac
		case "$command $name" in
		"start -o" | "start --output") var=OUTPUT ;;
		"start -B" | "start --instance") var=INSTANCE ;;
		"start -b" | "start --buffer-kb") var=BUFFER_KB ;;
		"start -k" | "start --tsc-khz" | "tsc-khz -k" | "tsc-khz --tsc-khz") var=TSC_KHZ ;;
		"start -d" | "start --state-dir" | "stop -d" | "stop --state-dir" | \
			"clean -d" | "clean --state-dir") var=STATE_DIR ;;
		"start -t" | "start --timeout" | "stop -t" | "stop --timeout") var=TIMEOUT ;;
		"start --compression") var=COMPRESSION ;;
		*) usage_error "unknown option $name: $command has no such option" ;;
		esac
		if [ -z "$given" ]; then
			[ $# -gt 0 ] || usage_error "option $name needs a value"
			value=$1
			shift
		fi
		case $var in
		BUFFER_KB) whole_number "$name" "$value" '20480 kB' ;;
		TIMEOUT) whole_number "$name" "$value" '60 seconds' ;;
		TSC_KHZ) whole_number "$name" "$value" '2100000 kHz' ;;
		INSTANCE)
			case $value in
			'' | */* | . | ..) usage_error "$name '$value': not a tracefs instance name" ;;
			esac
			;;
		*) [ -n "$value" ] || usage_error "option $name needs a value" ;;
		esac
		eval "$var=\$value"
	done
}

main()
{
	local command="${1:-}"

	case $command in
	-h | --help) usage; return 0 ;;
	start | stop | clean | tsc-khz) shift ;;
	'') usage_error "no command" ;;
	-*) usage_error "unknown option $command" ;;
	*) usage_error "unknown command $command" ;;
	esac
	parse_options "$command" "$@"
	case $STATE_DIR in /*) ;; *) STATE_DIR=$(pwd)/$STATE_DIR ;; esac
	# A recording's instance is the one its start was given.
	case $command in stop | clean) INSTANCE=$(state_instance) ;; esac
	readonly OUTPUT INSTANCE BUFFER_KB TSC_KHZ STATE_DIR TIMEOUT COMPRESSION
	[ "$command" = tsc-khz ] || [ "$(id -u)" = 0 ] || die "needs root (tracefs)"
	# tsc-khz: grep . fails where neither -k nor the log has a rate.
	case $command in
	tsc-khz) host_tsc_khz | grep . || die "the kernel log has no TSC rate: give it with -k" ;;
	*) "$command" ;;
	esac
}

main "$@"
