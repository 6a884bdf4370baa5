#!/bin/bash
# run-tests.sh: unit tests of kvm-tsc-merge on synthetic traces that mktrace writes with the real trace-cmd (KTAP).
#
# usage: run-tests.sh [BUILD_DIR]   (default: build/tools of the project)
#
# Results are printed with tests/tap.sh. The C unit tests of the TSC
# arithmetic and the choice of step (tests/unit.c, BUILD_DIR/unit) run
# first; their results are numbered on after these.
#
# Every expected host time below is worked out by hand from the formula
# guest = ((host * mult) >> frac) + offset, so a test fails when the tool's
# arithmetic or its choice of step is wrong.

set -u

# shellcheck source-path=SCRIPTDIR source=dirs.sh
. "$(dirname "$0")/dirs.sh"
readonly MERGE=$BIN_DIR/kvm-tsc-merge
readonly MKTRACE=$BIN_DIR/mktrace
readonly UNIT=$BIN_DIR/unit
readonly ITERATE=$BIN_DIR/iterate
readonly PFTRACE_CHECK=$BIN_DIR/pftrace-check
readonly FORMATS=$TESTS_DIR/tracefs
readonly PROTO_DIR=$TESTS_DIR/../proto
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "$TESTS_DIR/tap.sh"

# mktrace NAME: SPEC on stdin -> $WORK/NAME.dat
mktrace()
{
	"$MKTRACE" -t "$FORMATS" -o "$WORK/$1.dat" - || echo "# mktrace failed for $1"
}

# A VMM process PID whose threads TIDs become vCPUs 0, 1, ... in that order:
# the thread creations, then for each vCPU the multiplier (MULT, FRAC) and
# offset (OFFSET) KVM writes when it creates the vCPU, from host TSC BASE.
vmm_at()
{
	local base=$1 pid=$2 mult=$3 frac=$4 offset=$5 tid id=0 ts=$(($1 + 1))

	shift 5
	echo "comm $pid qemu"
	echo "0 $base 1 task:task_newtask pid=$pid comm=qemu clone_flags=0x1200011"
	for tid in "$@"; do
		echo "comm $tid vcpu$id"
		echo "0 $ts $pid task:task_newtask pid=$tid comm=vcpu$id clone_flags=0x3d0f00"
		tsc_multiplier "$tid" $((ts + 1)) "$id" "$mult" "$frac"
		tsc_offset "$tid" $((ts + 2)) "$id" 0 "$offset"
		id=$((id + 1))
		ts=$((ts + 3))
	done
}

vmm()
{
	vmm_at 1 "$@"
}

# tsc_multiplier TID TS VCPU MULT FRAC: KVM writes a new vCPU's multiplier.
tsc_multiplier()
{
	echo "0 $2 $1 kvm:kvm_write_tsc_multiplier vcpu_id=$3 previous_tsc_multiplier=0 next_tsc_multiplier=$4 frac_bits=$5"
}

# tsc_offset TID TS VCPU PREVIOUS NEXT: KVM writes vCPU VCPU's offset.
tsc_offset()
{
	echo "0 $2 $1 kvm:kvm_write_tsc_offset vcpu_id=$3 previous_tsc_offset=$4 next_tsc_offset=$5"
}

# run TID VCPU FROM TO: one run interval of a vCPU on host CPU 0.
run()
{
	echo "0 $3 $1 kvm:kvm_entry vcpu_id=$2"
	echo "0 $4 $1 kvm:kvm_exit vcpu_id=$2"
}

# snapshot_line TS TEXT: a record-host.sh snapshot line at host TSC TS.
snapshot_line()
{
	# shellcheck disable=SC2028 # the \n in buf is mktrace's to read, kept as written
	echo "0 $1 7 ftrace:print ip=0 buf=\"kvm-tsc-snapshot $2\n\""
}

# mark CPU GUEST_TSC TEXT: a guest trace_marker write.
mark()
{
	echo "$1 $2 1 ftrace:print ip=0 buf=\"$3\""
}

# merge NAME ARGS...: run the tool; $OUT, $ERR, $STATUS its timeline, stderr, status.
merge()
{
	local name=$1

	shift
	"$MERGE" -q -F time,source,event,info -s "$WORK/$name.summary" "$@" \
		>"$WORK/$name.out" 2>"$WORK/$name.err"
	STATUS=$?
	OUT=$(awk '{ $1 = $1; print }' "$WORK/$name.out")
	ERR=$(cat "$WORK/$name.err")
}

# merge_again NAME ARGS...: merge as the last run did (its --sync-out
# copies, say): exit status 0 and the same timeline.
merge_again()
{
	local timeline=$OUT

	merge "$@" && expect 0 && [ "$OUT" = "$timeline" ]
}

# expect STATUS LINE...: the exit status, and each line in the timeline.
expect()
{
	if [ "$STATUS" != "$1" ]; then
		echo "# expected exit status $1, got $STATUS: $ERR"
		return 1
	fi
	expect_lines "${@:2}" <<<"$OUT"
}

# expect_lines LINE... <TEXT: each LINE (tabs as \t) is a line of TEXT; else
# the first that is not, and TEXT's first lines but a timeline's host ones.
expect_lines()
{
	local text line

	text=$(cat)
	for line in "$@"; do
		grep -qxF -- "$(printf '%b' "$line")" <<<"$text" && continue
		echo "# expected the line '$line' in:"
		grep -v ' host ' <<<"$text" | head -20 | sed 's/^/#   /'
		return 1
	done
}

# expect_stderr STATUS TEXT [F]: the exit status, and TEXT in stderr (a
# grep pattern, or with F the text as written).
expect_stderr()
{
	[ "$STATUS" = "$1" ] && grep -q${3:-} -- "$2" <<<"$ERR" && return 0
	echo "# expected exit status $1 and '$2', got $STATUS: $ERR"
	return 1
}

# expect_error PATTERN: exit status 1 and PATTERN in stderr.
expect_error()
{
	expect_stderr 1 "$1"
}

# expect_one_error PATTERN: expect_error, and stderr is that one line.
expect_one_error()
{
	expect_error "$1" && [ "$(grep -c . <<<"$ERR")" = 1 ]
}

# expect_refused MESSAGE: exit status 2 (bad usage) and MESSAGE in stderr.
expect_refused()
{
	expect_stderr 2 "$1" F
}

# merge_cases 3<<TABLE: a merge a line: the run's name, its arguments,
# its exit status, the timeline lines it must print and the patterns its
# summary must hold (';' between them; with status 1 or 2, its stderr:
# with 2 the text as written), and what it shows.
merge_cases()
{
	local name args status lines patterns what expected pattern failed

	while IFS='|' read -r -u 3 name args status lines patterns what; do
		IFS=';' read -r -a expected <<<"$lines"
		# shellcheck disable=SC2086 # the arguments are words: no path in $WORK has a blank
		merge "$name" $args
		expect "$status" "${expected[@]}"
		failed=$?
		IFS=';' read -r -a expected <<<"$patterns"
		for pattern in "${expected[@]:-}"; do
			case $status in
			1) expect_error "$pattern" ;;
			2) expect_refused "$pattern" ;;
			*) grep -q -- "$pattern" "$WORK/$name.summary" ;;
			esac || failed=1
		done
		tap_result "$failed" "$what"
	done
}

# step_host NAME OFFSET NEXT: VMM 1000's vCPU 0 runs host 200..300 with
# OFFSET and 400..500 with NEXT, written at host 310.
step_host()
{
	{ vmm 1000 0x100000000 32 "$2" 1001
	  run 1001 0 200 300
	  tsc_offset 1001 310 0 "$2" "$3"
	  run 1001 0 400 500; } | mktrace "$1"
}

# The conversions worked by hand, two VMs, and the files the tool refuses
# by name: first the traces, each with how its times convert, then the runs.
test_merges()
{
	# Offset -100, then 5000 from host 310 on: the step pair most tests use.
	step_host step-host -100 5000
	{ mark 0 150 before; mark 0 5450 after; } | mktrace step-guest
	# The TSC set back by 150 while the vCPU was out: guest 250 and 260 are
	# host 250 and 260 before the write, or host 400 and 410 after it.
	step_host amb-host 0 -150
	{ mark 0 250 a; mark 0 260 b; } | mktrace amb-guest
	# Intel: frac_bits 48, multiplier 1.5 (0x1800000000000), offset -10^12.
	# Host 4*10^15 is guest 6*10^15 - 10^12; the product needs 128 bits.
	{ vmm 1000 0x1800000000000 48 -1000000000000 1001
	  run 1001 0 3999999999999000 4000000000001000; } | mktrace intel-host
	{ mark 0 5999000000000000 x; mark 0 5999000000000001 y; } | mktrace intel-guest
	# AMD: frac_bits 32, multiplier 0.75 (0xc0000000), offset +7.
	{ vmm 1000 0xc0000000 32 7 1001
	  run 1001 0 1000 2000; } | mktrace amd-host
	{ mark 0 757 x; mark 0 1207 y; } | mktrace amd-guest
	# L1 offset 1000; L2 runs 300..400 with offset 50000 (nested).
	{ vmm 1000 0x100000000 32 1000 1001
	  run 1001 0 100 200
	  echo "0 250 1001 kvm:kvm_nested_tsc_offset vcpu_id=0 guest_mode=1 previous_tsc_offset=1000 next_tsc_offset=50000 tsc_multiplier=0x100000000"
	  run 1001 0 300 400
	  echo "0 450 1001 kvm:kvm_nested_tsc_offset vcpu_id=0 guest_mode=0 previous_tsc_offset=50000 next_tsc_offset=1000 tsc_multiplier=0x100000000"
	  run 1001 0 500 600; } | tee "$WORK/l2-host.spec" | mktrace l2-host
	{ mark 0 1150 l1a; mark 0 1550 l1b; } | mktrace l2-l1guest
	{ mark 0 50350 inner; } | mktrace l2-l2guest
	# An L1 event inside the L2 run cannot be: the host ran L2 then.
	{ mark 0 1350 impossible; } | mktrace l2-l1guest-bad
	# record-host.sh started while vCPU 0 ran L2: the snapshot gives L1's
	# offset 1000 and multiplier 2^32 at frac 32; the first nested event, the
	# exit at 450, says L2 had offset 50000 and multiplier 2^31 (half speed)
	# before it. Guest 50100 = ((h * 2^31) >> 32) + 50000 is host h = 200,
	# before the host recording began; L1's multiplier would give 100.
	{ echo "comm 1001 vcpu0"; echo "comm 1000 qemu"
	  snapshot_line 300 "vm=1000-12 pid=1000 vcpu=0 tid=1001 tsc_offset=1000 tsc_scaling_ratio=4294967296 tsc_scaling_ratio_frac_bits=32"
	  echo "0 450 1001 kvm:kvm_nested_tsc_offset vcpu_id=0 guest_mode=0 previous_tsc_offset=50000 next_tsc_offset=1000 previous_tsc_multiplier=0x80000000 tsc_multiplier=0x100000000"
	  run 1001 0 500 600; } | mktrace l2first-host
	{ mark 0 50100 early; } | mktrace l2first-guest
	# The vCPU existed before the recording: its first offset event's
	# previous value (500) applies to the run before it.
	{ echo "comm 1000 qemu"
	  run 1000 0 100 200
	  tsc_offset 1000 300 0 500 1000
	  run 1000 0 400 500; } | mktrace first-host
	{ mark 0 650 early; mark 0 1450 late; } | mktrace first-guest
	# Two VMMs, two vCPUs each, different offsets; guest CPU n is vCPU n.
	{ vmm 1000 0x100000000 32 100 1001 1002
	  vmm_at 30 2000 0x100000000 32 20000 2001 2002
	  run 1001 0 100 200; run 1002 1 210 300; run 2001 0 310 400; run 2002 1 410 500; } | mktrace vms-host
	{ mark 0 250 a0; mark 1 350 a1; } | mktrace vms-a
	{ mark 0 20350 b0; mark 1 20450 b1; } | mktrace vms-b
	{ mark 0 350 between; } | mktrace out-guest
	head -c 6000 "$WORK/step-guest.dat" >"$WORK/cut.dat"
	echo "not a trace" >"$WORK/text.dat"
	: >"$WORK/empty.dat"
	{ echo "clock local"; mark 0 150 x; } | mktrace local-guest
	{ echo "comm 1000 qemu"; run 1000 0 100 200; } | mktrace notsc-host
	{ mark 0 150 a; mark 1 160 b; } | mktrace twocpu-guest
	merge_cases 3<<EOF
step|${STEP[*]}|0|250 step-guest:0 print: 0x0: before;450 step-guest:0 print: 0x0: after||an offset step mid-trace: events on both sides convert exactly (negative offset before)
amb|-H $WORK/amb-host.dat -g g=$WORK/amb-guest.dat|3|250 g:0? print: 0x0: a;260 g:0? print: 0x0: b|2 ambiguous|a guest time that two steps explain is marked '?', counted, and exits 3
intel|-H $WORK/intel-host.dat -g g=$WORK/intel-guest.dat|0|4000000000000000 g:0 print: 0x0: x;4000000000000001 g:0 print: 0x0: y||TSC scaling with frac_bits 48 (Intel): exact, 128-bit product, negative offset
amd|-H $WORK/amd-host.dat -g g=$WORK/amd-guest.dat|0|1000 g:0 print: 0x0: x;1600 g:0 print: 0x0: y||TSC scaling with frac_bits 32 (AMD): the first host tick of each guest value
l2|-H $WORK/l2-host.dat -g l1=$WORK/l2-l1guest.dat -g l2=$WORK/l2-l2guest.dat@1000,l2|0|150 l1:0 print: 0x0: l1a;550 l1:0 print: 0x0: l1b;350 l2:0 print: 0x0: inner||L2 intervals: L1 events use L1 values around them, the nested guest its own
l2bad|-H $WORK/l2-host.dat -g l1=$WORK/l2-l1guest-bad.dat|3|350 l1:0! print: 0x0: impossible||an L1 guest event while the vCPU ran L2 is outside, marked '!', exit 3
l2first|-H $WORK/l2first-host.dat -g l2=$WORK/l2first-guest.dat@1000,l2|0|200 l2:0 print: 0x0: early||a trace begun in L2: the L2 step before the first exit has that exit's previous multiplier
first|-H $WORK/first-host.dat -g g=$WORK/first-guest.dat|0|150 g:0 print: 0x0: early;450 g:0 print: 0x0: late||before a vCPU's first TSC event, that event's previous value applies
vms-amb|-H $WORK/vms-host.dat -g a=$WORK/vms-a.dat|1||more than one VM with 2 vCPUs;@2000.1  qemu, 2 vCPUs ran|two VMs fit a guest: an error that lists the candidates, no guess
vms|-H $WORK/vms-host.dat -g a=$WORK/vms-a.dat@1000 -g b=$WORK/vms-b.dat@2000|0|150 a:0 print: 0x0: a0;250 a:1 print: 0x0: a1;350 b:0 print: 0x0: b0;450 b:1 print: 0x0: b1||several VMs and vCPUs, each guest tied by its VMM pid
vms-nopid|-H $WORK/vms-host.dat -g b=$WORK/vms-b.dat@3000|1||no VM of pid 3000 in the host trace|a VMM pid with no VM is an error that lists the VMs
out|-H $WORK/step-host.dat -g g=$WORK/out-guest.dat|3|450 g:0! print: 0x0: between|1 outside host run intervals|an event outside every run interval is marked '!', counted, and exits 3
cut|-H $WORK/step-host.dat -g $WORK/cut.dat|1||$WORK/cut.dat: a trace.dat file, but cut short or damaged|a truncated guest file: the error names the file and the problem
text|-H $WORK/text.dat -g $WORK/step-guest.dat|1||$WORK/text.dat: not a trace-cmd trace.dat file|a host file that is not a trace: the error names it
empty|-H $WORK/step-host.dat -g $WORK/empty.dat|1||$WORK/empty.dat: empty file|an empty file is refused by name
local|-H $WORK/step-host.dat -g $WORK/local-guest.dat|1||$WORK/local-guest.dat: recorded with the 'local' trace clock, not x86-tsc|a guest not using x86-tsc is refused by name
notsc|-H $WORK/notsc-host.dat -g $WORK/step-guest.dat|1||$WORK/notsc-host.dat: nothing tells the TSC offset of vCPU 0 of VM @1000.1: no kvm_write_tsc_offset, no snapshot, no time sync sample. Record it one of three ways|a host trace with nothing that tells a vCPU's offset is refused by name, with the three recipes
missing|-H $WORK/step-host.dat -g $WORK/nothere.dat|1||$WORK/nothere.dat: No such file or directory|a missing file is named
novcpu|-H $WORK/step-host.dat -g $WORK/twocpu-guest.dat@1000|1||$WORK/twocpu-guest.dat: CPU 1 has events, but the VM has no vCPU with that id|a guest CPU the VM has no vCPU for is refused before merging
EOF
}

test_no_damage()
{
	local before

	before=$(cat "$WORK/step-host.dat" "$WORK/step-guest.dat" | sha256sum)
	"$MERGE" -q "${STEP[@]}" -F time,bogus -o "$WORK/bad-fields.out" 2>/dev/null
	[ $? = 2 ] && [ ! -e "$WORK/bad-fields.out" ] &&
		[ "$(cat "$WORK/step-host.dat" "$WORK/step-guest.dat" | sha256sum)" = "$before" ]
	tap_result $? "bad --fields exits 2 before writing -o; the inputs are unchanged"
}

# No output may name an input or another output of the run.
test_outputs_refused()
{
	local before opt input failed

	before=$(cat "$WORK/step-host.dat" "$WORK/step-guest.dat" | sha256sum)
	for opt in -o -j -p -s; do
		failed=0
		for input in "host=the host trace (-H)" "guest=a guest trace (-g)"; do
			merge refused -k 1000 "${STEP[@]}" "$opt" "$WORK/step-${input%%=*}.dat"
			expect_refused "$opt names $WORK/step-${input%%=*}.dat, which is ${input#*=}: refused, nothing written" ||
				failed=1
		done
		[ "$failed" = 0 ] &&
			[ "$(cat "$WORK/step-host.dat" "$WORK/step-guest.dat" | sha256sum)" = "$before" ]
		tap_result $? "$opt naming the host or the guest trace is refused (exit 2); both are unchanged"
	done
	ln -sf step-guest.dat "$WORK/guest-link.dat"
	ln -f "$WORK/step-host.dat" "$WORK/host-hardlink.dat"
	merge refused-link "${STEP[@]}" -o "$WORK/guest-link.dat"
	expect_refused "-o names $WORK/guest-link.dat, which is a guest trace (-g)" &&
		merge refused-hard "${STEP[@]}" -o "$WORK/../$(basename "$WORK")/host-hardlink.dat" &&
		expect_refused "which is the host trace (-H): refused, nothing written" &&
		[ "$(cat "$WORK/step-host.dat" "$WORK/step-guest.dat" | sha256sum)" = "$before" ]
	tap_result $? "an output reaching an input through a symbolic link, a hard link or another spelling is refused"
	merge refused-twice "${STEP[@]}" -o "$WORK/twice.txt" -s "$WORK//twice.txt"
	expect_refused "-s names $WORK//twice.txt, which is the timeline (-o): refused, nothing written" &&
		[ ! -e "$WORK/twice.txt" ] &&
		merge refused-copy "${STEP[@]}" -o "$WORK/new-sync/step-guest.dat" -S "$WORK/new-sync/" &&
		expect_refused "--sync-out names $WORK/new-sync//step-guest.dat, which is the timeline (-o)" &&
		[ ! -e "$WORK/new-sync" ]
	tap_result $? "two outputs naming one file not there yet (-o and -s, -o and a --sync-out copy) are refused; nothing is created"
	"$MERGE" -q "${STEP[@]}" -o - -s - >"$WORK/both.out" &&
		grep -q "step-guest:0 .*print: 0x0: before" "$WORK/both.out" &&
		grep -q "^VM @1000.1" "$WORK/both.out"
	tap_result $? "-o - -s -: standard output takes the timeline, then the summary"
	merge refused-stdout "${STEP[@]}" -j -
	expect_refused "-j names -, which is the timeline (-o): refused, nothing written"
	tap_result $? "the timeline and -j - would interleave on standard output: refused"
	"$MERGE" -q -k 1000 "${STEP[@]}" \
		-o /dev/stdout -j /dev/fd/1 -p /proc/self/fd/1 2>"$WORK/alias.err" | cat >"$WORK/alias.out"
	[ "${PIPESTATUS[0]}" = 2 ] && [ ! -s "$WORK/alias.out" ] &&
		grep -qxF "kvm-tsc-merge: -j names /dev/fd/1, which is the timeline (-o): refused, nothing written" \
			"$WORK/alias.err"
	tap_result $? "/dev/stdout, /dev/fd/1 and /proc/self/fd/1 are one pipe: two outputs there are refused"
	"$MERGE" -q -k 1000 "${STEP[@]}" -o /dev/null -j /dev/null -p /dev/null -s /dev/null
	tap_result $? "/dev/null takes several outputs"
}

# A guest whose one page's commit is zeroed; one that recorded nothing.
test_no_events()
{
	local at

	cp "$WORK/step-guest.dat" "$WORK/zeroed-guest.dat"
	at=$(trace-cmd dump --options -i "$WORK/zeroed-guest.dat" 2>/dev/null |
		awk '/data offset and size/ { print $2; exit }')
	# The page header: a u64 timestamp, then the commit, a 64-bit long.
	head -c 8 /dev/zero |
		dd of="$WORK/zeroed-guest.dat" bs=1 seek=$((at + 8)) conv=notrunc status=none
	merge zeroed -H "$WORK/step-host.dat" -g "$WORK/zeroed-guest.dat" -o "$WORK/zeroed.txt"
	expect_error "$WORK/zeroed-guest.dat: its CPU data (4096 bytes) yields no events: damaged or truncated" &&
		[ ! -e "$WORK/zeroed.txt" ]
	tap_result $? "a guest whose CPU data yields no events is an error naming it and its bytes, nothing written"
	echo "cpus 1" | mktrace nodata-guest
	merge nodata -H "$WORK/step-host.dat" -g "$WORK/nodata-guest.dat"
	expect 0 "200 host kvm_entry: vcpu 0, rip 0x0"
	tap_result $? "a guest that recorded no CPU data merges as the host's events alone"
}

# Host traces whose formats have the needed events but whose data lacks some.
test_unseen_host_events()
{
	{ vmm 1000 0x100000000 32 100 1001 1002
	  run 1001 0 100 200; run 1002 1 210 300; } >"$WORK/unseen.spec"
	{ mark 0 250 a; mark 1 260 b; } | mktrace unseen-guest
	grep -v task_newtask "$WORK/unseen.spec" | mktrace no-newtask-host
	merge no-newtask -H "$WORK/no-newtask-host.dat" -g "$WORK/unseen-guest.dat"
	expect_error "no VM with 2 vCPUs" &&
		expect_error "has no records of task:task_newtask (left out of the recording, or filtered out)" &&
		expect_error 'record-host.sh, as the user guide.s "Three ways to record" says'
	tap_result $? "a host trace without task_newtask records: the error names the event and the recipe"
	grep -v 'kvm_entry\|kvm_exit' "$WORK/unseen.spec" | mktrace no-entry-host
	merge no-entry -H "$WORK/no-entry-host.dat" -g "$WORK/unseen-guest.dat"
	expect_error "has no records of kvm:kvm_entry, kvm:kvm_exit (" &&
		! grep -q task_newtask <<<"$ERR"
	tap_result $? "a host trace without kvm_entry and kvm_exit records: the error names those, not the others"
}

# progress NAME ARGS...: $ERR_LAST, each stderr line as its last rewrite shows it.
progress()
{
	local name=$1

	shift
	"$MERGE" "${STEP[@]}" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
	STATUS=$?
	ERR_LAST=$(awk -F'\r' '{ print $NF }' "$WORK/$name.err")
}

test_progress()
{
	progress progress --progress
	{ [ "$STATUS" = 0 ] &&
		grep -qx "kvm-tsc-merge: scanning $WORK/step-host.dat: 100% (.*) in .* s *" <<<"$ERR_LAST" &&
		grep -qx "kvm-tsc-merge: merging: 100% (.*) in .* s *" <<<"$ERR_LAST" &&
		[ "$(wc -l <<<"$ERR_LAST")" = 2 ] && grep -q "scanning .*: 0% (0 B of " "$WORK/progress.err"; } ||
		{ echo "# got: $(cat -A "$WORK/progress.err")"; false; }
	tap_result $? "--progress to a file: a line for each pass, rewritten up to 100%"
	# libtracecmd numbers a compressed file's records in its decompressed data.
	trace-cmd convert --file-version 7 --compression zstd -i "$WORK/step-host.dat" \
		-o "$WORK/step-host-zstd.dat" >/dev/null 2>&1
	"$MERGE" --progress -n -H "$WORK/step-host-zstd.dat" -g "$WORK/step-guest.dat" \
		2>"$WORK/progress-zstd.err"
	grep -q "scanning $WORK/step-host-zstd.dat: 0% (0 B of 4.1 kB)" "$WORK/progress-zstd.err" &&
		grep -q "scanning $WORK/step-host-zstd.dat: 100% (4.1 kB) in" "$WORK/progress-zstd.err"
	tap_result $? "a compressed host file: the progress counts its decompressed CPU data"
	progress progress-q --progress -q
	[ "$STATUS" = 0 ] && [ ! -s "$WORK/progress-q.err" ]
	tap_result $? "-q: no progress"
	progress progress-default
	[ "$STATUS" = 0 ] && [ ! -s "$WORK/progress-default.err" ]
	tap_result $? "stderr not a terminal: no progress unless asked"
}

# Every output goes to a temporary file beside it until it is complete;
# devices and pipes are written in place.
test_outputs_kept()
{
	local out=$WORK/kept f

	mkdir -p "$out/sync"
	for f in timeline json pftrace summary; do echo "precious $f" >"$out/$f"; done
	ln -s timeline "$out/link"
	# The 2^63 guest of test_sync_out fails in --sync-out, after the merge.
	"$MERGE" -q -k 1000 -H "$WORK/big-host.dat" -g "$WORK/big-guest.dat" -S "$out/sync" \
		-o "$out/link" -j "$out/json" -p "$out/pftrace" -s "$out/summary" 2>"$out.err"
	[ $? = 1 ] && [ -L "$out/link" ] && ! grep -q "^precious" "$out/timeline" "$out/json" "$out/pftrace" "$out/summary" &&
		[ -z "$(ls -A "$out/sync")" ] && [ -z "$(find "$out" -mindepth 1 -maxdepth 1 -name '.*')" ] &&
		grep -qxF "kvm-tsc-merge: kept, complete: -o $out/link, -j $out/json, -p $out/pftrace, -s $out/summary" "$out.err"
	tap_result $? "--sync-out failing after the merge keeps -o (through its symlink), -j, -p, -s complete and names them; no temporary file"
	"$MERGE" -q -n -k 1000 "${STEP[@]}" -j "$out/json2" -p /dev/full 2>"$out.err"
	[ $? = 1 ] && jq -e '.traceEvents | length > 0' "$out/json2" >/dev/null &&
		grep -q "^kvm-tsc-merge: writing /dev/full failed: No space left on device" "$out.err" &&
		grep -qxF "kvm-tsc-merge: kept, complete: -j $out/json2" "$out.err"
	tap_result $? "-p failing (a full device) keeps -j complete, and says so"
	"$MERGE" -q -k 1000 "${STEP[@]}" -o "$out/link" &&
		[ -L "$out/link" ] && grep -q "before" "$out/timeline" &&
		[ "$("$MERGE" -q "${STEP[@]}" -o /dev/stdout | wc -l)" -gt 0 ]
	tap_result $? "a symbolic link -o writes the file it names; -o /dev/stdout writes into a pipe"
	if [ "$(id -u)" != 0 ]; then
		tap_skip "-o on a character device: mknod needs root"
		return
	fi
	mknod "$out/null" c 1 3 &&
		"$MERGE" -q -H "$WORK/big-host.dat" -g "$WORK/big-guest.dat" -S "$out/sync" \
			-o "$out/null" 2>/dev/null
	[ $? = 1 ] && [ -c "$out/null" ] &&
		"$MERGE" -q "${STEP[@]}" -o "$out/null" &&
		[ -c "$out/null" ]
	tap_result $? "-o on a character device (a private copy of /dev/null) writes it and never removes it, failed run or not"
}

# sync_commit_race NAME DIR FORCE COMMAND...: merge the step pair with -S
# DIR (FORCE: -f or ""), its timeline into a FIFO, which holds the run after
# --sync-out checked DIR and began its copies; then run COMMAND, which puts
# something in the way of the guest's copy, and let the run go on.
sync_commit_race()
{
	local fifo=$WORK/$1.fifo pid i

	mkfifo "$fifo"
	# shellcheck disable=SC2086 # FORCE is one option or none
	"$MERGE" -q $3 "${STEP[@]}" -S "$2" -o "$fifo" 2>"$WORK/$1.err" &
	pid=$!
	for i in $(seq 100); do
		compgen -G "$2/.step-guest.dat.*" >/dev/null && break
		sleep 0.1
	done
	"${@:4}"
	timeout 20 cat "$fifo" >/dev/null
	wait "$pid"
	STATUS=$?
	ERR=$(cat "$WORK/$1.err")
}

# A guest's copy that cannot take its name when the run ends: the host's
# copy, which names the guest's trace id, is not put in either.
test_sync_all_or_nothing()
{
	local dir=$WORK/sync-aon

	mkdir -p "$dir/force" "$dir/new"
	echo "old host copy" >"$dir/force/step-host.dat"
	sync_commit_race aon-force "$dir/force" -f mkdir "$dir/force/step-guest.dat"
	expect_error "^$dir/force/step-guest.dat: is a directory$" &&
		grep -qxF "kvm-tsc-merge: --sync-out left $dir/force as it was" <<<"$ERR" &&
		[ "$(cat "$dir/force/step-host.dat")" = "old host copy" ] &&
		[ "$(ls -A "$dir/force" | tr '\n' ' ')" = "step-guest.dat step-host.dat " ]
	tap_result $? "--sync-out -f: a guest copy's name taken by a directory during the run puts the replaced host copy back and names the directory"
	sync_commit_race aon-new "$dir/new" "" touch "$dir/new/step-guest.dat"
	expect_error "^$dir/new/step-guest.dat: exists; --force replaces it$" &&
		grep -qxF "kvm-tsc-merge: --sync-out left $dir/new as it was" <<<"$ERR" &&
		[ "$(ls -A "$dir/new")" = step-guest.dat ] && [ ! -s "$dir/new/step-guest.dat" ]
	tap_result $? "--sync-out: a file put at a guest copy's name during the run takes this run's host copy away again and is left alone"
}

# The same process creates vCPU 0 twice (multiplier written from 0 again):
# two VMs, @1000.1 with offset 100 and @1000.2 with offset 7000.
test_vm_created_again()
{
	{ vmm 1000 0x100000000 32 100 1001
	  run 1001 0 100 200
	  tsc_multiplier 1001 300 0 0x100000000 32
	  tsc_offset 1001 301 0 0 7000
	  run 1001 0 400 500; } | mktrace gen-host
	{ mark 0 7450 second; } | mktrace gen-guest
	merge_cases 3<<EOF
gen|-H $WORK/gen-host.dat -g g=$WORK/gen-guest.dat@1000.2|0|450 g:0 print: 0x0: second|^VM @1000.2|a vCPU id created again by one process starts a second VM (@PID.2)
gen-amb|-H $WORK/gen-host.dat -g g=$WORK/gen-guest.dat@1000|1||more than one VM of pid 1000|a pid with two VMs needs .N
EOF
}

# VMM 1000's vCPU thread 1001 exits; VMM 2000 gets tid 1001 for its own vCPU.
test_tid_reused()
{
	{ vmm_at 1 1000 0x100000000 32 -100 1001
	  run 1001 0 100 200
	  vmm_at 300 2000 0x100000000 32 1000 1001
	  run 1001 0 400 500; } | mktrace reuse-host
	{ mark 0 50 first; } | mktrace reuse-first
	{ mark 0 1450 second; } | mktrace reuse-second
	merge reuse -H "$WORK/reuse-host.dat" -g a="$WORK/reuse-first.dat@1000" \
		-g b="$WORK/reuse-second.dat@2000" -j "$WORK/reuse.json" -k 1000
	expect 0 "0.000150000 a:0 print: 0x0: first" "0.000450000 b:0 print: 0x0: second" &&
		[ "$(jq -c '[.traceEvents[] | select(.ph == "B" and .name == "in guest") | [.pid, .tid, .ts]]' \
			"$WORK/reuse.json")" = "[[1000,1001,99],[2000,1001,399]]" ]
	tap_result $? "a tid reused by a second VMM: the first VMM's runs stay its own, both guests placed exactly"
}

# The nested pair given wrongly, or its host recorded without its events.
test_nested_errors()
{
	merge l2auto -H "$WORK/l2-host.dat" -g l2="$WORK/l2-l2guest.dat,l2"
	expect_error "a nested (,l2) guest needs the VMM pid"
	tap_result $? "a nested guest without @PID is refused: its CPUs do not identify a VM"
	# The host recorded without kvm_nested_tsc_offset (a kernel without
	# the series, or the event left out).
	grep -v kvm_nested_tsc_offset "$WORK/l2-host.spec" | mktrace l2-nonested-host
	merge l2nonested -H "$WORK/l2-nonested-host.dat" -g l2="$WORK/l2-l2guest.dat@1000,l2"
	expect_error "$WORK/l2-l2guest.dat: a nested (,l2) guest of VM @1000.1, but the host trace $WORK/l2-nonested-host.dat has no kvm:kvm_nested_tsc_offset for that VM's vCPUs" &&
		expect_error "this project's kernel series (patches/, applied with make apply KSRC=/path/to/linux, or on a distribution kernel its KVM modules, make kvm-modules" &&
		expect_one_error "must be recorded (-e kvm:kvm_nested_tsc_offset"
	tap_result $? "a nested guest whose host trace has no kvm_nested_tsc_offset: one error naming the guest, the series and the event to record"
	# The L2 trace given without ,l2: with L1's offset 1000 its event,
	# guest 50350, is host 49350, outside every run, as before; with the
	# L2 step's offset 50000 it is host 350, inside the L2 run 300..400,
	# which the hint says. An L1 guest whose event fits no L2 run gets none.
	merge l2asl1 -H "$WORK/l2-host.dat" -g l2="$WORK/l2-l2guest.dat@1000"
	expect 3 "49350 l2:0! print: 0x0: inner" &&
		expect_stderr 3 "1 guest events fell outside every host run interval" &&
		expect_stderr 3 "kvm-tsc-merge: $WORK/l2-l2guest.dat: 1 of its 1 events fall outside every run of VM @1000.1 but inside the runs of its nested guest (kvm_nested_tsc_offset): recorded inside that nested guest? Give it with ,l2: --guest l2=$WORK/l2-l2guest.dat@1000.1,l2" F &&
		merge l2bad-hint -H "$WORK/l2-host.dat" -g l1="$WORK/l2-l1guest-bad.dat" &&
		[ "$STATUS" = 3 ] && ! grep -q ",l2" <<<"$ERR"
	tap_result $? "a nested guest's trace given without ,l2: outside, exit 3, and a hint naming the file and its ,l2 spec"
}

test_json()
{
	"$MERGE" -q -n -k 1000 -j "$WORK/vms.json" -H "$WORK/vms-host.dat" \
		-g a="$WORK/vms-a.dat@1000" -g b="$WORK/vms-b.dat@2000" &&
		jq -e '([.traceEvents[] | select(.ph == "i" and .pid >= 1073741824)] | length == 4) and
			([.traceEvents[] | select(.ph == "B" and .name == "in guest")] | length == 4) and
			([.traceEvents[] | select(.ph == "M" and .name == "process_name" and
				(.args.name | startswith("VM a")))] | length == 1)' "$WORK/vms.json" >/dev/null
	tap_result $? "the Chrome JSON parses, has a VM process per guest, guest events and 'in guest' slices"
	# A trace that begins inside a run: its first kvm_exit has no begin.
	{ echo "comm 1000 qemu"
	  echo "0 50 1000 kvm:kvm_exit vcpu_id=0"
	  tsc_offset 1000 60 0 0 0
	  run 1000 0 100 200; } | mktrace midrun-host
	{ mark 0 150 x; } | mktrace midrun-guest
	"$MERGE" -q -n -k 1000 -j "$WORK/midrun.json" -H "$WORK/midrun-host.dat" \
		-g "$WORK/midrun-guest.dat" 2>/dev/null &&
		jq -e '([.traceEvents[] | select(.ph == "B")] | length) == ([.traceEvents[] | select(.ph == "E")] | length)' \
			"$WORK/midrun.json" >/dev/null
	tap_result $? "JSON slices balance when the trace begins inside a run"
	"$MERGE" -H "$WORK/vms-host.dat" -g a="$WORK/vms-a.dat@1000" -j "$WORK/x.json" 2>"$WORK/x.err"
	[ $? = 1 ] && grep -q "vms-host.dat does not say it (no TSC2NSEC option, no record-host.sh snapshot): give --tsc-khz" "$WORK/x.err" &&
		[ ! -e "$WORK/x.json" ]
	tap_result $? "--json without --tsc-khz, on a host file that does not say the rate, is refused and writes nothing"
}

# pftrace_text FILE: the Perfetto trace FILE as protoc decodes it (our schema).
pftrace_text()
{
	protoc --decode=perfetto.protos.Trace --proto_path="$PROTO_DIR" \
		"$PROTO_DIR/perfetto_trace.proto" <"$1"
}

# pftrace_check FILE [--names | --events]: Perfetto's import rules for
# ftrace bundles and machines, checked over protoc's text; or with
# --events, one line per track and event (pftrace-check).
pftrace_check()
{
	pftrace_text "$1" | "$PFTRACE_CHECK" "${@:2}"
}

# perfetto NAME ARGS...: the merge of ARGS (-k 1000: a TSC tick is a
# microsecond) as WORK/NAME.pftrace, its tracks and events in WORK/NAME.events.
perfetto()
{
	local name=$1

	shift
	"$MERGE" -q -n -k 1000 -p "$WORK/$name.pftrace" "$@" &&
		pftrace_check "$WORK/$name.pftrace" --events >"$WORK/$name.events"
}

# -k 1000: a TSC tick is a microsecond. Guest a is machine 1, b machine 2.
test_perfetto()
{
	local ev=$WORK/vms.events

	perfetto vms -H "$WORK/vms-host.dat" -g a="$WORK/vms-a.dat@1000" -g b="$WORK/vms-b.dat@2000" &&
		expect_lines 'ftrace\t1\t0\t150000\t1\tprint\tip=0;buf=a0' \
			'ftrace\t1\t1\t250000\t1\tprint\tip=0;buf=a1' \
			'ftrace\t2\t0\t350000\t1\tprint\tip=0;buf=b0' \
			'ftrace\t2\t1\t450000\t1\tprint\tip=0;buf=b1' \
			'ftrace\t0\t0\t2000\t1000\ttask_newtask\tpid=1001;comm=vcpu0;clone_flags=4001536;oom_score_adj=0' \
			'ftrace\t0\t0\t100000\t1001\tkvm_entry\tvcpu_id=0;rip=0;immediate_exit=0' <"$ev"
	tap_result $? "Perfetto: protoc decodes it; ftrace bundles per machine and CPU at host ns, typed or generic events"
	grep -q "^track	1	[0-9]*	VM a (qemu pid 1000.1)		plain$" "$ev" &&
		grep -q "^track	2	[0-9]*	VM b (qemu pid 2000.1)		plain$" "$ev" &&
		expect_lines '4000\t0\tvCPU 0 TSC offset\tTYPE_COUNTER\t\tvalue=100;tsc_offset=100' \
			'33000\t0\tvCPU 0 TSC offset\tTYPE_COUNTER\t\tvalue=20000;tsc_offset=20000' \
			'32000\t0\tvCPU 0 TSC multiplier\tTYPE_COUNTER\t\tvalue=4294967296;tsc_multiplier=4294967296' \
			'100000\t0\tvcpu0\tTYPE_SLICE_BEGIN\tin guest\tvcpu=0' \
			'200000\t0\tvcpu0\tTYPE_SLICE_END\t\t' <"$ev" &&
		[ "$(grep -c "	TYPE_SLICE_BEGIN	in guest	" "$ev")" = 4 ] &&
		[ "$(grep -c "	TYPE_SLICE_END	" "$ev")" = 4 ]
	tap_result $? "Perfetto: VM tracks, TSC offset and multiplier counters, 'in guest' slices on host threads"
}

# sched CPU TS PREV PREV_PID STATE NEXT NEXT_PID: a sched_switch.
sched()
{
	echo "$1 $2 $4 sched:sched_switch prev_comm=$3 prev_pid=$4 prev_prio=120 prev_state=$5 next_comm=$6 next_pid=$7 next_prio=120"
}

# sched_host_start: a host's tasks init and worker, VMM 1000's vCPU 0, and
# host CPU 0's switch from worker to qemu at 50: the scheduling tests' start.
sched_host_start()
{
	echo "comm 1 init"; echo "comm 10 worker"
	vmm 1000 0x100000000 32 100 1001
	sched 0 50 worker 10 1 qemu 1000
}

# Scheduling on two host CPUs and on a guest's vCPU, every task named.
test_perfetto_ftrace()
{
	local ev=$WORK/sched.events i

	{ sched_host_start
	  sched 1 60 init 1 0 worker 10
	  run 1001 0 100 200; } | mktrace sched-host
	{ echo "comm 1 init"; echo "comm 7 kworker"
	  sched 0 220 init 1 2 kworker 7
	  mark 0 260 hello | sed 's/ 1 ftrace/ 7 ftrace/'; } | mktrace sched-guest
	perfetto sched -H "$WORK/sched-host.dat" -g g="$WORK/sched-guest.dat@1000" &&
		expect_lines 'ftrace\t0\t0\t50000\t10\tsched_switch\tprev_comm=worker;prev_pid=10;prev_prio=120;prev_state=1;next_comm=qemu;next_pid=1000;next_prio=120' \
			'ftrace\t0\t1\t60000\t1\tsched_switch\tprev_comm=init;prev_pid=1;prev_prio=120;prev_state=0;next_comm=worker;next_pid=10;next_prio=120' \
			'ftrace\t1\t0\t120000\t1\tsched_switch\tprev_comm=init;prev_pid=1;prev_prio=120;prev_state=2;next_comm=kworker;next_pid=7;next_prio=120' \
			'ftrace\t1\t0\t160000\t7\tprint\tip=0;buf=hello' <"$ev" &&
		! grep -q "^ftrace	0	.*buf=hello" "$ev" &&
		pftrace_text "$WORK/sched.pftrace" | head -9 | tr -d ' \n' |
		grep -q '^packet{clock_snapshot{clocks{clock_id:6timestamp:1000}primary_trace_clock:BUILTIN_CLOCK_BOOTTIME}'
	tap_result $? "Perfetto: typed sched_switch per host CPU bundle; guest events on machine 1 only; a clock snapshot first"
	pftrace_check "$WORK/sched.pftrace" --names >"$WORK/sched.check" &&
		pftrace_check "$WORK/vms.pftrace" >"$WORK/vms.check"
	tap_result $? "Perfetto import rules hold: bundle times, sequences per machine, machines and tasks named ($(tail -1 "$WORK/sched.check"))"
	# An offset of -256: the counter and its exact argument, signed.
	{ vmm 1000 0x100000000 32 0xffffffffffffff00 1001; run 1001 0 1000 2000; } | mktrace neg-host
	{ echo "comm 1 init"; mark 0 1244 x; } | mktrace neg-guest
	perfetto neg -H "$WORK/neg-host.dat" -g "$WORK/neg-guest.dat" &&
		expect_lines '4000\t0\tvCPU 0 TSC offset\tTYPE_COUNTER\t\tvalue=-256;tsc_offset=-256' \
			'ftrace\t1\t0\t1500000\t1\tprint\tip=0;buf=x' <"$WORK/neg.events"
	tap_result $? "Perfetto: a negative TSC offset is an exact signed counter and argument"
	# 1100 VMMs of a vCPU each: 4400 host tracks, past any fixed table of
	# 4096, and the guest's name.
	{ echo "comm 1 init"
	  for i in $(seq 1100); do
		vmm_at $((i * 10)) $((10000 + 2 * i)) 0x100000000 32 100 $((10001 + 2 * i))
	  done
	  run 10003 0 50000 60000; } | mktrace many-host
	{ echo "comm 1 init"; mark 0 55100 x; } | mktrace many-guest
	perfetto many -H "$WORK/many-host.dat" -g "$WORK/many-guest.dat@10002" &&
		[ "$(grep -c "^track	" "$WORK/many.events")" = 4401 ] &&
		pftrace_check "$WORK/many.pftrace" --names >/dev/null
	tap_result $? "Perfetto: 4400 tracks, no fixed limit; uuids distinct"
}

# A guest CPU's events go back in host time only around an event outside
# every run: in runs, the step never goes back and a later step's runs
# come later. Here the TSC jumps forward by 100000 at host 1000: b (guest
# 1500) is nearest the first step's span, host 1500, but c (guest 101150)
# is the second run's host 1150, and is out of order.
test_perfetto_back_in_time()
{
	local ev=$WORK/back.events

	{ echo "comm 1 init"; vmm 1000 0x100000000 32 0 1001
	  run 1001 0 200 300
	  tsc_offset 1001 1000 0 0 100000
	  run 1001 0 1100 1200; } | mktrace back-host
	{ echo "comm 1 init"; mark 0 250 a; mark 0 1500 b; mark 0 101150 c; } | mktrace back-guest
	merge back -k 1000 -p "$WORK/back.pftrace" -H "$WORK/back-host.dat" -g g="$WORK/back-guest.dat"
	[ "$STATUS" = 3 ] && grep -q "2 outside host run intervals, 0 ambiguous, 1 out of order" "$WORK/back.summary" &&
		pftrace_check "$WORK/back.pftrace" --names >"$WORK/back.check" &&
		grep -qx "ok 3 12" "$WORK/back.check" &&
		pftrace_check "$WORK/back.pftrace" --events >"$ev" &&
		[ "$(grep "^ftrace	1	0	" "$ev" | cut -f4,7 | tr '\t\n' '  ')" = "250000 ip=0;buf=a 1500000 ip=0;buf=b 1150000 ip=0;buf=c " ] ||
		{ echo "# exit $STATUS; $(tail -1 "$WORK/back.check" 2>/dev/null); machine 1:"; grep "^ftrace	1	" "$ev" 2>/dev/null | sed 's/^/#   /'; false; }
	tap_result $? "Perfetto: a guest event placed back in time (after one outside every run) starts a new bundle of its CPU; both bundles in time order"
}

# The real recordings of fuzz/seeds/real that make a pair: the agent-mode
# host of the VMX merge-e2e run with its guest, as version 7 zstd and as
# version 6 (the other host seeds were recorded with no guest trace, the
# other guest seed in a run whose host file is not kept). Not names=1:
# the agent's guest file saves no comms, and guest pids 69 and 116 run
# events before any sched_switch of theirs names them.
test_perfetto_real()
{
	local real=$FUZZ_SRC/seeds/real host guest name records

	host=$real/host/agent-host-vmx-v7-zstd.dat
	for guest in agent-guest-vmx-v7-zstd agent-guest-vmx-v6; do
		name=real-$guest
		records=$("$ITERATE" "$host" "$real/guest/$guest.dat")
		perfetto "$name" -H "$host" -g "$real/guest/$guest.dat" 2>"$WORK/$name.err" &&
			pftrace_check "$WORK/$name.pftrace" >"$WORK/$name.check" &&
			grep -qx "ok [1-9][0-9]* $records" "$WORK/$name.check" &&
			grep -q "^ftrace	1	1	" "$WORK/$name.events"
		tap_result $? "Perfetto on the real $(basename "$host") with $guest.dat: import rules hold, all $records records in bundles, the guest's CPU 1 on machine 1 ($(tail -1 "$WORK/$name.check"))"
	done
}

# system_infos FILE: "MACHINE_ID NUM_CPUS RELEASE NAME" for each
# SystemInfo packet of the Perfetto trace FILE, decoded by protoc.
system_infos()
{
	pftrace_text "$1" | awk '
		/^packet \{/ { si = 0; id = 0; cpus = rel = name = "-" }
		/^  system_info \{/ { si = 1 }
		/^    num_cpus: / { cpus = $2 }
		/^      release: / { rel = $2 }
		/^    machine_name: / { sub(/^    machine_name: /, ""); name = $0 }
		/^  machine_id: / { id = $2 }
		/^\}/ && si { print id, cpus, rel, name }'
}

# From each trace's UNAME and CPU count: the real host's node name is "(none)".
test_perfetto_machines()
{
	local name=real-agent-guest-vmx-v7-zstd

	system_infos "$WORK/$name.pftrace" >"$WORK/$name.machines"
	printf '%s\n' '0 1 "6.12.117+" "host"' '1 2 "6.12.117+" "VM agent-guest-vmx-v7-zstd (l2 pid 301.1)"' |
		diff - "$WORK/$name.machines" >&2
	tap_result $? "Perfetto on the real pair: a SystemInfo per machine, its name, CPUs and kernel release"
}

# compact_switches EVENTS: every sched_switch of perfetto's EVENTS as
# "MACHINE CPU TS PREV_PID PREV_STATE PREV_COMM NEXT_PID NEXT_COMM", per
# machine and CPU in time order, a compact one's prev_* taken from the
# switch before it on its CPU, as trace_processor takes them.
compact_switches()
{
	awk -F '\t' '$1 == "ftrace" && $6 == "sched_switch"' "$1" | sort -t "$(printf '\t')" -k2,2n -k3,3n -k4,4n |
	awk -F '\t' '{
		n = split($7, kv, ";")
		delete f
		for (i = 1; i <= n; i++) { split(kv[i], p, "="); f[p[1]] = p[2] }
		cpu = $2 " " $3
		if (kv[1] == "compact") {
			f["prev_pid"] = next_pid[cpu]
			f["prev_comm"] = next_comm[cpu]
		}
		print $2, $3, $4, f["prev_pid"], f["prev_state"], f["prev_comm"], f["next_pid"], f["next_comm"]
		next_pid[cpu] = f["next_pid"]
		next_comm[cpu] = f["next_comm"]
	}'
}

# The switches chain on each CPU, but for a rename. A waking goes compact
# when its CPU's task runs it, else stays typed.
test_perfetto_compact()
{
	local ev=$WORK/compact.events

	{ sched_host_start
	  sched 0 60 qemu 1000 0 vcpu0 1001
	  run 1001 0 100 200
	  echo "0 250 1001 sched:sched_waking comm=worker pid=10 prio=120 target_cpu=1"
	  sched 0 300 vcpu0 1001 2 worker 10
	  sched 0 310 worker 10 1 vcpu0 1001
	  sched 0 320 renamed 1001 0 init 1
	  sched 0 330 init 1 64 worker 10
	  sched 1 60 init 1 0 worker 10
	  echo "1 65 10 sched:sched_waking comm=init pid=1 prio=120 target_cpu=1"
	  echo "1 66 1 sched:sched_waking comm=qemu pid=1000 prio=120 target_cpu=0"
	  sched 1 70 worker 10 1 init 1; } | mktrace compact-host
	{ echo "comm 1 init"; echo "comm 7 kworker"
	  sched 0 220 init 1 2 kworker 7
	  sched 0 230 kworker 7 1 init 1
	  sched 0 240 init 1 0 kworker 7; } | mktrace compact-guest
	perfetto compact -H "$WORK/compact-host.dat" -g g="$WORK/compact-guest.dat@1000" &&
		compact_switches "$ev" >"$WORK/compact.switches" &&
		printf '%s\n' '0 0 50000 10 1 worker 1000 qemu' '0 0 60000 1000 0 qemu 1001 vcpu0' \
			'0 0 300000 1001 2 vcpu0 10 worker' '0 0 310000 10 1 worker 1001 vcpu0' \
			'0 0 320000 1001 0 renamed 1 init' '0 0 330000 1 64 init 10 worker' \
			'0 1 60000 1 0 init 10 worker' '0 1 70000 10 1 worker 1 init' \
			'1 0 120000 1 2 init 7 kworker' '1 0 130000 7 1 kworker 1 init' \
			'1 0 140000 1 0 init 7 kworker' >"$WORK/compact.expected" &&
		{ diff "$WORK/compact.expected" "$WORK/compact.switches" >/dev/null ||
		  { diff "$WORK/compact.expected" "$WORK/compact.switches" | sed 's/^/# /'; false; }; } &&
		[ "$(grep -c "	sched_switch	compact;" "$ev")" = 7 ] &&
		expect_lines 'ftrace\t0\t0\t250000\t\tsched_waking\tcompact;comm=worker;pid=10;prio=120;target_cpu=1' \
			'ftrace\t0\t1\t65000\t\tsched_waking\tcompact;comm=init;pid=1;prio=120;target_cpu=1' \
			'ftrace\t0\t1\t66000\t1\tsched_waking\tcomm=qemu;pid=1000;prio=120;target_cpu=0' <"$ev" &&
		pftrace_check "$WORK/compact.pftrace" --names >/dev/null
	tap_result $? "Perfetto: chained sched_switches go compact and decode back to pid, prev_state, comm; a CPU's first and a renamed task's stay typed; wakings likewise"
}

# The self-described kvm_entry and kvm_exit, each description decoded as
# Google's DescriptorProto (libprotobuf-dev's descriptor.proto).
test_perfetto_described()
{
	local decoded=$WORK/vms.decoded id group escaped

	pftrace_text "$WORK/vms.pftrace" >"$decoded" &&
	awk '/^  ftrace_events \{/ { b = 1; entry = ex = de = dx = 0 }
	     b && /kvm_entry_x86 \{/ { entry = 1 } b && /kvm_exit_x86 \{/ { ex = 1 }
	     b && /field_id: 65536$/ { de = 1 } b && /field_id: 65537$/ { dx = 1 }
	     b && /^  \}$/ { b = 0; n += entry + ex; if (entry > de || ex > dx) bad++ }
	     END { exit bad || !n }' "$decoded" &&
	awk '/generic_event_descriptors \{/ { d = 1; next }
	     d && /field_id:/ { id = $2 } d && /group_name:/ { g = $2 }
	     d && /event_descriptor:/ { sub(/^ *event_descriptor: "/, ""); sub(/"$/, ""); e = $0 }
	     d && /^ *\}$/ { print id "\t" g "\t" e; d = 0 }' "$decoded" | sort -u >"$WORK/vms.descriptors" &&
	while IFS="$(printf '\t')" read -r id group escaped; do
		printf '%s %s ' "$id" "$group"
		# protoc's escapes are printf's: the text, % doubled, as a format.
		# shellcheck disable=SC2059
		printf "$(printf '%s' "$escaped" | sed 's/%/%%/g')" |
			protoc --decode=google.protobuf.DescriptorProto --proto_path=/usr/include \
				google/protobuf/descriptor.proto | tr -d ' \n'
		echo
	done <"$WORK/vms.descriptors" >"$WORK/vms.described" &&
	printf '%s\n' \
		'65536 "kvm" name:"kvm_entry"field{name:"vcpu_id"number:1label:LABEL_OPTIONALtype:TYPE_UINT32}field{name:"rip"number:2label:LABEL_OPTIONALtype:TYPE_FIXED64}field{name:"immediate_exit"number:3label:LABEL_OPTIONALtype:TYPE_UINT32}' \
		'65537 "kvm" name:"kvm_exit"field{name:"exit_reason"number:1label:LABEL_OPTIONALtype:TYPE_UINT32}field{name:"guest_rip"number:2label:LABEL_OPTIONALtype:TYPE_FIXED64}field{name:"isa"number:3label:LABEL_OPTIONALtype:TYPE_UINT32}field{name:"info1"number:4label:LABEL_OPTIONALtype:TYPE_UINT64}field{name:"info2"number:5label:LABEL_OPTIONALtype:TYPE_UINT64}field{name:"intr_info"number:6label:LABEL_OPTIONALtype:TYPE_UINT32}field{name:"error_code"number:7label:LABEL_OPTIONALtype:TYPE_UINT32}field{name:"vcpu_id"number:8label:LABEL_OPTIONALtype:TYPE_UINT32}' \
		>"$WORK/vms.expected-described" &&
	{ diff "$WORK/vms.expected-described" "$WORK/vms.described" >/dev/null ||
	  { diff "$WORK/vms.expected-described" "$WORK/vms.described" | sed 's/^/# /'; false; }; }
	tap_result $? "Perfetto: every bundle with an x86 kvm_entry or kvm_exit describes it; the DescriptorProto names the event, its fields and their types"
}

# report_guest_times SYNC_DIR HOST GUEST: the guest events' times in
# trace-cmd report of the --sync-out copies of HOST and GUEST. mktrace's
# files print in seconds: -t gives all nine digits, so the dot goes.
report_guest_times()
{
	trace-cmd report -N -t -i "$1/$2.dat" -i "$1/$3.dat" 2>/dev/null |
		sed -n "s/^ *$3\.dat:.*\] *\([0-9]*\)\.\([0-9]*\): print: .*/\1\2/p" |
		sed 's/^0*//' | tr '\n' ' '
}

# fixed_offset_sync NAME OFFSET TSC: VMM 1000's vCPU 0, OFFSET from host 1
# on, runs 50..200; its guest marks x at TSC; merged into WORK/sync-NAME.
fixed_offset_sync()
{
	{ echo "comm 1000 qemu"
	  tsc_offset 1000 1 0 "$2" "$2"
	  run 1000 0 50 200; } | mktrace "$1-host"
	mark 0 "$3" x | mktrace "$1-guest"
	merge "sync-$1" -H "$WORK/$1-host.dat" -g "$WORK/$1-guest.dat" -S "$WORK/sync-$1"
}

# The copies of the step and the scaling pairs, read back by trace-cmd.
test_sync_out()
{
	local times want="250 450 /4000000000000000 4000000000000001 /150 550 /350 "

	merge sync-step "${STEP[@]}" -S "$WORK/sync" &&
		merge sync-intel -H "$WORK/intel-host.dat" -g "$WORK/intel-guest.dat" -S "$WORK/sync" &&
		merge sync-l2 -H "$WORK/l2-host.dat" -g l1="$WORK/l2-l1guest.dat" \
			-g l2="$WORK/l2-l2guest.dat@1000,l2" -S "$WORK/sync-l2"
	times="$(report_guest_times "$WORK/sync" step-host step-guest)/$(report_guest_times "$WORK/sync" intel-host intel-guest)"
	times="$times/$(report_guest_times "$WORK/sync-l2" l2-host l2-l1guest)/$(report_guest_times "$WORK/sync-l2" l2-host l2-l2guest)"
	[ "$STATUS" = 0 ] && [ "$times" = "$want" ] ||
		{ echo "# guest times in trace-cmd report of the copies: '$times', expected '$want'; $ERR"; false; }
	tap_result $? "--sync-out: trace-cmd report puts stepped, scaled and nested guest events at their exact host times"
	merge sync-again "${STEP[@]}" -S "$WORK/sync"
	expect_error "step-host.dat: exists; --force replaces it" &&
		merge sync-self "${STEP[@]}" -S "$WORK" -f &&
		expect_refused "--sync-out names $WORK/step-host.dat, which is the host trace (-H): refused, nothing written" &&
		[ "$(find "$WORK/sync" -mindepth 1 -maxdepth 1 | wc -l)" = 4 ]
	tap_result $? "--sync-out refuses an existing output and its own input by name; writes nothing"
	# The copies carry a GUEST option and a TIME_SHIFT, as trace-cmd's agent
	# writes them; the shift is measured exactly: 0 ticks off.
	merge sync-twice -H "$WORK/sync/step-host.dat" -g "$WORK/sync/step-guest.dat" -S "$WORK/sync2" &&
		expect 0 "250 step-guest:0 print: 0x0: before" "450 step-guest:0 print: 0x0: after" &&
		grep -q "trace-cmd's time sync (TIME_SHIFT) puts its 2 guest events up to 0 host TSC ticks from their exact host time" \
			"$WORK/sync-twice.summary" &&
		[ "$(report_guest_times "$WORK/sync2" step-host step-guest)" = "250 450 " ]
	tap_result $? "--sync-out copies as input: tied by the GUEST option, their TIME_SHIFT measured and replaced, not stacked"
	test_bad_guest_option
	# Offset 2^63: guest 2^63 + 100 is host 100, but trace-cmd sorts
	# sample times as signed numbers.
	fixed_offset_sync big 0x8000000000000000 9223372036854775908
	expect_error "big-guest.dat: CPU 0 (vCPU 0 of VM @1000.1): 1 events between guest TSC 9223372036854775908 and 9223372036854775908 .*above 2^63 - 1" &&
		[ -z "$(ls -A "$WORK/sync-big")" ]
	tap_result $? "--sync-out names the file, CPU and guest TSC range trace-cmd cannot place, and writes nothing"
	# Offset 2^63 - 1 + 100: guest 2^63 - 1 is host 2^64 - 100 + ... placed
	# exactly by a sample one tick before it.
	fixed_offset_sync max 0x7fffffffffffff9b 9223372036854775807
	expect 0 "100 max-guest:0 print: 0x0: x" &&
		[ "$(report_guest_times "$WORK/sync-max" max-host max-guest)" = "100 " ]
	tap_result $? "--sync-out places a guest TSC of exactly 2^63 - 1"
}

# The nested pair's host with only its nested guest: a GUEST option for it
# would claim the L1 vCPU thread 1001 for a VM of its own.
test_sync_nested()
{
	merge sync-l2only -H "$WORK/l2-host.dat" -g l2="$WORK/l2-l2guest.dat@1000,l2" \
		-S "$WORK/sync-l2only"
	expect 0 "350 l2:0 print: 0x0: inner" &&
		[ "$(report_guest_times "$WORK/sync-l2only" l2-host l2-l2guest)" = "350 " ] &&
		merge_again sync-l2only-again -H "$WORK/sync-l2only/l2-host.dat" \
			-g l2="$WORK/sync-l2only/l2-l2guest.dat@1000,l2"
	tap_result $? "--sync-out: a nested guest's copy gets no GUEST option; trace-cmd places its event, and merged again with @PID,l2, the same timeline"
	# The L1 guest's GUEST option names thread 1001, which the clone
	# events put in process 1000.
	merge sync-l1l2 -H "$WORK/l2-host.dat" -g l1="$WORK/l2-l1guest.dat" \
		-g l2="$WORK/l2-l2guest.dat@1000,l2" -S "$WORK/sync-l1l2"
	expect 0 "350 l2:0 print: 0x0: inner" &&
		merge_again sync-l1l2-again -H "$WORK/sync-l1l2/l2-host.dat" -g l1="$WORK/sync-l1l2/l2-l1guest.dat" \
			-g l2="$WORK/sync-l1l2/l2-l2guest.dat@1000,l2" &&
		grep -q "^VM @1000.1 (qemu)" "$WORK/sync-l1l2-again.summary"
	tap_result $? "--sync-out: an L1 guest's GUEST option gives way to the clone events; its L2 guest merges again with @PID,l2"
}

# The real trace-cmd record -A pair: its VMX guest runs at half the host's
# TSC rate, and no host event says so (the recording began while the VM
# ran): the merge takes the multiplier from the agent's first TIME_SHIFT
# sample, which the guest's copy keeps, before its events. trace-cmd report
# puts the first guest event where the merge does: host TSC 51899368196
# through the host's TSC2NSEC (613566932 >> 31) is 14.828395152 s.
test_sync_agent()
{
	local real=$FUZZ_SRC/seeds/real host=agent-host-vmx-v7-zstd guest=agent-guest-vmx-v7-zstd
	local dir=$WORK/sync-agent first

	merge sync-agent -H "$real/host/$host.dat" -g "$real/guest/$guest.dat" -S "$dir"
	first=$(trace-cmd report -N -t -i "$dir/$host.dat" -i "$dir/$guest.dat" 2>/dev/null |
		sed -n "s/^ *$guest\.dat:.*\] *\([0-9.]*\): .*/\1/p" | sort -n | head -1)
	expect 0 "51899368196 $guest:1 sched_switch: prev_comm=trace-cmd prev_pid=61 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120" &&
		[ "$first" = 14.828395152 ] &&
		merge_again sync-agent-again -H "$dir/$host.dat" -g "$dir/$guest.dat"
	tap_result $? "--sync-out of a trace-cmd agent pair whose multiplier only its TIME_SHIFT gives: trace-cmd places the guest's first event where the merge does ($first s), and merged again, the same timeline"
	# Offset -150: a guest event at TSC 0, host 150. The first copy has
	# no sample to keep; a copy of it has, and no time before that event.
	{ vmm 1000 0x100000000 32 0xffffffffffffff6a 1001; run 1001 0 100 200; } | mktrace zero-host
	mark 0 0 zero | mktrace zero-guest
	merge sync-zero -H "$WORK/zero-host.dat" -g "$WORK/zero-guest.dat" -S "$WORK/sync-zero" &&
		expect 0 "150 zero-guest:0 print: 0x0: zero" &&
		merge sync-zero-again -H "$WORK/sync-zero/zero-host.dat" -g "$WORK/sync-zero/zero-guest.dat" \
			-S "$WORK/sync-zero-again"
	expect_error "^$WORK/sync-zero/zero-guest.dat: CPU 0 (vCPU 0 of VM @[0-9.]*): an event at guest TSC 0 leaves no time before it for the first sample of trace-cmd's time sync, which its --sync-out copy keeps$" &&
		[ -z "$(ls -A "$WORK/sync-zero-again")" ]
	tap_result $? "--sync-out refuses a guest event at TSC 0 when the input's time sync sample must go before it, naming file and CPU; writes nothing"
}

# trace_id_at FILE: the offset of the id of FILE's last TRACEID option
# (u16 id 11, u32 size 8, then the id).
trace_id_at()
{
	echo $(($(grep -obUaP '\x0b\x00\x08\x00\x00\x00' "$1" | tail -1 | cut -d: -f1) + 6))
}

# put_u32 FILE OFFSET VALUE: overwrite 4 bytes, little-endian.
put_u32()
{
	# shellcheck disable=SC2059 # the format is the four bytes, as octal escapes
	printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($3 & 255)) $(($3 >> 8 & 255)) \
		$(($3 >> 16 & 255)) $(($3 >> 24 & 255)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# The synced host copy's GUEST option naming a thread the host data never
# runs; a guest of two CPUs given the trace id of that option's guest of one.
test_bad_guest_option()
{
	local name_at

	cp "$WORK/sync/step-host.dat" "$WORK/badtid-host.dat"
	# GUEST: "step-guest\0", u64 trace id, u32 CPUs (1), u32 cpu, u32 tid.
	name_at=$(grep -obUa 'step-guest' "$WORK/sync/step-host.dat" | tail -1 | cut -d: -f1)
	put_u32 "$WORK/badtid-host.dat" $((name_at + 11 + 8 + 4 + 4)) 4242
	merge badtid -H "$WORK/badtid-host.dat" -g "$WORK/sync/step-guest.dat" -o "$WORK/badtid.txt"
	expect_one_error "badtid-host.dat: its GUEST option 'step-guest' says host thread 4242 runs CPU 0 of .*step-guest.dat, but the host data has no kvm_entry of that thread" &&
		[ ! -e "$WORK/badtid.txt" ]
	tap_result $? "a GUEST option naming a thread the host data lacks: one line naming file and thread, exit 1, nothing written"
	{ echo "cpus 2"; mark 0 150 x; } | mktrace two-guest
	merge two-sync -H "$WORK/step-host.dat" -g "$WORK/two-guest.dat@1000" -S "$WORK/sync-two"
	# The guest's trace id takes the GUEST option's.
	dd if="$WORK/sync/step-host.dat" bs=1 skip=$((name_at + 11)) count=8 status=none |
		dd of="$WORK/sync-two/two-guest.dat" bs=1 seek="$(trace_id_at "$WORK/sync-two/two-guest.dat")" \
			conv=notrunc status=none
	merge badcpus -H "$WORK/sync/step-host.dat" -g "$WORK/sync-two/two-guest.dat" -o "$WORK/badcpus.txt"
	expect_one_error "two-guest.dat: has 2 CPUs, but .*step-host.dat's GUEST option 'step-guest' (trace id 0x[0-9a-f]*) names 1" &&
		[ ! -e "$WORK/badcpus.txt" ]
	tap_result $? "a guest whose CPU count differs from the GUEST option's: one line naming both files and counts, exit 1, nothing written"
}

# Two guests with one trace id, as two copies of one agent would have:
# the synced copy of test_merges' VM guest a, and guest b's given a's id.
test_sync_trace_ids()
{
	merge ids-first -H "$WORK/vms-host.dat" -g a="$WORK/vms-a.dat@1000" \
		-g b="$WORK/vms-b.dat@2000" -S "$WORK/sync-ids-first"
	cp "$WORK/sync-ids-first/vms-b.dat" "$WORK/ids-b.dat"
	dd if="$WORK/sync-ids-first/vms-a.dat" bs=1 skip="$(trace_id_at "$WORK/sync-ids-first/vms-a.dat")" \
		count=8 status=none |
		dd of="$WORK/ids-b.dat" bs=1 seek="$(trace_id_at "$WORK/ids-b.dat")" conv=notrunc status=none
	merge ids -H "$WORK/vms-host.dat" -g a="$WORK/sync-ids-first/vms-a.dat@1000" \
		-g b="$WORK/ids-b.dat@2000" -S "$WORK/sync-ids"
	expect 0 "150 a:0 print: 0x0: a0" "450 b:1 print: 0x0: b1" &&
		grep -qx "warning: $WORK/ids-b.dat: has the trace id 0x[0-9a-f]* of $WORK/sync-ids-first/vms-a.dat; its --sync-out copy gets 0x[0-9a-f]*, so that trace-cmd and KernelShark tell the two apart" <<<"$ERR" &&
		[ "$(grep -c . <<<"$ERR")" = 1 ] &&
		merge_again ids-again -H "$WORK/sync-ids/vms-host.dat" -g a="$WORK/sync-ids/vms-a.dat" \
			-g b="$WORK/sync-ids/ids-b.dat"
	tap_result $? "--sync-out: two guests with one trace id get copies with ids of their own, said in one line; merged again without @PID, the same timeline"
}

# test_bad_guest_option's host, its GUEST option naming thread 4242, with
# its guest tied by @PID: the copy adds the right option after the bad one;
# libtracecmd takes the last.
test_sync_last_guest_option()
{
	merge lastopt -H "$WORK/badtid-host.dat" -g "$WORK/sync/step-guest.dat@1000" \
		-S "$WORK/sync-lastopt" &&
		merge lastopt-again -H "$WORK/sync-lastopt/badtid-host.dat" \
			-g "$WORK/sync-lastopt/step-guest.dat" &&
		expect 0 "250 step-guest:0 print: 0x0: before" "450 step-guest:0 print: 0x0: after"
	tap_result $? "--sync-out copies of a host with a wrong GUEST option: read back without @PID, the copy's own, the last, ties the guest"
}

# One host thread, 1001, runs vCPUs 0-2 in turn, as the selftest VMMs and
# tsc_guest_demo do: trace-cmd's GUEST option cannot say that.
test_sync_shared_thread()
{
	local id

	{ echo "comm 1000 qemu"
	  echo "0 1 1 task:task_newtask pid=1000 comm=qemu clone_flags=0x1200011"
	  echo "comm 1001 vcpus"
	  echo "0 2 1000 task:task_newtask pid=1001 comm=vcpus clone_flags=0x3d0f00"
	  for id in 0 1 2; do
		tsc_multiplier 1001 $((3 + 2 * id)) "$id" 0x100000000 32
		tsc_offset 1001 $((4 + 2 * id)) "$id" 0 1000
	  done
	  run 1001 0 100 200; run 1001 1 300 400; run 1001 2 500 600; } | mktrace onethread-host
	{ echo "cpus 3"; mark 0 1150 a; mark 1 1350 b; mark 2 1550 c; } | mktrace onethread-guest
	merge onethread -H "$WORK/onethread-host.dat" -g "$WORK/onethread-guest.dat" \
		-S "$WORK/sync-onethread"
	expect 0 "150 onethread-guest:0 print: 0x0: a" "350 onethread-guest:1 print: 0x0: b" \
		"550 onethread-guest:2 print: 0x0: c" &&
		[ "$ERR" = "warning: $WORK/onethread-guest.dat: its --sync-out copy gets no GUEST option: host thread 1001 runs its CPUs 0,1,2, and the option gives each CPU a thread of its own; the TIME_SHIFT still places its events" ] &&
		[ "$(report_guest_times "$WORK/sync-onethread" onethread-host onethread-guest)" = "150 350 550 " ] &&
		merge_again onethread-again -H "$WORK/sync-onethread/onethread-host.dat" \
			-g "$WORK/sync-onethread/onethread-guest.dat"
	tap_result $? "--sync-out: a host thread running several vCPUs gets no GUEST option, said in one line; trace-cmd places the events, and merged again without @PID, the same timeline"
}

# record-host.sh started while the VM ran: no clone event, no offset event
# before the guest's events. Thread 1001 ran before the snapshot came.
test_snapshot()
{
	{ echo "comm 1001 vcpu0"; echo "comm 1002 vcpu1"; echo "comm 1000 qemu"
	  run 1001 0 100 200
	  snapshot_line 210 "tsc_khz=2000000"
	  snapshot_line 211 "vm=1000-12 pid=1000 vcpu=0 tid=1001 tsc_offset=-50"
	  snapshot_line 212 "vm=1000-12 pid=1000 vcpu=1 tid=1002 tsc_offset=700"
	  snapshot_line 213 "end vms=1 vcpus=2"
	  run 1002 1 300 400
	  tsc_offset 1002 410 1 700 9000
	  run 1002 1 500 600; } | mktrace snap-host
	{ mark 0 100 a; mark 1 1050 b; mark 1 9550 c; } | mktrace snap-guest
	merge snap -H "$WORK/snap-host.dat" -g g="$WORK/snap-guest.dat" -j "$WORK/snap.json"
	expect 0 "150 g:0 print: 0x0: a" "350 g:1 print: 0x0: b" "550 g:1 print: 0x0: c" &&
		grep -q "^VM @1000.1 (qemu), 2 vCPUs ran" "$WORK/snap.summary" && [ -s "$WORK/snap.json" ]
	tap_result $? "a recording started while the VM ran: the snapshot ties the vCPU threads and gives their offsets and -k"
	{ echo "comm 1002 vcpu1"
	  snapshot_line 212 "vm=1000-12 pid=1000 vcpu=1 tid=1002 tsc_offset=700"
	  run 1002 1 300 400
	  tsc_offset 1002 410 1 800 9000
	  run 1002 1 500 600; } | mktrace snapbad-host
	{ mark 1 1150 b; } | mktrace snapbad-guest
	merge snapbad -H "$WORK/snapbad-host.dat" -g g="$WORK/snapbad-guest.dat@1000"
	expect 0 "350 g:1 print: 0x0: b" &&
		grep -q "warning: vCPU 1 of VM @1000: the snapshot says offset 0x2bc, the event at host TSC 410 says 0x320; the event's value is used" <<<"$ERR"
	tap_result $? "a snapshot and a later event disagree: a warning names both values, the event wins"
	snapshot_line 5 "vm=1-2 pid=x vcpu=0 tid=3 tsc_offset=1" | mktrace snapjunk-host
	merge snapjunk -H "$WORK/snapjunk-host.dat" -g "$WORK/step-guest.dat"
	expect_error "snapjunk-host.dat: the snapshot line at host TSC 5 does not parse: 'kvm-tsc-snapshot vm=1-2 pid=x"
	tap_result $? "a damaged snapshot line is refused with the file, time and line"
}

# A kernel without the series: tests/tracefs without kvm_write_tsc_multiplier
# and kvm_nested_tsc_offset, in $WORK/stock-tracefs.
stock_formats()
{
	cp -r "$FORMATS" "$WORK/stock-tracefs"
	rm -r "$WORK/stock-tracefs/events/kvm/kvm_write_tsc_multiplier" \
		"$WORK/stock-tracefs/events/kvm/kvm_nested_tsc_offset"
}

# stock_host NAME: a stock kernel's host trace where VMM 1000 creates vCPU 0
# (thread 1001) during the recording with offset 100 and runs it, then the
# spec on stdin.
stock_host()
{
	{ echo "comm 1000 qemu"; echo "comm 1001 vcpu0"
	  echo "0 1 1 task:task_newtask pid=1000 comm=qemu clone_flags=0x1200011"
	  echo "0 2 1000 task:task_newtask pid=1001 comm=vcpu0 clone_flags=0x3d0f00"
	  tsc_offset 1001 3 0 0 100
	  run 1001 0 100 200
	  cat; } | "$MKTRACE" -t "$WORK/stock-tracefs" -o "$WORK/$1.dat" - || echo "# mktrace failed for $1"
}

# VMM 1000's vCPU 0 runs at half the host's rate (AMD's 32 frac bits):
# guest TSC 175 is host TSC 150.
test_stock_host()
{
	local half="tsc_scaling_ratio=2147483648 tsc_scaling_ratio_frac_bits=32"

	stock_formats
	mark 0 175 a | mktrace stock-guest
	{ snapshot_line 300 "vm=1000-12 pid=1000 vcpu=0 tid=1001 tsc_offset=100 $half"
	  snapshot_line 301 "end vms=1 vcpus=1"; } | stock_host stock-end-host
	merge stock-end -H "$WORK/stock-end-host.dat" -g g="$WORK/stock-guest.dat"
	expect 0 "150 g:0 print: 0x0: a"
	tap_result $? "no multiplier event: the snapshot record-host.sh stop writes gives a vCPU created during the recording its half rate"
	{ snapshot_line 300 "vm=900-12 pid=900 vcpu=0 tid=901 tsc_offset=0 $half"
	  snapshot_line 301 "end vms=1 vcpus=1"; } | stock_host stock-untold-host
	merge stock-untold -H "$WORK/stock-untold-host.dat" -g g="$WORK/stock-guest.dat"
	expect_error "stock-untold-host.dat: nothing tells the TSC multiplier of vCPU 0 of VM @1000.1: this kernel has no kvm_write_tsc_multiplier" &&
		grep -q "make kvm-modules" <<<"$ERR"
	tap_result $? "no multiplier event and no snapshot of a vCPU on a host that scales: an error naming the vCPU and what to record, not 1.0"
	{ snapshot_line 300 "vm=1000-12 pid=1000 vcpu=0 tid=1001 tsc_offset=100"
	  snapshot_line 301 "end vms=1 vcpus=1"; } | stock_host stock-unscaled-host
	mark 0 250 a | mktrace stock-unscaled-guest
	merge stock-unscaled -H "$WORK/stock-unscaled-host.dat" -g g="$WORK/stock-unscaled-guest.dat"
	expect 0 "150 g:0 print: 0x0: a"
	tap_result $? "no multiplier event, a snapshot without the scaling files: KVM has no TSC scaling, every vCPU at 1.0"
	snapshot_line 300 "end vms=0 vcpus=0 tsc_scaling=0" | stock_host stock-noscale-host
	merge stock-noscale -H "$WORK/stock-noscale-host.dat" -g g="$WORK/stock-unscaled-guest.dat"
	expect 0 "150 g:0 print: 0x0: a"
	tap_result $? "no multiplier event, a snapshot of no VM whose end line says tsc_scaling=0: every vCPU at 1.0"
}

main()
{
	local t unit_plan

	tap_header
	[ -x "$MERGE" ] && [ -x "$MKTRACE" ] && [ -x "$UNIT" ] && [ -x "$ITERATE" ] && [ -x "$PFTRACE_CHECK" ] ||
		tap_skip_all "$MERGE, $MKTRACE, $UNIT, $ITERATE or $PFTRACE_CHECK not built: run 'make tools'"
	command -v jq >/dev/null && command -v protoc >/dev/null ||
		tap_skip_all "jq or protoc missing: run scripts/build/deps.sh"
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
	# The step pair of test_merges, which most tests after it merge.
	STEP=(-H "$WORK/step-host.dat" -g "$WORK/step-guest.dat")
	"$UNIT" >"$WORK/unit.tap"
	unit_plan=$(sed -n 's/^1\.\.//p' "$WORK/unit.tap")
	[ -n "$unit_plan" ] || tap_bail "$UNIT printed no plan"
	tap_plan $((86 + unit_plan))
	for t in test_merges test_no_damage \
		 test_vm_created_again test_tid_reused test_nested_errors test_json \
		 test_perfetto test_perfetto_ftrace test_perfetto_compact test_perfetto_described test_perfetto_real test_perfetto_machines test_perfetto_back_in_time test_sync_out test_outputs_kept test_sync_all_or_nothing test_sync_trace_ids test_sync_shared_thread test_sync_last_guest_option test_sync_nested test_sync_agent \
		 test_outputs_refused test_no_events test_snapshot test_stock_host test_unseen_host_events \
		 test_progress; do
		"$t"
	done
	tap_import <"$WORK/unit.tap"
	tap_finished
}

main "$@"
