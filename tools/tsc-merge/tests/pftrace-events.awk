# pftrace-events.awk: the track events of a Perfetto trace, as protoc --decode prints it, one per line with names resolved.
#
#   protoc --decode=perfetto.protos.Trace --proto_path=proto perfetto_trace.proto <T.pftrace |
#       awk -f pftrace-events.awk
#
# prints, tab-separated: timestamp, machine id, track name, event type,
# event name, annotations ("name=value" joined by ";"); and one line
# "track<TAB>machine<TAB>uuid<TAB>name<TAB>parent name<TAB>kind" per track
# descriptor, kind being process, thread, counter or plain; and one line
# "ftrace<TAB>machine<TAB>cpu<TAB>timestamp<TAB>pid<TAB>event<TAB>fields"
# per event of an ftrace bundle, fields "name=value" joined by ";", a
# generic event's as a typed one's (value=V first on a counter); a track
# event's time and track as its sequence's defaults and incremental clock
# (a ClockSnapshot's clock marked is_incremental, its last time) give them; a
# compact_sched switch or waking as such a line, delta-decoded, its comm
# looked up, with no pid (the task its CPU's previous switch put on it) and
# fields "compact;prev_state=S;next_comm=C;next_pid=P;next_prio=R" or
# "compact;comm=C;pid=P;prio=R;target_cpu=T". Interned names
# are looked up per packet sequence, as Perfetto does; an iid
# that sequence never interned prints as "?iid".

function unquote(s) {
	sub(/^"/, "", s)
	sub(/"$/, "", s)
	gsub(/\\"/, "\"", s)
	gsub(/\\\\/, "\\", s)
	return s
}

# A time summed here, in full: mawk writes a number above 2^31 as %.6g.
function ns(t) {
	return sprintf("%.0f", t)
}

function reset_packet() {
	delete pk
	nftrace = 0
	delete ftrace_lines
	nann = 0
	delete ann_name
	delete ann_value
}

function lookup(table, seq, iid) {
	return ((seq, iid) in table) ? table[seq, iid] : "?" iid
}

function end_block(name,    seq) {
	if (name == "event_names")
		pending_names[blk["iid"]] = unquote(blk["name"])
	else if (name == "debug_annotation_names")
		pending_anames[blk["iid"]] = unquote(blk["name"])
	else if (name == "debug_annotations") {
		nann++
		ann_name[nann] = blk["name_iid"]
		ann_value[nann] = ("int_value" in blk) ? blk["int_value"] : blk["uint_value"]
	}
	delete blk
}

# An ftrace event closes before its packet's machine_id is read: kept.
function end_ftrace_event() {
	ftrace_lines[++nftrace] = pk["ftrace_events.cpu"] OFS ev["timestamp"] OFS ev["pid"] OFS \
		ev_name OFS ev_fields
	delete ev
	ev_name = ev_fields = ""
}

# A bundle's compact_sched, after its events: each array's entries in order.
function end_compact(    k, ts) {
	ts = 0
	for (k = 1; k <= cs_len["switch_timestamp"]; k++) {
		ts += cs["switch_timestamp", k]
		ftrace_lines[++nftrace] = pk["ftrace_events.cpu"] OFS ns(ts) OFS "" OFS "sched_switch" OFS \
			"compact;prev_state=" cs["switch_prev_state", k] ";next_comm=" \
			unquote(cs["intern_table", cs["switch_next_comm_index", k] + 1]) ";next_pid=" \
			cs["switch_next_pid", k] ";next_prio=" cs["switch_next_prio", k]
	}
	ts = 0
	for (k = 1; k <= cs_len["waking_timestamp"]; k++) {
		ts += cs["waking_timestamp", k]
		ftrace_lines[++nftrace] = pk["ftrace_events.cpu"] OFS ns(ts) OFS "" OFS "sched_waking" OFS \
			"compact;comm=" unquote(cs["intern_table", cs["waking_comm_index", k] + 1]) \
			";pid=" cs["waking_pid", k] ";prio=" cs["waking_prio", k] ";target_cpu=" \
			cs["waking_target_cpu", k]
	}
	delete cs
	delete cs_len
}

function add_ftrace_field(name, value) {
	ev_fields = ev_fields (ev_fields == "" ? "" : ";") name "=" unquote(value)
}

function end_packet(    seq, machine, k, args, name, kind) {
	seq = pk["trusted_packet_sequence_id"]
	machine = ("machine_id" in pk) ? pk["machine_id"] : 0
	for (k = 1; k <= nftrace; k++)
		print "ftrace", machine, ftrace_lines[k]
	if (pk["sequence_flags"] % 2) {
		for (k in names) { split(k, w, SUBSEP); if (w[1] == seq) delete names[k] }
		for (k in anames) { split(k, w, SUBSEP); if (w[1] == seq) delete anames[k] }
	}
	for (k in pending_names) names[seq, k] = pending_names[k]
	for (k in pending_anames) anames[seq, k] = pending_anames[k]
	delete pending_names
	delete pending_anames
	if ("track_descriptor.uuid" in pk) {
		name = ("track_descriptor.name" in pk) ? pk["track_descriptor.name"] : \
		       ("track_descriptor.thread.thread_name" in pk) ? pk["track_descriptor.thread.thread_name"] : \
		       ("track_descriptor.process.process_name" in pk) ? pk["track_descriptor.process.process_name"] : ""
		name = unquote(name)
		kind = ("track_descriptor.thread.tid" in pk) ? "thread" : \
		       ("track_descriptor.process.pid" in pk) ? "process" : \
		       ("track_descriptor.counter" in pk) ? "counter" : "plain"
		tracks[pk["track_descriptor.uuid"]] = name
		print "track", machine, pk["track_descriptor.uuid"], name, \
			tracks[pk["track_descriptor.parent_uuid"]], kind
	}
	if ("trace_packet_defaults.timestamp_clock_id" in pk)
		default_clock[seq] = pk["trace_packet_defaults.timestamp_clock_id"]
	if ("trace_packet_defaults.track_event_defaults.track_uuid" in pk)
		default_track[seq] = pk["trace_packet_defaults.track_event_defaults.track_uuid"]
	# Our snapshots give every clock one time: the last one's is the clock's.
	if (pk["clock_snapshot.clocks.is_incremental"] == "true")
		clock_at[seq, pk["clock_snapshot.clocks.clock_id"]] = pk["clock_snapshot.clocks.timestamp"]
	if (!("track_event.type" in pk))
		return
	if (!("track_event.track_uuid" in pk) && (seq in default_track))
		pk["track_event.track_uuid"] = default_track[seq]
	if (seq in default_clock && ((seq, default_clock[seq]) in clock_at))
		pk["timestamp"] = ns(clock_at[seq, default_clock[seq]] += pk["timestamp"])
	args = ""
	for (k = 1; k <= nann; k++) {
		args = args (k > 1 ? ";" : "") lookup(anames, seq, ann_name[k]) "=" ann_value[k]
	}
	if ("track_event.counter_value" in pk)
		args = "value=" pk["track_event.counter_value"] (args == "" ? "" : ";") args
	name = ("track_event.name_iid" in pk) ? lookup(names, seq, pk["track_event.name_iid"]) : ""
	print pk["timestamp"], machine, tracks[pk["track_event.track_uuid"]], \
		pk["track_event.type"], name, args
}

BEGIN {
	OFS = "\t"
	depth = 0
	reset_packet()
}

/^ *[a-z0-9_]+ \{$/ {
	stack[++depth] = $1
	if (depth == 1)
		reset_packet()
	path = ""
	for (i = 2; i <= depth; i++)
		path = path (i > 2 ? "." : "") stack[i]
	# An empty message is still present.
	if (depth > 1)
		pk[path] = 1
	next
}

/^ *\}$/ {
	if (depth == 1)
		end_packet()
	else if (depth == 3 && stack[2] == "ftrace_events" && stack[3] == "event")
		end_ftrace_event()
	else if (depth == 3 && stack[2] == "ftrace_events" && stack[3] == "compact_sched")
		end_compact()
	else if (depth == 5 && stack[2] == "ftrace_events")
		add_ftrace_field(unquote(gfield["name"]), gfield["value"])
	else if (stack[depth] ~ /^(event_names|debug_annotation_names|debug_annotations)$/)
		end_block(stack[depth])
	depth--
	next
}

/^ *[a-z0-9_]+: / {
	key = $1
	sub(/:$/, "", key)
	value = $0
	sub(/^ *[a-z0-9_]+: /, "", value)
	if (depth == 3 && stack[2] == "ftrace_events" && stack[3] == "compact_sched") {
		cs[key, ++cs_len[key]] = value
		next
	}
	if (depth >= 3 && stack[2] == "ftrace_events") {
		if (depth == 3)
			ev[key] = value
		else if (depth == 4 && key == "event_name")
			ev_name = unquote(value)
		else if (depth == 4)
			add_ftrace_field(key, value)
		else
			gfield[key == "name" ? "name" : "value"] = value
		# x86's self-described kvm_entry is our field kvm_entry_x86: the
		# event's name is its descriptor's, without the suffix.
		if (depth == 4 && stack[4] != "generic") {
			ev_name = stack[4]
			sub(/_x86$/, "", ev_name)
		}
		next
	}
	if (stack[depth] ~ /^(event_names|debug_annotation_names|debug_annotations)$/) {
		blk[key] = value
		next
	}
	path = ""
	for (i = 2; i <= depth; i++)
		path = path stack[i] "."
	pk[path key] = value
}
