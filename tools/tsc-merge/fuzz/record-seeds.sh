#!/bin/sh
# record-seeds.sh: record short real trace.dat files in the test VM, host-like around a KVM guest and guest-like with markers, as fuzzing seeds.
#
# usage: record-seeds.sh   (the payload of `make fuzz-seeds`, through
#        scripts/vm/vmtest.sh; runs from /ktt under busybox sh)
#
# Writes /export/seeds/host/*.dat and /export/seeds/guest/*.dat in each
# file layout trace-cmd writes (record_host, record_guest). Each file is
# kept small (under 64 kB) so that the fuzzer's runs stay fast. Prints each
# file's size and whether trace-cmd reads it back; fails, saying which,
# when a recording fails.

# shellcheck shell=dash # busybox sh, which has local
set -eu

readonly OUT=/export/seeds
readonly WORK=/tmp/seeds
readonly TRACEFS=/sys/kernel/tracing
readonly DEMO=/ktt/build/selftests-install/kvm-tsc-trace/tsc_guest_demo
readonly HOST_EVENTS="task:task_newtask sched:sched_switch kvm:kvm_entry kvm:kvm_exit
	kvm:kvm_write_tsc_offset kvm:kvm_write_tsc_multiplier kvm:kvm_nested_tsc_offset"
readonly INSTANCE=kvm-tsc-fuzz
readonly DEMO_SWITCHES='prev_comm ~ "tsc_guest*" || next_comm ~ "tsc_guest*"'
# A few trace_marker lines, one second apart so that sched_switch has
# something to say between them.
readonly MARKERS="for i in 1 2 3; do echo \"kvm-tsc-fuzz marker \$i\" >$TRACEFS/trace_marker; sleep 1; done"

die()
{
	echo "record-seeds.sh: $*" >&2
	exit 1
}

check_prerequisites()
{
	command -v trace-cmd >/dev/null || die "no trace-cmd in the VM"
	[ -x "$DEMO" ] || die "$DEMO missing: run 'make ksft'"
	[ -c /dev/kvm ] || die "no /dev/kvm in the VM: the host-like recordings need a KVM guest"
	grep -qw x86-tsc "$TRACEFS/trace_clock" || die "trace clock x86-tsc missing: $(cat "$TRACEFS/trace_clock")"
	mkdir -p "$WORK/host" "$WORK/guest" "$OUT/host" "$OUT/guest"
	# trace-cmd record -B writes the instance's temporary files in the
	# current directory, and /ktt is read-only.
	cd "$WORK"
}

# record ROLE NAME OPTION... COMMAND: trace-cmd record into $WORK/ROLE/NAME.dat,
# then into /export. The command's output goes to a log shown on failure.
record()
{
	local role="$1" name="$2" log

	shift 2
	log=$WORK/$name.log
	echo "# $role/$name.dat: trace-cmd record $*"
	trace-cmd record -o "$WORK/$role/$name.dat" "$@" >"$log" 2>&1 ||
		{ cat "$log"; die "trace-cmd record failed for $role/$name.dat (log above)"; }
	export_file "$role" "$name"
}

# export_file ROLE NAME: copy a finished file out and print its size, and
# whether trace-cmd reads it back.
export_file()
{
	local readable=readable

	trace-cmd report -i "$WORK/$1/$2.dat" >/dev/null 2>&1 || readable="NOT readable by trace-cmd report"
	cp "$WORK/$1/$2.dat" "$OUT/$1/$2.dat"
	echo "$1/$2.dat: $(wc -c <"$OUT/$1/$2.dat") bytes, $readable"
}

# convert ROLE FROM TO OPTION...: TO.dat from FROM.dat with trace-cmd convert.
convert()
{
	local role="$1" from="$2" to="$3"

	shift 3
	echo "# $role/$to.dat: trace-cmd convert $* -i $from.dat"
	trace-cmd convert "$@" -i "$WORK/$role/$from.dat" -o "$WORK/$role/$to.dat" >"$WORK/$to.log" 2>&1 ||
		{ cat "$WORK/$to.log"; die "trace-cmd convert failed for $role/$to.dat (log above)"; }
	export_file "$role" "$to"
}

# compress ROLE FROM NAME: the compressed variants of FROM.dat (NAME-zstd,
# NAME-zlib). trace-cmd 3.1.6's record --compression writes files it cannot
# read back in the test VM ("error reading header", see record-host.sh), so
# they come from an uncompressed recording, as a user would make them.
compress()
{
	convert "$1" "$2" "$3-zstd" --compression zstd
	if trace-cmd list -c 2>/dev/null | grep -qw zlib; then
		convert "$1" "$2" "$3-zlib" --compression zlib
	else
		echo "# $1/$3-zlib.dat skipped: this trace-cmd has no zlib ($(trace-cmd list -c 2>&1 | tr '\n\t' '  '))"
	fi
}

# record_demo NAME OPTION...: a host-like recording while tsc_guest_demo runs
# its guest, with the events kvm-tsc-merge reads on a host that this kernel
# has (the series adds two; trace-cmd fails on an unknown event).
record_demo()
{
	local name="$1" ev

	shift
	for ev in $HOST_EVENTS; do
		if [ ! -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ]; then
			echo "# no event $ev in this kernel: left out of $name.dat"
			continue
		fi
		set -- "$@" -e "$ev"
		# The idle VM's own switches are most of a file otherwise (540
		# against 14 KVM exits, 70 kB): keep the demo's.
		[ "$ev" != sched:sched_switch ] || set -- "$@" -f "$DEMO_SWITCHES"
	done
	record host "$name" "$@" "$DEMO"
}

# The host events in every layout; the instance variants leave the top
# buffer empty, as `trace-cmd record -B` does, so the data is only in the
# instance's buffer. One file is recorded compressed as it comes, readable
# or not: what trace-cmd really writes is an input too.
record_host()
{
	record_demo host-v7-none --compression none -C x86-tsc
	compress host host-v7-none host-v7
	record_demo host-v6 --file-version 6 -C x86-tsc
	record_demo host-instance-v7-none --compression none -B "$INSTANCE" -C x86-tsc
	compress host host-instance-v7-none host-instance-v7
	record_demo host-v7-zstd-recorded --compression zstd -C x86-tsc
}

# What a guest records for a merge: its markers (ftrace:print) and its
# scheduler, on the TSC. Version 6 the way a user gets it from version 7.
record_guest()
{
	# No -e ftrace:print: it has no enable file (trace-cmd fails, "No such
	# file or directory"), and the markers land in the buffer without it.
	record guest guest-v7-none --compression none -C x86-tsc -e sched:sched_switch sh -c "$MARKERS"
	compress guest guest-v7-none guest-v7
	convert guest guest-v7-none guest-v6 --file-version 6
}

main()
{
	check_prerequisites
	record_host
	record_guest
}

main
