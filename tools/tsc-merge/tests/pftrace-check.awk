# pftrace-check.awk: checks a Perfetto trace, as protoc --decode prints it, against what trace_processor's import of ftrace bundles and machines relies on.
#
#   protoc --decode=perfetto.protos.Trace --proto_path=proto perfetto_trace.proto <T.pftrace |
#       awk -f pftrace-check.awk [-v names=1]
#
# Written from Perfetto's import rules, independently of the sink:
#   - every ftrace bundle names its CPU, and its events' timestamps do not
#     go back (Perfetto sorts a CPU's events bundle by bundle);
#   - a packet sequence stays on one machine, and no sequence is 1 (the
#     service's own);
#   - every guest machine that has events is named: a track on it;
#   - every machine that has events, the host too, has a SystemInfo with
#     its machine_name (trace_processor's machine table);
#   - names=1: every pid an event runs in was named before, on its
#     machine (task_newtask, task_rename, sched_switch, sched_waking or
#     sched_wakeup, a thread track or a process tree's thread), as Perfetto
#     names threads from them;
#   - a bundle's compact_sched: its switch arrays of one length, its waking
#     arrays of one length, every comm index inside its intern_table, and
#     its times, delta-decoded, after every event of its CPU's earlier
#     bundles (trace_processor takes a compact switch's prev_* from the
#     CPU's switch before it); a compact switch names its next_pid.
# Prints each violation and a last line "ok BUNDLES EVENTS" or "FAILED N".

function fail(what) {
	print "line " NR ": " what
	failures++
}

function unquote(s) {
	sub(/^"/, "", s)
	sub(/"$/, "", s)
	return s
}

# A task's name and pid, as a typed event or a thread descriptor gives them.
function name_task(pid) {
	if (pid != "")
		named[machine_of_names, pid] = 1
}

function end_event() {
	if (ev["timestamp"] + 0 < last_ts)
		fail("a bundle's time goes back: " ev["timestamp"] " after " last_ts)
	last_ts = ev["timestamp"] + 0
	if (last_ts > bundle_max)
		bundle_max = last_ts
	events++
	# In order: an event names its tasks, then runs in its pid.
	for (k in task) pending[++npending] = "name " task[k]
	pending[++npending] = "run " ev["pid"]
	delete task
	delete ev
}

# A compact_sched block: its arrays checked, its events kept for the packet.
function end_compact(    kind, n, k, ts) {
	for (kind in cs_len)
		if (kind ~ /^switch_/ && cs_len[kind] != cs_len["switch_timestamp"] ||
		    kind ~ /^waking_/ && kind != "waking_common_flags" && cs_len[kind] != cs_len["waking_timestamp"])
			fail("compact_sched: " cs_len[kind] " " kind " beside " \
			     cs_len[substr(kind, 1, 7) "timestamp"] " timestamps")
	for (kind in cs_len) {
		if (kind !~ /_comm_index$/)
			continue
		for (k = 1; k <= cs_len[kind]; k++)
			if (cs[kind, k] + 0 >= cs_len["intern_table"] + 0)
				fail("compact_sched: " kind " " cs[kind, k] " outside an intern_table of " \
				     (cs_len["intern_table"] + 0))
	}
	split("switch waking", kinds, " ")
	for (n = 1; n <= 2; n++) {
		ts = 0
		for (k = 1; k <= cs_len[kinds[n] "_timestamp"]; k++) {
			ts += cs[kinds[n] "_timestamp", k]
			compact_ts[++ncompact] = ts
			if (kinds[n] == "switch")
				pending[++npending] = "name " cs["switch_next_pid", k]
		}
	}
	delete cs
	delete cs_len
}

function end_packet(    machine, seq, i, key) {
	machine = ("machine_id" in pk) ? pk["machine_id"] : 0
	seq = pk["trusted_packet_sequence_id"]
	if (seq == 1)
		fail("packet sequence 1 is the service's")
	if (seq != "" && (seq in seq_machine) && seq_machine[seq] != machine)
		fail("sequence " seq " on machines " seq_machine[seq] " and " machine)
	if (seq != "")
		seq_machine[seq] = machine
	if (pk["track"])
		machine_named[machine] = 1
	if (pk["machine_name"] != "")
		machine_info[machine] = 1
	machine_of_names = machine
	if (pk["tid"] != "")
		name_task(pk["tid"])
	# A bundle's machine_id follows its events: they are checked here.
	for (i = 1; i <= npending; i++) {
		split(pending[i], w, " ")
		if (w[1] == "name")
			name_task(w[2])
		else if (names && w[2] != 0 && !((machine, w[2]) in named))
			fail("machine " machine ": pid " w[2] " runs unnamed")
	}
	if (pk["bundle"]) {
		bundles++
		if (pk["cpu"] == "")
			fail("a bundle without its CPU")
		if (machine)
			used_machine[machine] = 1
		bundle_machine[machine] = 1
		key = machine SUBSEP pk["cpu"]
		for (i = 1; i <= ncompact; i++)
			if ((key in cpu_max) && compact_ts[i] <= cpu_max[key])
				fail("machine " machine " CPU " pk["cpu"] ": a compact event at " compact_ts[i] \
				     " not after " cpu_max[key] ", an earlier bundle's")
		for (i = 1; i <= ncompact; i++)
			if (compact_ts[i] > bundle_max)
				bundle_max = compact_ts[i]
		if (!(key in cpu_max) || bundle_max > cpu_max[key])
			cpu_max[key] = bundle_max
		events += ncompact
	}
	ncompact = 0
	bundle_max = 0
	delete pk
	npending = 0
}

BEGIN { depth = 0 }

/^ *[a-z0-9_]+ \{$/ {
	stack[++depth] = $1
	if (depth == 2 && $1 == "ftrace_events") {
		pk["bundle"] = 1
		last_ts = 0
	}
	if (depth == 2 && $1 == "track_descriptor")
		pk["track"] = 1
	next
}

/^ *\}$/ {
	if (depth == 1)
		end_packet()
	else if (depth == 3 && stack[2] == "ftrace_events" && stack[3] == "event")
		end_event()
	else if (depth == 3 && stack[2] == "ftrace_events" && stack[3] == "compact_sched")
		end_compact()
	depth--
	next
}

/^ *[a-z0-9_]+: / {
	key = $1
	sub(/:$/, "", key)
	value = unquote($2)
	if (depth == 1)
		pk[key] = value
	else if (depth == 2 && stack[2] == "ftrace_events" && key == "cpu")
		pk["cpu"] = value
	else if (depth == 3 && stack[2] == "ftrace_events" && stack[3] == "compact_sched")
		cs[key, ++cs_len[key]] = value
	else if (depth == 3 && stack[2] == "ftrace_events" && stack[3] == "event")
		ev[key] = value
	else if (depth == 2 && stack[2] == "system_info" && key == "machine_name")
		pk["machine_name"] = value
	else if (depth == 3 && stack[3] ~ /^(thread|threads)$/ && key == "tid")
		pk["tid"] = value
	else if (depth == 4 && stack[4] ~ /^(task_newtask|task_rename|sched_waking|sched_wakeup)$/ && key == "pid")
		task[key] = value
	else if (depth == 4 && stack[4] == "sched_switch" && key ~ /^(prev|next)_pid$/)
		task[key] = value
}

END {
	for (m in used_machine)
		if (!(m in machine_named))
			fail("machine " m " has events but no name")
	for (m in bundle_machine)
		if (!(m in machine_info))
			fail("machine " m " has events but no SystemInfo naming it")
	if (failures)
		print "FAILED " failures
	else
		print "ok " bundles " " events
	exit failures != 0
}
