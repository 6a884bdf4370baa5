#!/bin/bash
# run-fuzz.sh: fuzz kvm-tsc-merge with AFL++ under ASan and UBSan, each input role for SECONDS, and list what it found.
#
# usage: run-fuzz.sh BUILD_DIR SECONDS [ROLE...]
#
# The roles are roles.sh's, all by default; fuzz/README says how they run.
# With FUZZ_EXECS set, a role also stops after about that many executions,
# so that a fast role leaves the cores to the slow ones. With FUZZ_RESUME=1
# each role goes on from its last queue and counts (after a fix, the
# driver rebuilt), instead of starting from the seeds. With
# FUZZ_ROUND_TRIP=0 the driver leaves out its round-trip check; seeds that
# crash are skipped, not fatal, while others remain. BUILD_DIR is
# build/tools (mktrace and fuzz/afl-driver built there). Findings stay in
# BUILD_DIR/fuzz/out-ROLE/default/{crashes,hangs}.

set -u

# shellcheck source-path=SCRIPTDIR source=../tests/dirs.sh
. "$(dirname "$0")/../tests/dirs.sh" "${1:?usage: run-fuzz.sh BUILD_DIR SECONDS [ROLE...]}"
readonly SECONDS_EACH=${2:?usage: run-fuzz.sh BUILD_DIR SECONDS [ROLE...]}
shift 2
readonly FUZZ_DIR=$BIN_DIR/fuzz
readonly DRIVER=$FUZZ_DIR/afl-driver
readonly SEEDS=$FUZZ_DIR/seeds
readonly FORMATS=$TESTS_DIR/tracefs

# shellcheck source-path=SCRIPTDIR source=roles.sh
. "$FUZZ_SRC/roles.sh"
ROLES=${*:-$ROLES_ALL}

die()
{
	echo "run-fuzz.sh: $*" >&2
	exit 1
}

# A tracefs with only the event formats SPEC uses: a seed without the
# others is smaller, and each run parses less (kvm_exit's alone is 5 kB).
spec_tracefs()
{
	local spec=$1 dir=$2 ev

	rm -rf "$dir"
	mkdir -p "$dir/events"
	cp "$FORMATS/events/header_page" "$FORMATS/events/header_event" "$dir/events/"
	# libtracecmd's writer needs the ftrace system (it crashes without).
	for ev in ftrace:print $(awk '!/^#/ && $4 ~ /:/ { print $4 }' "$spec" | sort -u); do
		[ -e "$dir/events/${ev%%:*}/${ev#*:}" ] && continue
		mkdir -p "$dir/events/${ev%%:*}"
		ln -s "$FORMATS/events/${ev%%:*}/${ev#*:}" "$dir/events/${ev%%:*}/${ev#*:}"
	done
}

# role_seeds ROLE: the files a role starts from, one a line: its own side of
# each pair it knows; for host and guest every file of that side.
role_seeds()
{
	case $1 in
	host | guest) printf '%s\n' "$SEEDS/files/$1-"*.dat "$FUZZ_SRC/seeds/real/$1/"*.dat ;;
	agent-host) printf '%s\n' "$FUZZ_SRC"/seeds/real/host/agent-host-vmx-*.dat ;;
	agent-guest) printf '%s\n' "$FUZZ_SRC"/seeds/real/guest/agent-guest-vmx-*.dat ;;
	snapshot-host) echo "$SEEDS/files/host-snapshot.dat" ;;
	nested-host) echo "$SEEDS/files/host-nested.dat" ;;
	nested-guest) echo "$SEEDS/files/guest-l2.dat" ;;
	esac
}

# Argument lists: the seed files, with and without the usual options.
make_args_seeds()
{
	mkdir -p "$SEEDS/args"
	printf '%s\0' -H "$SEEDS/files/host-step.dat" -g "g=$SEEDS/files/guest-step.dat" \
		-F time,source,cpu,event,info,guest_ts >"$SEEDS/args/plain"
	printf '%s\0' -q -n -k 2600000 -H "$SEEDS/files/host-nested.dat" \
		-g "$SEEDS/files/guest-two.dat@2000" -s - -j /dev/null -p /dev/null >"$SEEDS/args/outputs"
	printf '%s\0' -n -H "$SEEDS/files/host-nested.dat" -g "l2=$SEEDS/files/guest-two.dat@2000.1,l2" \
		--sync-max-error 10 >"$SEEDS/args/nested"
	printf '%s\0' -q -H "$SEEDS/files/agent-host-vmx-v7-zstd.dat" \
		-g "$SEEDS/files/agent-guest-vmx-v7-zstd.dat" -j /dev/null -p /dev/null >"$SEEDS/args/agent"
}

# The seed files (mktrace's from the specs, each with only the event
# formats it uses, and the real agent pair, a partner too), then each
# role's seeds, in SEEDS/ROLE.
make_seeds()
{
	local spec name role f

	rm -rf "$SEEDS"
	mkdir -p "$SEEDS/files"
	for spec in "$FUZZ_SRC"/seeds/*.spec; do
		name=$(basename "$spec" .spec)
		spec_tracefs "$spec" "$SEEDS/tracefs-$name"
		"$BIN_DIR/mktrace" -t "$SEEDS/tracefs-$name" -o "$SEEDS/files/$name.dat" "$spec" ||
			die "mktrace failed on $spec"
	done
	cp "$FUZZ_SRC"/seeds/real/host/agent-host-vmx-v7-zstd.dat \
		"$FUZZ_SRC"/seeds/real/guest/agent-guest-vmx-v7-zstd.dat "$SEEDS/files/" ||
		die "no real seeds: make fuzz-seeds"
	# What trace-cmd itself writes (every file version and compression,
	# instance buffers, agent options) reaches parts no spec does.
	for role in $ROLES; do
		[ "$role" = args ] && continue
		role_spec "$role" || die "no role $role: the roles are $ROLES_ALL"
		mkdir -p "$SEEDS/$role"
		while read -r f; do
			cp "$f" "$SEEDS/$role/" || die "no seed $f: make fuzz-seeds"
		done < <(role_seeds "$role")
	done
	make_args_seeds
}

fuzz_role()
{
	local role=$1 out=$FUZZ_DIR/out-$1 seeds=$SEEDS/$1 ARGV

	role_driver_args "$SEEDS/files" "$role"
	# "-": AFL++ resumes from the output.
	[ "${FUZZ_RESUME:-0}" != 1 ] || [ ! -d "$out/default/queue" ] || seeds=-
	# The argument role writes whatever paths its inputs name: from here.
	mkdir -p "$FUZZ_DIR/cwd-$role"
	cd "$FUZZ_DIR/cwd-$role" || return 1

	# The instrumentation is ASan's; AFL++ must not add its own limits.
	# A failed malloc returns NULL, as it does outside ASan; no allocation
	# stacks and a small quarantine keep the executions per second up.
	AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
	AFL_SKIP_CRASHES=1 FUZZ_ROUND_TRIP=${FUZZ_ROUND_TRIP:-1} \
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=0:symbolize=0:allocator_may_return_null=1:malloc_context_size=0:quarantine_size_mb=16 \
	UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
		afl-fuzz -V "$SECONDS_EACH" ${FUZZ_EXECS:+-E "$FUZZ_EXECS"} -m none -t 2000 \
			-i "$seeds" -o "$out" \
			-x "$FUZZ_SRC/trace-dat.dict" -- "$DRIVER" "${ARGV[@]}" \
			>"$FUZZ_DIR/afl-$role.log" 2>&1
}

report_role()
{
	local role=$1 stats=$FUZZ_DIR/out-$1/default/fuzzer_stats

	[ -f "$stats" ] || { echo "$role: no fuzzer_stats (see $FUZZ_DIR/afl-$role.log)"; return; }
	awk -v r="$role" -F' *: *' '
		{ v[$1] = $2 }
		END { printf "%s: %s executions in %s s (%s/s), %s crashes, %s hangs, %s paths\n", r,
			v["execs_done"], v["run_time"], v["execs_per_sec"], v["saved_crashes"],
			v["saved_hangs"], v["corpus_count"] }' "$stats"
}

main()
{
	local role pids=()

	[ -x "$DRIVER" ] || die "$DRIVER not built: make -C tools/tsc-merge fuzz-build"
	command -v afl-fuzz >/dev/null || die "afl-fuzz missing: apt-get install afl++"
	make_seeds
	# All roles at once: the kernel shares the cores among them.
	for role in $ROLES; do
		fuzz_role "$role" &
		pids+=($!)
	done
	wait "${pids[@]}"
	for role in $ROLES; do
		report_role "$role"
	done
}

main
