#!/bin/bash
# merge-e2e-test.sh: KTAP test of kvm-tsc-merge on real host + nested-guest trace pairs recorded in the test VM the ways users record them: every guest marker must land right before its own port exit.
#
# usage: merge-e2e-test.sh [--vmm qemu|bochs] [--dir DIR] [--no-vm]
#                          [--l2-tsc-khz KHZ] [--n-tsc-khz KHZ] [--modes "MODE..."]
#
# Boots the test VM with one CPU and what nested-root.sh puts in under
# --vmm (default qemu) in --dir (default build/vmtest-e2e) and runs
# scripts/guest/vm-nested-trace.sh there (a second boot if a nested guest
# failed or the test VM was stopped) with MODES (default
# "own agent late"), one nested guest each, one after the other:
#
#   own    record-host.sh started before the guest boots, the guest tracing
#          itself with x86-tsc: own/host.dat, own/guest.dat
#   agent  trace-cmd's guest workflow, started once the guest has booted:
#          trace-cmd agent in the guest, `trace-cmd record ... -A l2@CID
#          ...` on the host with trace-cmd's default clock (tsc2nsec),
#          trace-cmd's trace.dat and trace-l2.dat as agent/agent-host.dat,
#          agent/agent-guest.dat
#   late   record-host.sh started once the guest has booted, the guest
#          tracing itself: late/late-host.dat, late/late-guest.dat
#   nested as own, but the guest (G, one vCPU) runs a KVM guest of its own
#          (N, tsc_nested_payload's), whose rdtsc before each ucall port
#          exit G writes into its trace: nested/host.dat, nested/guest.dat.
#          Checked as its own list: N's markers in G's trace, the ucall
#          port exits in H's trace and in G's, N's multiplier in G's,
#          kvm_nested_tsc_offset in H's, G's kvm_write_tsc_offset for N's
#          jump; N's markers as an L2 trace (mktrace) merged through
#          kvm_nested_tsc_offset, each right before its port exit, and the
#          same host TSC through G's TSC (G's trace, then H's)
#   linux-n as nested, but N is a Linux guest tracing itself, booted by G
#          with vm-nested-trace.sh's mode own (nested-root.sh --linux,
#          and an hour): linux-n/host.dat, and G's run in linux-n/in-l2/:
#          host.dat (G's trace), guest.dat (N's). Checked as nested, with
#          N's own trace, whose markers come before and after N's TSC jump,
#          and G's debugfs offset of N before it. Not in the default MODES:
#          N's boot alone takes minutes
#
# --no-vm checks the files of the previous run in DIR/export instead.
# --l2-tsc-khz runs the nested guest's TSC at KHZ through TSC scaling
# (--vmm bochs: TCG has none), and the own run's host trace
# must show L2's vCPUs at that multiplier; --n-tsc-khz runs mode nested's
# N at KHZ the same way, through the nested guest's TSC scaling.
#
# For each mode it checks the raw traces with trace-cmd: the guest's markers
# ("ktt-marker before|after cpu=N seq=K"), each followed at once by a byte
# to the marker port, so on the host the next kvm_exit of vCPU N with reason
# io and that port in info1 bits 31:16 is that marker's own; one such exit
# per marker; the guest's TSC write as kvm_write_tsc_offset from the offset
# debugfs showed. It shows as TAP diagnostics where trace-cmd's own merge
# puts the markers against their port exits: for own and late, trace-cmd
# report with one --ts-offset from KVM's debugfs; for agent, trace-cmd
# report on the two files as trace-cmd wrote them (their TIME_SHIFT, in
# ns). Then, when build/tools/kvm-tsc-merge exists, it merges each pair
#
#     kvm-tsc-merge --host HOST.dat --guest l2=GUEST.dat \
#         --fields time,source,event,info --summary SUMMARY.txt >TIMELINE.txt
#
# (in DIR/merge/MODE/) and checks the timeline: one line per event,
# "<host tsc> <source> <event>: <info>", source "host" or "l2:<vcpu>" with a
# "!" when the event fell outside a run interval of its vCPU thread; a
# correct timeline alternates marker, port exit, marker, port exit on every
# vCPU, before and after the guest's TSC jump alike. Last it writes
# --sync-out copies of the pair (merge/MODE/sync/) and checks them with
# trace-cmd report (every host and guest event at the timeline's host TSC,
# in its order; in ns through the copies' TSC2NSEC when they have one) and
# with libkshark (build/tools/kshark-times: the guest stream at those
# times); for own, it also decodes its Perfetto trace (-p) with protoc to
# find the guest's events at the timeline's host nanoseconds. Exit status:
# 0 all passed, 1 a failure, 4 skipped.

set -u

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly MERGE=$BUILD_DIR/tools/kvm-tsc-merge
readonly USAGE="usage: ${0##*/} [--vmm qemu|bochs] [--dir DIR] [--no-vm] [--l2-tsc-khz KHZ] [--n-tsc-khz KHZ] [--modes \"MODE...\"]"
readonly KSHARK_TIMES=$BUILD_DIR/tools/kshark-times
readonly PROTO_DIR=$TOP_DIR/tools/tsc-merge/proto
readonly PFTRACE_EVENTS=$TOP_DIR/tools/tsc-merge/tests/pftrace-events.awk
readonly PFTRACE_CHECK=$TOP_DIR/tools/tsc-merge/tests/pftrace-check.awk
readonly ATTEMPTS=2
readonly MKTRACE=$BUILD_DIR/tools/mktrace
readonly MKTRACE_FORMATS=$TOP_DIR/tools/tsc-merge/tests/tracefs
# A marker of the nested guest's markers program, and of N, the guest of
# the nested guest (tsc_nested_payload), in the timeline (awk regexes).
readonly L2_MARKER_RE='ktt-marker [a-z]+ cpu=[0-9]+ seq=[0-9]+'
readonly N_MARKER_RE='ktt-n-marker cpu=[0-9]+ seq=[0-9]+ tsc=[0-9]+'
# N's markers on G's TSC, in the trace check_chained_conversion writes.
readonly CHAINED_MARKER_RE='chained [a-z-]+ cpu=[0-9]+ seq=[0-9]+'
# libkvm's ucall port, to which N's every marker is a write.
readonly UCALL_PORT_HEX=1000
# The emulator and vmtest.sh's directory, from --vmm and --dir; the nested
# runs' files, the merges and the log of the boots in and beside it.
VMM=qemu
VM_DIR=$BUILD_DIR/vmtest-e2e
EXPORT=
OUT_ROOT=
VM_LOG=
# The nested guest's TSC rate in kHz, when --l2-tsc-khz sets one, and
# mode nested's N's, when --n-tsc-khz does.
L2_TSC_KHZ=
N_TSC_KHZ=
MODES="own agent late"
# check_mode's first pass only counts the checks, for the plan.
PLANNING=
PLANNED=0
# Set when a mode has no trace pair: its checks fail, saying why.
BROKEN=
# The mode's facts, from its l2-info.txt (prepare_mode); for nested and
# linux-n, the vCPUs of N, the nested guest's own guest, and the PID of the
# nested guest's QEMU in the host trace (prepare_nested), and the TSC
# rates of G and N.
CPUS=
N_VCPUS=
N_DAT=
IN_L2=
G_KHZ=
N_KHZ=
VMM_PID=
MARKERS=
JUMP=
PORT_HEX=

# awk: a trace-cmd or timeline timestamp as an integer: raw counts stay as
# they are, "SEC.NSEC" (a clock in ns, printed with -t) becomes ns.
readonly AWK_TS='
	function ts_int(t,   s, f) {
		if (t !~ /\./) return t
		split(t, s, "."); f = s[2]
		while (length(f) < 9) f = f "0"
		t = s[1] substr(f, 1, 9); sub(/^0+/, "", t)
		return t == "" ? 0 : t
	}'

# One line per event of a trace-cmd report (any number of -i files and
# options), as "FILE TS CPU EVENT INFO": FILE is "guest" for lines of a
# file whose name ends in guest.dat, "host" otherwise. -N: the kernel's own
# print formats, as kvm-tsc-merge prints; -t: ns in full where the clock is
# in ns.
report_events()
{
	trace-cmd report -N -t "$@" 2>/dev/null | awk "$AWK_TS"'
		match($0, /\[[0-9]+\] *[0-9]+(\.[0-9]+)?: +[a-z_0-9]+: */) {
			head = substr($0, RSTART, RLENGTH)
			info = substr($0, RSTART + RLENGTH)
			gsub(/\[|\]|:/, " ", head)
			split(head, f, " +")
			file = ($0 ~ /^ *[^ ]*guest\.dat:/) ? "guest" : "host"
			print file, ts_int(f[3]), f[2], f[4], info
		}'
}

# The events of one file as recorded: its raw timestamps (TSC counts for
# x86-tsc and tsc2nsec alike), no time shift.
raw_events()
{
	report_events --raw-ts -i "$1"
}

# "MULT SHIFT" of a trace.dat's TSC2NSEC option (the last one, which
# trace-cmd uses), nothing when it has none.
tsc2nsec_of()
{
	trace-cmd dump --options -i "$1" 2>/dev/null |
		sed -n 's/^\([0-9]*\) \([0-9]*\) [0-9]* \[multiplier, shift, offset\]$/\1 \2/p' | tail -1
}

# "TS SOURCE ..." lines (SOURCE host or guest) with host TSCs, as trace-cmd
# shows them with a TSC2NSEC of host "MULT SHIFT" and guest "MULT SHIFT":
# (tsc * mult) >> shift; an empty pair leaves those lines alone.
tsc_to_shown()
{
	local file=$1 host_ms=$2 guest_ms=$3

	[ -n "$host_ms$guest_ms" ] || { cat "$file"; return; }
	[ -s "$file" ] || return 0
	paste -d' ' <(awk -v h="$host_ms" -v g="$guest_ms" '{
			ms = ($2 == "host") ? h : g
			if (ms == "") { print $1; next }
			split(ms, m, " ")
			print $1 " * " m[1] " / 2^" m[2]
		}' "$file" | BC_LINE_LENGTH=0 bc) <(cut -d' ' -f2- "$file")
}

# One boot of the test VM with what runs the nested guest
# (nested-root.sh), and one CPU: the user guide says why. Bochs, which has
# no 9p, gets the scripts in its initramfs. Mode linux-n needs what the
# nested guest boots N with, and an hour.
run_vm_once()
{
	local timeout=()

	case " $MODES " in *" linux-n "*) timeout=(--timeout 3600) ;; esac
	# shellcheck disable=SC2086
	"$TOP_DIR/scripts/vm/vmtest.sh" --vmm "$VMM" --dir "$VM_DIR" --cpus 1 "${timeout[@]}" \
		--add "$VM_DIR/nested-root" --files "scripts tools/record-host" -- \
		${N_TSC_KHZ:+KTT_N_TSC_KHZ=$N_TSC_KHZ} sh scripts/guest/vm-nested-trace.sh 2 $L2_TSC_KHZ $MODES \
		>"$VM_LOG" 2>&1
}

# Run the nested payload: status 0, or 4 with its "# SKIP" reason. A run
# that fails inside a nested guest, or a test VM killed at vmtest.sh's timeout
# (the last step line names where it stopped), is tried again, up to
# ATTEMPTS boots, each failure shown: under emulation a nested guest can
# crash, stall or never finish booting for reasons that are the
# emulator's, not the merge's.
run_vm()
{
	local attempt=1 status linux=()

	case " $MODES " in *" linux-n "*) linux=(--linux) ;; esac
	"$TOP_DIR/scripts/vm/nested-root.sh" "${linux[@]}" "$VM_DIR/nested-root" 2>&1 | sed 's/^/# /'
	[ "${PIPESTATUS[0]}" = 0 ] || return 1
	while :; do
		run_vm_once
		status=$?
		sed 's/^/# /' "$VM_LOG"
		[ "$status" = 4 ] && { ktap_skip_all "$(sed -n 's/^# SKIP //p' "$VM_LOG" | head -1)"; exit "$KSFT_SKIP"; }
		[ "$status" = 0 ] && return 0
		[ "$attempt" -lt "$ATTEMPTS" ] || return "$status"
		if grep -q "step 'l2-\(boot\|run\|exit\)' failed" "$VM_LOG"; then
			echo "# attempt $attempt failed in a nested guest; its console: $(cat "$EXPORT"/*/l2-console.log 2>/dev/null |
				grep -E -m1 'BUG|Oops|Kernel panic' || echo 'no BUG or Oops')"
		elif grep -q 'the VM did not finish within\|the VM printed nothing for' "$VM_LOG"; then
			echo "# attempt $attempt: $(grep -o 'the VM \(did not finish within\|printed nothing for\) [0-9]*s' "$VM_LOG" | tail -1), at '$(grep '^# [a-z]*: [0-9.]* s: ' "$VM_LOG" | tail -1)'"
		else
			return "$status"
		fi
		attempt=$((attempt + 1))
		echo "# attempt $attempt of $ATTEMPTS: booting the test VM again"
	done
}

# The mode's files, as vm-nested-trace.sh exports them; in the modes
# where G runs N, N's trace (N_DAT): built from G's in mode nested
# (prepare_nested), N's own in mode linux-n, beside G's trace in what G's
# run of vm-nested-trace.sh exported (IN_L2).
use_mode()
{
	MODE=$1
	MODE_DIR=$EXPORT/$MODE
	OUT=$OUT_ROOT/$MODE
	IN_L2=$MODE_DIR/in-l2
	case $MODE in
	own | nested) HOST_DAT=$MODE_DIR/host.dat GUEST_DAT=$MODE_DIR/guest.dat ;;
	linux-n) HOST_DAT=$MODE_DIR/host.dat GUEST_DAT=$IN_L2/host.dat ;;
	*) HOST_DAT=$MODE_DIR/$MODE-host.dat GUEST_DAT=$MODE_DIR/$MODE-guest.dat ;;
	esac
	case $MODE in
	nested) N_DAT=$OUT/N.dat ;;
	linux-n) N_DAT=$IN_L2/guest.dat ;;
	*) N_DAT= ;;
	esac
	INFO=$MODE_DIR/l2-info.txt
	DEBUGFS=$MODE_DIR/debugfs-tsc-offset.txt
	RUN_TXT=$MODE_DIR/nested-run.txt
}

# The mode's runs reported success and left their files: in mode linux-n
# G's run too.
check_exported_mode()
{
	if [ "$MODE" = linux-n ]; then
		check_exported "$MODE_DIR" "$HOST_DAT" && check_exported "$IN_L2" "$GUEST_DAT" "$N_DAT"
	else
		check_exported "$MODE_DIR" "$HOST_DAT" "$GUEST_DAT"
	fi
}

# The run of a level reported success and left its files.
check_exported()
{
	local dir=$1 f rc=0

	shift
	[ "$(cat "$dir/status" 2>/dev/null)" = 0 ] ||
		{ echo "# $dir/status: $(cat "$dir/status" 2>/dev/null || echo missing)"; rc=1; }
	for f in "$@" "$dir/l2-info.txt" "$dir/debugfs-tsc-offset.txt" "$dir/nested-run.txt"; do
		[ -s "$f" ] || { echo "# $f missing or empty"; rc=1; }
	done
	return $rc
}

info_value()
{
	sed -n "s/^$2 //p" "$1"
}

# Markers of the raw guest trace: MARKERS of each KIND ("ktt-marker
# before", "ktt-marker after"; "ktt-n-marker") per CPU.
check_guest_markers()
{
	local events=$1 cpus=$2 markers=$3 cpu kind n all=() rc=0

	shift 3
	for cpu in $(seq 0 $((cpus - 1))); do
		for kind in "$@"; do
			n=$(grep -c "$kind cpu=$cpu seq=" "$events")
			[ "$n" = "$markers" ] && continue
			echo "# ${events##*/}: $n '$kind' markers of cpu $cpu, expected $markers"
			rc=1
		done
	done
	for kind in "$@"; do all+=(-e "$kind cpu="); done
	echo "# ${events##*/}: $(grep -c "${all[@]}" "$events") markers in all"
	return $rc
}

# The host's io exits as "TS X VCPU PORT" lines (PORT: 4 hex digits, bits
# 31:16 of info1 in SVM's and VMX's exit information alike).
io_exits()
{
	awk '
		$4 == "kvm_exit" && / reason (io|IO_INSTRUCTION) / && match($0, /info1 0x[0-9a-f]+/) {
			h = substr($0, RSTART + 8, RLENGTH - 8)
			p = substr(h, length(h) - 7, 4)
			match($0, /vcpu [0-9]+/)
			print $2, "X", substr($0, RSTART + 5, RLENGTH - 5), p
		}' "$1"
}

# HOST_EVENTS' io exits into IO_EXITS; EXPECTED port exits, one per
# marker, on each vCPU.
check_host_port_exits()
{
	local events=$1 io=$2 port=$3 cpus=$4 expected=$5 cpu n rc=0

	io_exits "$events" >"$io"
	for cpu in $(seq 0 $((cpus - 1))); do
		n=$(awk -v c="$cpu" -v p="$port" '$3 == c && $4 == p' "$io" | wc -l)
		echo "# ${events##*/}: $n kvm_exit of vcpu $cpu for port 0x$port"
		[ "$n" = "$expected" ] && continue
		echo "# expected $expected"
		rc=1
	done
	return $rc
}

# Every vCPU's TSC write is a kvm_write_tsc_offset whose next offset is
# about TSC_JUMP after its previous one, which is the one in debugfs unless
# DEBUGFS is empty (no debugfs was read at that level).
check_tsc_write()
{
	local events=$1 debugfs=$2 cpus=$3 jump=$4 cpu line prev next sampled='' delta rc=0

	for cpu in $(seq 0 $((cpus - 1))); do
		[ -z "$debugfs" ] || sampled=$(sed -n "s/^vcpu$cpu //p" "$debugfs")
		line=$(awk -v c="$cpu" '$4 == "kvm_write_tsc_offset" && $5 == "vcpu=" c' "$events" |
			sed -n 's/.* prev=\([0-9]*\) next=\([0-9]*\).*/\1 \2/p' |
			while read -r prev next; do
				# bash arithmetic wraps like the u64 offsets.
				[ $((next - prev)) -gt $((jump / 2)) ] && [ $((next - prev)) -le "$jump" ] && echo "$prev $next"
			done | head -1)
		if [ -z "$line" ]; then
			echo "# ${events##*/}: no kvm_write_tsc_offset of vcpu $cpu moving the offset forward by about $jump"
			rc=1
			continue
		fi
		read -r prev next <<<"$line"
		delta=$((next - prev))
		echo "# vcpu $cpu: kvm_write_tsc_offset prev=$((prev)) next=$((next)) (+$delta)${debugfs:+, debugfs had $sampled}"
		[ -z "$debugfs" ] || [ "$((prev))" = "$sampled" ] && continue
		echo "# vcpu $cpu: the write's previous offset $((prev)) differs from debugfs' $sampled"
		rc=1
	done
	return $rc
}

# Each vCPU's last kvm_write_tsc_multiplier is KVM's ratio for its guest's
# rate: 2^frac_bits * L2 kHz / L1 kHz, rounded down (the default when
# equal). Only a recording from before the guest's vCPUs were created has
# it.
check_l2_multiplier()
{
	local events=$1 l1_khz=$2 l2_khz=$3 cpus=$4 cpu line next frac expected rc=0

	for cpu in $(seq 0 $((cpus - 1))); do
		line=$(awk -v c="$cpu" '$4 == "kvm_write_tsc_multiplier" && $5 == "vcpu=" c' "$events" |
			sed -n 's/.* next=\(0x[0-9a-f]*\|[0-9]*\) frac_bits=\([0-9]*\).*/\1 \2/p' | tail -1)
		if [ -z "$line" ]; then
			echo "# ${events##*/}: no kvm_write_tsc_multiplier of vcpu $cpu"
			rc=1
			continue
		fi
		read -r next frac <<<"$line"
		# The series prints multipliers in hex.
		next=$((next))
		expected=$(echo "2^$frac * $l2_khz / $l1_khz" | bc)
		echo "# vcpu $cpu: multiplier $next >> $frac for $l2_khz kHz on a $l1_khz kHz host"
		[ "$next" = "$expected" ] && continue
		echo "# vcpu $cpu: expected multiplier $expected"
		rc=1
	done
	return $rc
}

# Where markers land against their port exits in EVENTS ("host|guest TS
# CPU EVENT INFO" lines of a merged report), the k-th marker of a vCPU
# against its k-th port exit, distances in UNIT.
show_placement()
{
	local events=$1 port=$2 unit=$3

	awk -v port="$port" -v unit="$unit" '
		$1 == "guest" && match($0, /ktt-marker [a-z]+ cpu=[0-9]+ seq=[0-9]+/) {
			split(substr($0, RSTART, RLENGTH), w, /[ =]/)
			mk[w[4], ++nm[w[4]]] = $2; ph[w[4], nm[w[4]]] = w[2]
		}
		$1 == "host" && $4 == "kvm_exit" && / reason (io|IO_INSTRUCTION) / && match($0, /info1 0x[0-9a-f]+/) {
			h = substr($0, RSTART + 8, RLENGTH - 8)
			if (substr(h, length(h) - 7, 4) != port) next
			match($0, /vcpu [0-9]+/)
			v = substr($0, RSTART + 5, RLENGTH - 5)
			ex[v, ++ne[v]] = $2
		}
		$1 == "host" { hostend = $2 }
		END {
			for (v in nm) for (k = 1; k <= nm[v]; k++) {
				d = mk[v, k] - ex[v, k]
				p = ph[v, k]
				n[p]++
				if (d < 0 && (k == 1 || mk[v, k] > ex[v, k - 1])) ok[p]++
				if (!(p in lo) || d < lo[p]) lo[p] = d
				if (!(p in hi) || d > hi[p]) hi[p] = d
				if (mk[v, k] > hostend) past[p]++
			}
			for (p in n)
				printf "#   %s markers: %d of %d right before their port exit; marker - port exit from %.0f to %.0f %s; %d after the last host event\n",
					p, ok[p] + 0, n[p], lo[p], hi[p], unit, past[p] + 0
		}' "$events"
}

# trace-cmd's offline merge of a self-traced pair: the whole guest file
# shifted by vCPU 0's debugfs offset.
show_trace_cmd_offset_merge()
{
	local host=$1 guest=$2 debugfs=$3 dir=$4 port=$5 offset

	offset=$(sed -n 's/^vcpu0 //p' "$debugfs")
	report_events -i "$host" -i "$guest" --ts-offset $((-offset)) >"$dir/trace-cmd-merge.events"
	echo "# trace-cmd report -i ${host##*/} -i ${guest##*/} --ts-offset $((-offset)) (debugfs offset of vcpu0):"
	show_placement "$dir/trace-cmd-merge.events" "$port" cycles
}

# trace-cmd's own merge of its agent pair: what it recorded (clock, the
# TSC2NSEC conversion, the guest's vCPU threads, the kvm protocol's
# samples) and where trace-cmd report puts the markers with them, in ns
# as it prints them (ns = (tsc * mult) >> shift; cycles = ns * 2^shift /
# mult, shown for scale).
show_trace_cmd_agent_merge()
{
	local host=$1 guest=$2 dir=$3 port=$4 ms mult shift

	trace-cmd dump --options -i "$host" >"$dir/host.options" 2>&1
	trace-cmd dump --options -i "$guest" >"$dir/guest.options" 2>&1
	echo "# $(cat "$MODE_DIR/trace-cmd-record.cmd" 2>/dev/null), in $(info_value "$RUN_TXT" agent_attempts) attempts, printed:"
	sed 's/^/#   /' "$MODE_DIR/trace-cmd-record.log" 2>/dev/null | head -40
	echo "# trace-cmd agent in L2 printed: $(tr '\n' ';' <"$MODE_DIR/trace-cmd-agent.log" 2>/dev/null)"
	echo "# the guest's trace_clock while the agent recorded: $(sed -n 's/^trace_clock //p' "$MODE_DIR/l2-info.txt")"
	echo "# ${host##*/}: trace clock $(sed -n '/Option TRACECLOCK/{n;p}' "$dir/host.options" | grep -o '\[[^]]*\]'), its buffer's clock $(sed -n 's/^"\(.*\)" \[clock\]$/\1/p' "$dir/host.options" | head -1)"
	ms=$(tsc2nsec_of "$host")
	echo "# ${host##*/} TSC2NSEC (mult shift): ${ms:-none}; ${guest##*/} TSC2NSEC: $(tsc2nsec_of "$guest")"
	echo "# ${host##*/} GUEST option: $(sed -n '/Option GUEST/,/Option\|^$/p' "$dir/host.options" | grep -v 'Option' | tr '\n' ';' | tr -s ' ')"
	echo "# ${guest##*/} TIME_SHIFT: $(sed -n '/Option TimeShift/,/Option [A-Z]/p' "$dir/guest.options" | grep -v 'Option' | tr '\n' ';' | tr -s '\t ' ' ')"
	report_events -i "$host" -i "$guest" >"$dir/trace-cmd-merge.events"
	echo "# trace-cmd report -t -i ${host##*/} -i ${guest##*/} (its TIME_SHIFT and TSC2NSEC applied; times compared in the ns it prints):"
	show_placement "$dir/trace-cmd-merge.events" "$port" ns
	if [ -n "$ms" ]; then
		read -r mult shift <<<"$ms"
		echo "#   (1 ns = $(echo "scale=3; 2^$shift / $mult" | bc) cycles by TSC2NSEC)"
	fi
}

# kvm-tsc-merge --host HOST --guest SPEC into DIR/TIMELINE.txt, the summary
# (its first lines shown) in DIR/SUMMARY.txt; status 0 or, when ACCEPT (a
# list like "0|3") is given, one of those.
run_merge()
{
	local host=$1 spec=$2 dir=$3 accept=${4:-0} status

	"$MERGE" --host "$host" --guest "$spec" --fields time,source,event,info \
		--summary "$dir/SUMMARY.txt" >"$dir/TIMELINE.txt" 2>"$dir/merge.stderr"
	status=$?
	echo "# kvm-tsc-merge --host ${host##*/} --guest ${spec##*/}: status $status"
	sed 's/^/# summary: /' "$dir/SUMMARY.txt" 2>/dev/null | head -40
	echo "# TIMELINE.txt: $(wc -l <"$dir/TIMELINE.txt") lines"
	case "|$accept|" in *"|$status|"*) return 0 ;; esac
	echo "# $MERGE exited with status $status (3: guest events outside a run interval, 1: bad input):"
	sed 's/^/#   /' "$dir/merge.stderr" | head -10
	return 1
}

# The markers (matching the awk regex PATTERN) of SOURCE's vCPUs where
# TIMELINE puts them, as "TS M HOST_VCPU VCPU PHASE cpu=C seq=K [...]"
# lines (the marker's words from the one before cpu= on):
# PHASE is the marker's word before cpu= ("before", "after",
# "ktt-n-marker"), HOST_VCPU the host's vCPU that runs the marker's vCPU,
# the same one, or ONTO when given (N's vCPUs all run on the nested
# guest's one vCPU).
timeline_markers()
{
	awk -v src="$2" -v re="$3" -v onto="${4:-}" "$AWK_TS"'{ s = $2; sub(/!$/, "", s) }
		index(s, src ":") == 1 && substr(s, length(src) + 2) ~ /^[0-9]+$/ && $3 == "print:" && match($0, re) {
			n = split(substr($0, RSTART, RLENGTH), w, " ")
			for (i = 2; i < n && w[i] !~ /^cpu=/; i++);
			v = substr(s, length(src) + 2)
			line = ts_int($1) " M " (onto == "" ? v : onto) " " v
			for (i--; i <= n; i++) line = line " " w[i]
			print line
		}' "$1"
}

# Host events keep their raw host TSC in the timeline, so the port exits of
# the host file (DIR/host.io-exits, whose kvm_exit names the vCPU) are
# sorted in with SOURCE's markers (PATTERN, ONTO: timeline_markers) as
# DIR/TIMELINE.txt places them: on every host vCPU, marker and port exit
# must then alternate. Prints what breaks it, and per phase the largest
# distance from a marker to its exit and the most other io exits of the
# vCPU between them.
check_timeline_order()
{
	local dir=$1 port=$2 source=$3 pattern=$4 onto=${5:-} missing

	awk "$AWK_TS"'$2 == "host" && $3 == "kvm_exit:" { print ts_int($1) }' "$dir/TIMELINE.txt" | sort >"$dir/timeline.exits"
	missing=$(awk -v p="$port" '$4 == p { print $1 }' "$dir/host.io-exits" | sort |
		comm -23 - "$dir/timeline.exits" | wc -l)
	[ "$missing" = 0 ] || { echo "# $missing port exits of the host file are not kvm_exit lines at the same TSC in TIMELINE.txt"; return 1; }
	timeline_markers "$dir/TIMELINE.txt" "$source" "$pattern" "$onto" >"$dir/timeline.markers"
	sort -s -n -k1,1 "$dir/timeline.markers" "$dir/host.io-exits" | awk -v port="$port" -v src="$source" '
		function fail(msg) { if (++bad <= 20) print "# " msg }
		$2 == "M" {
			v = $3; m = $5 " " $6 " " $7
			if ($6 != "cpu=" $4) fail("\"" m "\" is on " src ":" $4 " in the timeline")
			if (pending[v] != "")
				fail("vcpu " v ": \"" pending[v] "\" has no port exit before \"" m "\" (at " $1 ")")
			pending[v] = m; pts[v] = $1; others[v] = 0
			next
		}
		$4 != port { if (pending[$3] != "") others[$3]++; next }
		{
			v = $3
			if (pending[v] == "") { fail("vcpu " v ": port exit at " $1 " has no marker before it"); next }
			split(pending[v], w, " ")
			d = $1 - pts[v]
			if (d > maxd[w[1]]) maxd[w[1]] = d
			if (others[v] > maxo[w[1]]) maxo[w[1]] = others[v]
			matched[w[1]]++
			pending[v] = ""
		}
		END {
			for (v in pending) if (pending[v] != "") fail("vcpu " v ": \"" pending[v] "\" is never followed by its port exit")
			for (p in matched)
				printf "# %s markers: %d right before their port exit, at most %.0f cycles before it, at most %d other io exits of the vCPU between\n", p, matched[p], maxd[p], maxo[p]
			if (bad > 20) printf "# ... %d problems in all\n", bad
			exit bad > 0
		}'
}

# TIMELINE has MARKERS of each KIND (as check_guest_markers) on each of
# SOURCE's CPUS vCPUs, and no guest event outside a run interval.
check_timeline_markers()
{
	local timeline=$1 source=$2 cpus=$3 markers=$4 cpu kind n outside rc=0

	shift 4
	for cpu in $(seq 0 $((cpus - 1))); do
		for kind in "$@"; do
			n=$(awk -v s="$source:$cpu" -v m="$kind cpu=$cpu seq=" \
				'($2 == s || $2 == s "!") && $3 == "print:" && index($0, m)' "$timeline" | wc -l)
			[ "$n" = "$markers" ] && continue
			echo "# TIMELINE.txt: $n '$kind' markers on $source:$cpu, expected $markers"
			rc=1
		done
	done
	outside=$(awk '$2 ~ /!$/' "$timeline" | wc -l)
	[ "$outside" = 0 ] || { echo "# TIMELINE.txt: $outside guest events outside a run interval"; rc=1; }
	return $rc
}

# "TS SOURCE CPU EVENT" per event, SOURCE host or guest, of a timeline
# written with --fields time,source,cpu,event.
timeline_events()
{
	awk "$AWK_TS"'{ src = $2; sub(/[!?]+$/, "", src); c = $3; gsub(/\[|\]/, "", c); e = $4; sub(/:$/, "", e)
		print ts_int($1), (src == "host" ? "host" : "guest"), c + 0, e }' "$1"
}

# Writes the annotated copies to DIR/sync and the timeline they must
# match, its times as trace-cmd shows the copies (DIR/sync-timeline.shown).
run_sync_out()
{
	local host=$1 guest=$2 dir=$3

	"$MERGE" --host "$host" --guest l2="$guest" --fields time,source,cpu,event \
		--sync-out "$dir/sync" --force --output "$dir/sync-timeline.txt" 2>"$dir/sync.stderr" ||
		{ sed 's/^/#   /' "$dir/sync.stderr" | head -10; return 1; }
	timeline_events "$dir/sync-timeline.txt" >"$dir/sync-timeline.events"
	tsc_to_shown "$dir/sync-timeline.events" "$(tsc2nsec_of "$dir/sync/${host##*/}")" \
		"$(tsc2nsec_of "$dir/sync/${guest##*/}")" >"$dir/sync-timeline.shown"
}

# Two event lists, line by line: the first difference and the counts.
compare_events()
{
	local expected=$1 actual=$2 what=$3 n diffs

	n=$(wc -l <"$expected")
	diffs=$(diff "$expected" "$actual" | grep -c '^[<>]')
	echo "# $what: $(wc -l <"$actual") events against kvm-tsc-merge's $n ($(awk '$2 == "guest"' "$expected" | wc -l) of the guest), $diffs lines differ"
	[ "$diffs" = 0 ] && [ "$n" -gt 0 ] && return 0
	diff "$expected" "$actual" | head -6 | sed 's/^/#   /'
	return 1
}

# trace-cmd report of the copies: every event, host and guest, at the same
# host time and in the same order as kvm-tsc-merge's timeline.
check_sync_report()
{
	local host=$1 guest=$2 dir=$3 h=${1##*/} g=${2##*/}

	run_sync_out "$host" "$guest" "$dir" || return 1
	echo "# --sync-out wrote: $(cd "$dir/sync" && wc -c "$h" "$g" | head -2 | tr '\n' ' ')"
	[ "$(head -c 40 "$dir/sync-timeline.shown")" = "$(head -c 40 "$dir/sync-timeline.events")" ] ||
		echo "# the copies have TSC2NSEC: the timeline's host TSCs compared as the ns trace-cmd shows"
	report_events -i "$dir/sync/$h" -i "$dir/sync/$g" | awk '{ print $2, $1, $3 + 0, $4 }' \
		>"$dir/sync-report.events"
	compare_events "$dir/sync-timeline.shown" "$dir/sync-report.events" \
		"trace-cmd report -i sync/$h -i sync/$g"
}

# KernelShark's library on the copies: the guest stream's entries at
# kvm-tsc-merge's host times (sorted: libkshark orders ties its own way).
check_sync_kshark()
{
	local host=$1 guest=$2 dir=$3

	[ -s "$dir/sync-timeline.shown" ] || { echo "# no --sync-out copies"; return 1; }
	awk '$2 == "guest" { print $1, $3, $4 }' "$dir/sync-timeline.shown" | sort >"$dir/sync-guest.events"
	"$KSHARK_TIMES" "$dir/sync/${host##*/}" "$dir/sync/${guest##*/}" | sort >"$dir/kshark.events" || return 1
	awk '{ print $1, "guest", $2, $3 }' "$dir/sync-guest.events" >"$dir/sync-guest.expected"
	awk '{ print $1, "guest", $2, $3 }' "$dir/kshark.events" >"$dir/kshark.actual"
	compare_events "$dir/sync-guest.expected" "$dir/kshark.actual" "libkshark, guest stream"
}

# KernelShark's KVM combo plot on the copies: libkshark's host/guest
# mapping, and each vCPU thread's kvm_entry and kvm_exit in the host
# stream that mapping names (the top level, where KernelShark looks).
check_sync_combo()
{
	local host=$1 guest=$2 dir=$3 rc

	"$KSHARK_TIMES" --combo "$dir/sync/${host##*/}" "$dir/sync/${guest##*/}" >"$dir/kshark-combo.txt"
	rc=$?
	sed 's/^/# /' "$dir/kshark-combo.txt"
	return $rc
}

# trace-cmd report of the host copy is the input's, line for line, but
# for record-host.sh's instance name, which becomes the top level's padding.
check_sync_host_report()
{
	local host=$1 dir=$2 n

	trace-cmd report -i "$host" 2>/dev/null | sed -E 's/^(kvm-tsc-record: )? *//' >"$dir/host.report"
	trace-cmd report -i "$dir/sync/${host##*/}" 2>/dev/null | sed -E 's/^ *//' >"$dir/sync-host.report"
	n=$(wc -l <"$dir/host.report")
	echo "# trace-cmd report of ${host##*/} and of its copy: $n and $(wc -l <"$dir/sync-host.report") lines"
	[ "$n" -gt 1 ] && cmp -s "$dir/host.report" "$dir/sync-host.report" && return 0
	diff "$dir/host.report" "$dir/sync-host.report" | head -4 | sed 's/^/#   /'
	return 1
}

# The Perfetto trace of the pair, decoded by protoc: Perfetto's import
# rules hold (pftrace-check.awk), and the guest's events (machine 1) are at
# the host nanosecond of the timeline written with -k KHZ, each in the
# bundle of its vCPU, the guest's CPU.
check_perfetto()
{
	local host=$1 guest=$2 dir=$3 khz=$4

	"$MERGE" --host "$host" --guest l2="$guest" --tsc-khz "$khz" \
		--fields time,source,cpu,event --perfetto "$dir/pair.pftrace" \
		--output "$dir/ns-timeline.txt" 2>"$dir/perfetto.stderr" ||
		{ sed 's/^/#   /' "$dir/perfetto.stderr" | head -10; return 1; }
	echo "# pair.pftrace: $(wc -c <"$dir/pair.pftrace") bytes for $(wc -l <"$dir/ns-timeline.txt") events"
	timeline_events "$dir/ns-timeline.txt" | awk '$2 == "guest" { print $1, "guest", $3, $4 }' |
		sort >"$dir/ns-guest.expected"
	protoc --decode=perfetto.protos.Trace --proto_path="$PROTO_DIR" "$PROTO_DIR/perfetto_trace.proto" \
		<"$dir/pair.pftrace" >"$dir/pair.decoded" 2>"$dir/protoc.stderr" ||
		{ sed 's/^/#   /' "$dir/protoc.stderr" | head -5; return 1; }
	awk -f "$PFTRACE_CHECK" "$dir/pair.decoded" >"$dir/pair.check" ||
		{ sed 's/^/#   /' "$dir/pair.check" | tail -5; return 1; }
	echo "# pftrace-check.awk on pair.pftrace: $(cat "$dir/pair.check") (ok BUNDLES EVENTS)"
	awk -f "$PFTRACE_EVENTS" "$dir/pair.decoded" >"$dir/pair.pfevents" &&
		rm "$dir/pair.decoded"
	awk -F'\t' '$1 == "ftrace" && $2 == 1 { print $4, "guest", $3, $6 }' \
		"$dir/pair.pfevents" | sort >"$dir/pftrace-guest.actual"
	compare_events "$dir/ns-guest.expected" "$dir/pftrace-guest.actual" "protoc --decode of pair.pftrace, machine 1"
}

# check DESCRIPTION COMMAND...: one KTAP line for the mode, a failure
# without running COMMAND when the mode has no trace pair; in the planning
# pass only counted.
check()
{
	local what="$MODE: $1"

	shift
	if [ -n "$PLANNING" ]; then
		PLANNED=$((PLANNED + 1))
		return 0
	fi
	if [ -n "$BROKEN" ]; then
		ktap_test_fail "$what"
		return 1
	fi
	if "$@"; then
		ktap_test_pass "$what"
		return 0
	fi
	ktap_test_fail "$what"
	return 1
}

# A check of kvm-tsc-merge: a skip while it is not built.
merge_check()
{
	if [ -z "$PLANNING" ] && [ -z "$BROKEN" ] && [ ! -x "$MERGE" ]; then
		ktap_test_skip "$MODE: $1 ($MERGE not built)"
		return 0
	fi
	check "$@"
}

# Diagnostics and preparations: not in the planning pass, nor for a mode
# without its files.
run_step()
{
	[ -z "$PLANNING" ] && [ -z "$BROKEN" ] && "$@"
	return 0
}

# NAME's events in all and of each kind, from its raw EVENTS.
show_event_counts()
{
	echo "# $1: $(wc -l <"$2") events: $(awk '{ print $4 }' "$2" | sort | uniq -c | sort -rn | awk '{ printf "%s %s, ", $2, $1 }')"
}

# The mode's facts from its l2-info.txt, and its raw events.
prepare_mode()
{
	rm -rf "$OUT"
	mkdir -p "$OUT"
	CPUS=$(info_value "$INFO" cpus)
	JUMP=$(info_value "$INFO" tsc_jump)
	if [ "$MODE" = nested ]; then
		N_VCPUS=$(info_value "$INFO" n_vcpus)
		MARKERS=$(info_value "$INFO" n_markers)
		PORT_HEX=$UCALL_PORT_HEX
		G_KHZ=$(info_value "$RUN_TXT" l2_tsc_khz)
		N_KHZ=$(info_value "$RUN_TXT" n_tsc_khz)
	else
		MARKERS=$(info_value "$INFO" markers_per_phase)
		PORT_HEX=$(printf '%04x' "$(info_value "$INFO" marker_port)")
	fi
	sed "s/^/# $MODE: /" "$RUN_TXT"
	if [ "$MODE" = linux-n ]; then
		N_VCPUS=$(info_value "$IN_L2/l2-info.txt" cpus)
		# G ran its own guest as the test VM runs G: its L1 is G.
		G_KHZ=$(info_value "$IN_L2/nested-run.txt" l1_tsc_khz)
		N_KHZ=$(info_value "$IN_L2/nested-run.txt" l2_tsc_khz)
		sed "s/^/# $MODE: in G: /" "$IN_L2/nested-run.txt"
		raw_events "$N_DAT" >"$OUT/n.events"
		show_event_counts "${N_DAT#"$MODE_DIR"/} (N's)" "$OUT/n.events"
	fi
	echo "# $MODE: ${HOST_DAT#"$MODE_DIR"/}: $(wc -c <"$HOST_DAT") bytes, ${GUEST_DAT#"$MODE_DIR"/}: $(wc -c <"$GUEST_DAT") bytes"
	raw_events "$HOST_DAT" >"$OUT/host.events"
	raw_events "$GUEST_DAT" >"$OUT/guest.events"
	show_event_counts "${HOST_DAT#"$MODE_DIR"/}" "$OUT/host.events"
	show_event_counts "${GUEST_DAT#"$MODE_DIR"/}" "$OUT/guest.events"
}

show_trace_cmd_merge()
{
	if [ "$MODE" = agent ]; then
		show_trace_cmd_agent_merge "$HOST_DAT" "$GUEST_DAT" "$OUT" "$PORT_HEX"
	else
		show_trace_cmd_offset_merge "$HOST_DAT" "$GUEST_DAT" "$DEBUGFS" "$OUT" "$PORT_HEX"
	fi
}

# G's QEMU process in H, the VMM PID that ties N's trace to G's VM in H's
# trace: the parent (by task_newtask, which the creating thread, QEMU's
# main one, emits under its TID, the PID) of the vCPU thread whose
# kvm_nested_tsc_offset puts G's vCPU in guest mode. KVM's debugfs
# directory, which vm-nested-trace.sh names in debugfs-tsc-offset.txt,
# says it too when H's trace began after G's threads.
nested_vmm_pid()
{
	local host=$1 debugfs=$2 pid

	pid=$(trace-cmd report -N --raw-ts -i "$host" 2>/dev/null | awk '
		function tid() { match($0, /-[0-9]+ +\[[0-9]+\]/); return substr($0, RSTART + 1) + 0 }
		vcpu == "" && / kvm_nested_tsc_offset: / && / guest_mode=1 / { vcpu = tid() }
		/ task_newtask: / && match($0, / pid=[0-9]+ /) { parent[substr($0, RSTART + 5, RLENGTH - 6)] = tid() }
		END { if (vcpu in parent) print parent[vcpu] }')
	[ -n "$pid" ] || pid=$(sed -n 's/.*(qemu pid \([0-9]*\)).*/\1/p' "$debugfs")
	echo "$pid"
}

# mktrace OUT.dat (spec beside it) from "CPU TS TEXT" lines on stdin: an
# x86-tsc trace of CPUS CPUs, each line a print event TEXT at raw
# timestamp TS, as trace_marker would have written it.
write_marker_trace()
{
	local out=$1 cpus=$2

	{
		echo "clock x86-tsc"
		echo "cpus $cpus"
		awk '{ cpu = $1; ts = $2; $1 = $2 = ""; sub(/^ +/, "")
			printf "%s %s 1 ftrace:print ip=0 buf=\"%s\"\n", cpu, ts, $0 }'
	} >"${out%.dat}.spec"
	"$MKTRACE" -t "$MKTRACE_FORMATS" -o "$out" "${out%.dat}.spec"
}

# In mode nested N, the nested guest's guest, is not a Linux guest and
# keeps no trace: tsc_nested_payload in G writes the rdtsc value N read
# right before each ucall into G's trace. So N's trace is built from those
# markers as N would have stamped an event written just before that port
# exit: an x86-tsc trace.dat, one CPU per N vCPU, each marker a print event
# whose timestamp is its tsc= value, N's own TSC (OUT/N.dat). kvm-tsc-merge
# then takes it as any L2 trace, through H's kvm_nested_tsc_offset.
prepare_nested()
{
	VMM_PID=$(nested_vmm_pid "$HOST_DAT" "$DEBUGFS")
	echo "# $MODE: the nested guest's QEMU in ${HOST_DAT##*/}: pid ${VMM_PID:-not found}"
	[ "$MODE" = nested ] || return 0
	grep -E -o "$N_MARKER_RE" "$OUT/guest.events" |
		awk '{ split($2, c, "="); split($4, t, "="); print c[2], t[2], $0 }' |
		write_marker_trace "$OUT/N.dat" "$N_VCPUS" ||
		echo "# $MODE: mktrace could not write N.dat"
}

# H puts G's vCPU into guest mode (running N) with kvm_nested_tsc_offset
# guest_mode=1, at least once per marker (MARKERS in all) since N runs
# again after every port exit G handles; G's KVM moves N's TSC offset by
# about TSC_JUMP when N writes its IA32_TSC, from the offset G's debugfs
# showed where G read it (DEBUGFS, empty when not).
check_nested_tsc_offsets()
{
	local host_events=$1 guest_events=$2 gcpus=$3 ncpus=$4 markers=$5 jump=$6 debugfs=$7 n rc=0

	n=$(awk '$4 == "kvm_nested_tsc_offset" && $6 == "guest_mode=1"' "$host_events" | wc -l)
	echo "# ${HOST_DAT##*/}: $n kvm_nested_tsc_offset with guest_mode=1 for the nested guest's $gcpus vCPUs"
	[ "$n" -ge "$markers" ] || { echo "# expected at least $markers"; rc=1; }
	check_tsc_write "$guest_events" "$debugfs" "$ncpus" "$jump" || rc=1
	return $rc
}

# Every TSC multiplier the traces show (kvm_write_tsc_multiplier's next,
# kvm_nested_tsc_offset's new one) is 1 << frac_bits: 0x1 and zeros.
tsc_unscaled()
{
	! awk '$4 == "kvm_write_tsc_multiplier" || $4 == "kvm_nested_tsc_offset"' "$@" |
		grep -oE '(next=|-> )0x[0-9a-f]+' | sed 's/.*0x//' | grep -qv '^10*$'
}

# The chain agrees with the direct conversion. N's markers (the awk regex
# PATTERN) go to G's TSC by merging G's trace, as the host, with N_DAT (no
# @PID: its one VM is N's); each goes, at that G TSC, onto the G CPU
# that last entered its vCPU, as "chained PHASE cpu=C seq=K"; that is a
# trace of G's (GMARKS.dat) which H's trace converts with G's L1 steps.
# Those events fall while G's vCPU runs N, so kvm-tsc-merge marks them
# outside a run ('!', exit status 3) but prints their conversion all the
# same, which is what is compared, marker by marker, with the direct
# merge's host TSC (OUT/TIMELINE.txt). Unscaled, both are subtractions
# modulo 2^64 and L2's offset is the sum of the two, so they must be
# equal; scaled, within the bound of Documentation/contract.md ("A
# nested guest's value the long way"), chain_bound.
check_chained_conversion()
{
	local pattern=$1 dir=$OUT/chain n max bound

	mkdir -p "$dir/g" "$dir/h"
	run_merge "$GUEST_DAT" "n=$N_DAT" "$dir/g" || return 1
	{
		awk '$4 == "kvm_entry" { v = $6; sub(/,$/, "", v); print $2, "E", v, $3 }' "$OUT/guest.events"
		timeline_markers "$dir/g/TIMELINE.txt" n "$pattern"
	} | sort -s -n -k1,1 | awk '$2 == "E" { cpu[$3] = $4; next }
		{ print cpu[$4] + 0, $1, "chained", $5, $6, $7 }' | write_marker_trace "$dir/GMARKS.dat" "$CPUS" || return 1
	run_merge "$HOST_DAT" "g=$dir/GMARKS.dat@$VMM_PID" "$dir/h" "0|3" || return 1
	timeline_markers "$OUT/TIMELINE.txt" n "$pattern" | awk '{ print $5 "/" $6 "/" $7, $1 }' | sort >"$dir/direct"
	timeline_markers "$dir/h/TIMELINE.txt" g "$CHAINED_MARKER_RE" | awk '{ print $5 "/" $6 "/" $7, $1 }' |
		sort >"$dir/chained"
	join "$dir/direct" "$dir/chained" >"$dir/compared"
	n=$(wc -l <"$dir/compared")
	max=$(awk '{ d = $3 - $2; if (d < 0) d = -d; if (d > m) m = d } END { print m + 0 }' "$dir/compared")
	echo "# chained (N -> G -> H) against direct (N -> H): $n of $(wc -l <"$dir/direct") markers compared, largest difference $max ticks"
	[ "$n" -gt 0 ] && [ "$n" = "$(wc -l <"$dir/direct")" ] && [ "$n" = "$(wc -l <"$dir/chained")" ] || return 1
	tsc_unscaled "$OUT/host.events" "$OUT/guest.events" && { [ "$max" = 0 ]; return; }
	bound=$(chain_bound "$OUT/host.events" "$dir/compared")
	echo "# scaled TSCs: contract.md bounds the difference below $bound ticks"
	awk -v m="$max" -v b="$bound" 'BEGIN { exit !(m < b) }'
}

# contract.md's bound on the long way against the direct conversion,
# 1 + 1/r1 + 1/r + h * 2^-frac_bits / r, for COMPARED's largest host tick h,
# r1 the L1 ratio of G's vCPU (its last kvm_write_tsc_multiplier in
# HOST_EVENTS), r its L2 ratio while it ran N (kvm_nested_tsc_offset's new
# multiplier, guest_mode 1).
chain_bound()
{
	local host_events=$1 compared=$2

	awk -v h="$(awk '$2 > h { h = $2 } END { printf "%.0f", h }' "$compared")" '
		function hex(s,   v, i) {
			for (i = 3; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v
		}
		$4 == "kvm_write_tsc_multiplier" && match($0, /next=0x[0-9a-f]+/) {
			m1 = hex(substr($0, RSTART + 5, RLENGTH - 5))
			match($0, /frac_bits=[0-9]+/); frac = substr($0, RSTART + 10, RLENGTH - 10)
		}
		$4 == "kvm_nested_tsc_offset" && $6 == "guest_mode=1" { m = hex($NF) }
		END { one = 2 ^ frac; printf "%.6f\n", 1 + one / m1 + one / m + h / m }' "$host_events"
}

# Modes nested and linux-n: G, the nested guest, runs N. Mode nested's N
# is tsc_nested_payload's guest, whose markers G's trace has, one before
# each ucall port exit; mode linux-n's is a Linux guest with its own trace,
# whose markers come before and after its TSC write, each followed by a
# marker port exit. The host trace has those port exits on G's one vCPU
# (vm-nested-trace.sh boots G with one in these modes, so every N vCPU
# runs there), G's on N's vCPUs.
check_nested_mode()
{
	local h=$1 g=$2 n=${N_DAT#"$MODE_DIR"/} pattern=$N_MARKER_RE kinds=(ktt-n-marker) events=$OUT/guest.events
	local per_vcpu=${MARKERS:-0} what="$g has ${MARKERS:-its} ktt-n-marker lines per vCPU of N, the nested guest's guest"
	local g_debugfs=''

	if [ "$MODE" = linux-n ]; then
		pattern=$L2_MARKER_RE kinds=("ktt-marker before" "ktt-marker after") events=$OUT/n.events
		per_vcpu=$((2 * per_vcpu)) g_debugfs=$IN_L2/debugfs-tsc-offset.txt
		what="$n, N's own trace, has ${MARKERS:-its} markers before and after N's TSC write on each vCPU"
	fi
	n=${n#"$OUT"/}
	run_step prepare_nested
	check "$what" check_guest_markers "$events" "$N_VCPUS" "$MARKERS" "${kinds[@]}"
	check "$h has one kvm_exit for the port per N marker on the nested guest's vCPU" \
		check_host_port_exits "$OUT/host.events" "$OUT/host.io-exits" "$PORT_HEX" "$CPUS" $((N_VCPUS * per_vcpu))
	check "$g has one kvm_exit for the port per N marker on each vCPU of N" \
		check_host_port_exits "$OUT/guest.events" "$OUT/guest.io-exits" "$PORT_HEX" "$N_VCPUS" "$per_vcpu"
	check "$g has N's TSC multiplier for N's rate" \
		check_l2_multiplier "$OUT/guest.events" "$G_KHZ" "$N_KHZ" "$N_VCPUS"
	check "$h has kvm_nested_tsc_offset into guest mode, $g N's TSC write as kvm_write_tsc_offset" \
		check_nested_tsc_offsets "$OUT/host.events" "$OUT/guest.events" "$CPUS" "$N_VCPUS" \
		$((N_VCPUS * per_vcpu)) "$JUMP" "$g_debugfs"
	merge_check "kvm-tsc-merge merges $h with N's trace as an L2 trace ($n@PID,l2) and exits 0" \
		run_merge "$HOST_DAT" "n=$N_DAT@$VMM_PID,l2" "$OUT"
	merge_check "in the merged timeline every N marker comes right before its own port exit" \
		check_timeline_order "$OUT" "$PORT_HEX" n "$pattern" 0
	merge_check "the merged timeline has all of N's markers, none outside a run" \
		check_timeline_markers "$OUT/TIMELINE.txt" n "$N_VCPUS" "$MARKERS" "${kinds[@]}"
	merge_check "N's markers converted through G's TSC (G's trace, then H's) are at the direct merge's host TSC" \
		check_chained_conversion "$pattern"
	merge_check "N's trace given without ,l2 is named as recorded inside the nested guest, with the spec to give" \
		check_l2_hint
}

# N's trace given as an L1 guest of G's VM: its events fall outside L1's
# runs (exit status 3), and kvm-tsc-merge names the file and the ,l2 spec.
check_l2_hint()
{
	local dir=$OUT/no-l2 spec="n=$N_DAT@$VMM_PID"

	mkdir -p "$dir"
	run_merge "$HOST_DAT" "$spec" "$dir" 3 || return 1
	sed 's/^/#   /' "$dir/merge.stderr" | head -3
	grep -qF "Give it with ,l2: --guest $spec" "$dir/merge.stderr"
}

# Mode linux-n's third trace, N's, as check_mode names what was exported.
n_trace_named()
{
	[ "$MODE" = linux-n ] && echo " (and N's ${N_DAT#"$MODE_DIR"/})"
}

# Every check of one mode's pair; with PLANNING set, only their count.
check_mode()
{
	local h g

	use_mode "$1"
	h=${HOST_DAT#"$MODE_DIR"/} g=${GUEST_DAT#"$MODE_DIR"/}
	BROKEN=
	check "the nested run in the test VM recorded and exported $h and $g$(n_trace_named)" \
		check_exported_mode || BROKEN="no trace pair"
	[ -n "$BROKEN" ] && echo "# $MODE: no trace pair to check (see $VM_LOG and $MODE_DIR)"
	run_step prepare_mode
	if [ -n "$N_DAT" ]; then
		check_nested_mode "$h" "$g"
		return 0
	fi
	check "$g has ${MARKERS:-its} markers before and after the TSC write on each vCPU" \
		check_guest_markers "$OUT/guest.events" "$CPUS" "$MARKERS" "ktt-marker before" "ktt-marker after"
	check "$h has one kvm_exit for the marker port per marker on each vCPU" \
		check_host_port_exits "$OUT/host.events" "$OUT/host.io-exits" "$PORT_HEX" "$CPUS" $((2 * MARKERS))
	check "$h has each vCPU's guest TSC write as kvm_write_tsc_offset, from the offset debugfs showed" \
		check_tsc_write "$OUT/host.events" "$DEBUGFS" "$CPUS" "$JUMP"
	[ "$MODE" = own ] &&
		check "$h has each vCPU's TSC multiplier for L2's rate" \
			check_l2_multiplier "$OUT/host.events" "$(info_value "$RUN_TXT" l1_tsc_khz)" \
				"$(info_value "$RUN_TXT" l2_tsc_khz)" "$CPUS"
	run_step show_trace_cmd_merge
	merge_check "kvm-tsc-merge merges the pair and exits 0" run_merge "$HOST_DAT" "l2=$GUEST_DAT" "$OUT"
	merge_check "in the merged timeline every marker comes right before its own port exit" \
		check_timeline_order "$OUT" "$PORT_HEX" l2 "$L2_MARKER_RE"
	merge_check "the merged timeline has every vCPU's markers before and after the TSC write" \
		check_timeline_markers "$OUT/TIMELINE.txt" l2 "$CPUS" "$MARKERS" "ktt-marker before" "ktt-marker after"
	merge_check "trace-cmd report on the --sync-out copies matches the timeline event by event" \
		check_sync_report "$HOST_DAT" "$GUEST_DAT" "$OUT"
	merge_check "libkshark puts the guest events of the --sync-out copies at the timeline's host times" \
		check_sync_kshark "$HOST_DAT" "$GUEST_DAT" "$OUT"
	merge_check "KernelShark's KVM combo: each vCPU thread's kvm_entry and kvm_exit in the host stream libkshark maps the guest to" \
		check_sync_combo "$HOST_DAT" "$GUEST_DAT" "$OUT"
	merge_check "trace-cmd report of the host copy is the input's, line for line" \
		check_sync_host_report "$HOST_DAT" "$OUT"
	[ "$MODE" = own ] &&
		merge_check "the Perfetto trace decodes with protoc, the guest's events at the timeline's host ns" \
			check_perfetto "$HOST_DAT" "$GUEST_DAT" "$OUT" "$(info_value "$RUN_TXT" l1_tsc_khz)"
	return 0
}

main()
{
	local mode no_vm='' rc=0

	use_ktap
	need_cmd trace-cmd trace-cmd
	while [ $# -gt 0 ]; do
		case $1 in
		--no-vm) no_vm=1 ;;
		--vmm) VMM=${2:?--vmm needs qemu or bochs}; shift ;;
		--dir) VM_DIR=$(realpath -m "${2:?--dir needs a directory}"); shift ;;
		--l2-tsc-khz) L2_TSC_KHZ=${2:?--l2-tsc-khz needs a rate in kHz}; shift ;;
		--n-tsc-khz) N_TSC_KHZ=${2:?--n-tsc-khz needs a rate in kHz}; shift ;;
		--modes) MODES=${2:?--modes needs a list of modes}; shift ;;
		*) die "$USAGE" ;;
		esac
		shift
	done
	EXPORT=$VM_DIR/export OUT_ROOT=$VM_DIR/merge VM_LOG=$VM_DIR.log
	for mode in $MODES; do
		case $mode in
		own | agent | late | nested | linux-n) ;;
		*) die "--modes: unknown mode '$mode' (own, agent, late, nested, linux-n)" ;;
		esac
	done
	ktap_print_header
	[ -n "$no_vm" ] || { run_vm; rc=$?; }
	[ "$rc" = 0 ] || echo "# the nested runs exited with status $rc"
	PLANNING=1
	for mode in $MODES; do
		check_mode "$mode"
	done
	PLANNING=
	ktap_set_plan "$PLANNED"
	for mode in $MODES; do
		check_mode "$mode"
	done
	ktap_finished
}

main "$@"
