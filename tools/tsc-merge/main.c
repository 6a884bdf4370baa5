// SPDX-License-Identifier: GPL-2.0
/*
 * main.c: kvm-tsc-merge's command line: read the options, open and check
 * the inputs, scan the host trace, tie each guest trace to its VM, merge,
 * and write the timeline, the JSON, the annotated copies and the summary.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runfiles.h"
#include "merge/merge.h"

#define EXIT_BAD_INPUT	1
#define EXIT_USAGE	2
#define EXIT_OUTSIDE	3
#define DEFAULT_FIELDS	"time,source,cpu,task,event,info"
#define MAX_GUESTS	64

/* Long options without a short one. */
enum {
	OPT_SYNC_MAX_ERROR = 256,
	OPT_PROGRESS,
};

static const char usage_text[] =
"usage: kvm-tsc-merge [OPTION]... --host HOST.dat --guest [NAME=]GUEST.dat[@PID[.N]][,l2]...\n"
"\n"
"Merge a KVM host trace and guest traces, all recorded with the x86-tsc\n"
"clock (or trace-cmd's tsc2nsec, the same counts), into one timeline on the\n"
"host's clock. Every guest event is\n"
"converted exactly with the TSC offset and multiplier in force for its vCPU,\n"
"as the host's kvm_write_tsc_offset, kvm_write_tsc_multiplier and\n"
"kvm_nested_tsc_offset events tell, and checked to fall inside a host run\n"
"interval (kvm_entry to kvm_exit) of that vCPU.\n"
"\n"
"  -H, --host FILE        the host trace.dat (tools/record-host/record-host.sh records one)\n"
"  -g, --guest SPEC       a guest trace.dat: [NAME=]FILE[@PID[.N]][,l2]\n"
"                         NAME labels its events (default: the file name);\n"
"                         @PID ties it to the VM of that VMM process (.N: its\n"
"                         Nth VM); without it, the VM the host's GUEST option\n"
"                         names for the file's trace id (trace-cmd record -A),\n"
"                         else the one VM whose vCPU count matches the\n"
"                         file's CPUs; ,l2: a nested guest run by\n"
"                         that VM, converted with the L2 offsets (needs @PID)\n"
"  -o, --output FILE      write the text timeline to FILE (default: stdout)\n"
"  -n, --no-timeline      do not write the text timeline\n"
"  -F, --fields LIST      timeline columns, comma-separated, from time, source,\n"
"                         cpu, task, comm, pid, event, info, guest_ts\n"
"                         (default: " DEFAULT_FIELDS ")\n"
"  -j, --json FILE        also write Chrome trace-event JSON (needs --tsc-khz)\n"
"  -p, --perfetto FILE    also write a Perfetto protobuf trace (needs --tsc-khz)\n"
"  -s, --summary FILE     write the summary to FILE ('-': stdout)\n"
"  -S, --sync-out DIR     write copies of the host and guest files to DIR with\n"
"                         trace-cmd's time sync options set to these host\n"
"                         times, for trace-cmd report and KernelShark\n"
"      --sync-max-error TICKS  accept copies that put events trace-cmd\n"
"                         cannot place exactly up to TICKS host TSC ticks off\n"
"  -f, --force            let --sync-out replace files in DIR\n"
"  -k, --tsc-khz KHZ      host TSC rate: times in seconds; the JSON and Perfetto\n"
"                         outputs take it from the host file when it says it\n"
"                         (trace-cmd's TSC2NSEC, record-host.sh's snapshot)\n"
"      --progress         report progress on stderr (default: if a terminal)\n"
"  -q, --quiet            no progress\n"
"  -h, --help             this text\n"
"\n"
"Exit status: 0 merged; 1 bad input; 2 bad usage; 3 merged, but some guest\n"
"events fell outside every host run interval of their vCPU (marked '!'),\n"
"fit two TSC steps after the guest's TSC was set back (marked '?'), or came\n"
"out of host-time order, or some records were damaged (not printed).\n";

struct options {
	const char *host;
	struct guest guests[MAX_GUESTS];
	int nr_guests;
	const char *output;
	bool timeline;
	const char *fields;
	const char *json;
	const char *perfetto;
	const char *summary;
	const char *sync_out;
	unsigned long sync_max_error;
	bool force;
	unsigned long tsc_khz;		/* as given; 0: none */
	unsigned long file_khz;		/* -k, or what the host file says */
	int progress;			/* -1: when stderr is a terminal */
};

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "kvm-tsc-merge: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'kvm-tsc-merge --help'.\n");
	exit(EXIT_USAGE);
}

static bool parse_uint(const char *s, unsigned long *val)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*val = strtoul(s, &end, 10);
	return !errno && !*end;
}

/* The file name without its directory and its ".dat". */
static char *default_name(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t len = strlen(base);
	char *name;

	if (len > 4 && !strcmp(base + len - 4, ".dat"))
		len -= 4;
	name = xcalloc(len + 1, 1);
	memcpy(name, base, len);
	return name;
}

/* [NAME=]FILE[@PID[.N]][,l2], read from the right so FILE may hold '='. */
static void parse_guest(struct guest *g, char *spec)
{
	char *at, *eq, *dot, *comma = strrchr(spec, ',');
	unsigned long v;

	memset(g, 0, sizeof(*g));
	g->level = LEVEL_L1;
	if (comma && !strcmp(comma, ",l2")) {
		g->level = LEVEL_L2;
		*comma = '\0';
	}
	at = strrchr(spec, '@');
	if (at && !strchr(at, '/')) {
		*at++ = '\0';
		dot = strchr(at, '.');
		if (dot)
			*dot++ = '\0';
		if (!parse_uint(at, &v) || !v || v > INT32_MAX)
			die_usage("--guest: '%s' is not a VMM pid", at);
		g->want_pid = v;
		if (dot) {
			if (!parse_uint(dot, &v) || !v || v > INT32_MAX)
				die_usage("--guest: '%s' is not a VM number", dot);
			g->want_gen = v;
		}
	}
	eq = strchr(spec, '=');
	if (eq && !memchr(spec, '/', eq - spec)) {
		*eq = '\0';
		g->name = spec;
		g->file.path = eq + 1;
	} else {
		g->file.path = spec;
		g->default_name = default_name(spec);
		g->name = g->default_name;
	}
	if (!*g->name || !*g->file.path)
		die_usage("--guest: '%s' names no file", spec);
}

static void parse_options(struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "host", required_argument, NULL, 'H' },
		{ "guest", required_argument, NULL, 'g' },
		{ "output", required_argument, NULL, 'o' },
		{ "no-timeline", no_argument, NULL, 'n' },
		{ "fields", required_argument, NULL, 'F' },
		{ "json", required_argument, NULL, 'j' },
		{ "perfetto", required_argument, NULL, 'p' },
		{ "summary", required_argument, NULL, 's' },
		{ "sync-out", required_argument, NULL, 'S' },
		{ "sync-max-error", required_argument, NULL, OPT_SYNC_MAX_ERROR },
		{ "force", no_argument, NULL, 'f' },
		{ "tsc-khz", required_argument, NULL, 'k' },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	int c;

	*o = (struct options){ .timeline = true, .fields = DEFAULT_FIELDS, .progress = -1 };
	while ((c = getopt_long(argc, argv, "H:g:o:nF:j:p:s:S:fk:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'H':
			o->host = optarg;
			break;
		case 'g':
			if (o->nr_guests == MAX_GUESTS)
				die_usage("at most %s guest traces", "64");
			parse_guest(&o->guests[o->nr_guests++], optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'n':
			o->timeline = false;
			break;
		case 'F':
			o->fields = optarg;
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'p':
			o->perfetto = optarg;
			break;
		case 's':
			o->summary = optarg;
			break;
		case 'S':
			o->sync_out = optarg;
			break;
		case OPT_SYNC_MAX_ERROR:
			if (!parse_uint(optarg, &o->sync_max_error))
				die_usage("--sync-max-error: '%s' is not a number of host TSC ticks", optarg);
			break;
		case 'f':
			o->force = true;
			break;
		case 'k':
			if (!parse_uint(optarg, &o->tsc_khz) || !o->tsc_khz)
				die_usage("--tsc-khz: '%s' is not a rate in kHz", optarg);
			break;
		case OPT_PROGRESS:
			o->progress = 1;
			break;
		case 'q':
			o->progress = 0;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			die_usage("%s", "bad option");
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!o->host)
		die_usage("%s", "--host is required");
	if (!o->nr_guests)
		die_usage("%s", "at least one --guest is required");
	if (!text_fields_valid(o->fields))
		die_usage("--fields: '%s' is not a comma-separated list of time, source, cpu, task, comm, pid, event, info, guest_ts",
			  o->fields);
	if (o->progress < 0)
		o->progress = isatty(STDERR_FILENO);
}

static int open_guests(struct options *o)
{
	int i;

	for (i = 0; i < o->nr_guests; i++) {
		struct guest *g = &o->guests[i];
		const char *path = g->file.path;

		if (trace_file_open(&g->file, path))
			return -1;
		g->nr_cpus = trace_file_count_cpus(&g->file);
	}
	return 0;
}

static int tie_guests(struct options *o, struct trace_file *host, struct vm_table *vms)
{
	int i, errors = 0;

	for (i = 0; i < o->nr_guests; i++) {
		struct guest *g = &o->guests[i];
		unsigned int c;

		if (vm_table_tie_guest(vms, g, host) || guest_check_cpus(g, host)) {
			errors++;
			continue;
		}
		for (c = 0; g->level == LEVEL_L1 && c < g->vm->nr_vcpus; c++)
			vcpu_offset_from_time_shift(g->vm->vcpus[c], g);
		vcpus_check_known(o->guests[i].vm, host, &errors);
	}
	return errors ? -1 : 0;
}

/* The timeline's path; NULL: -n. */
static const char *timeline_path(const struct options *o)
{
	if (!o->timeline)
		return NULL;
	return o->output ? o->output : "-";
}

static void add_file(struct run_file *files, int *nr, const char *path, const char *opt,
		     const char *what, bool output)
{
	files[(*nr)++] = (struct run_file){ path, opt, what, output };
}

/* The inputs first: an output is checked against every file before it. */
static int list_files(const struct options *o, struct run_file *files, char **copies)
{
	const struct { const char *path, *opt, *what; } outputs[] = {
		{ timeline_path(o), "-o", "the timeline" },
		{ o->json, "-j", "the JSON output" },
		{ o->perfetto, "-p", "the Perfetto output" },
		{ o->summary, "-s", "the summary" },
	};
	int i, nr = 0;

	add_file(files, &nr, o->host, "-H", "the host trace", false);
	for (i = 0; i < o->nr_guests; i++)
		add_file(files, &nr, o->guests[i].file.path, "-g", "a guest trace", false);
	/*
	 * The summary is written once the other outputs are finished: it
	 * alone may follow one of them on standard output.
	 */
	for (i = 0; i < (int)ARRAY_SIZE(outputs); i++)
		if (outputs[i].path && !(outputs[i].path == o->summary && !strcmp(o->summary, "-")))
			add_file(files, &nr, outputs[i].path, outputs[i].opt, outputs[i].what, true);
	if (!o->sync_out)
		return nr;
	copies[0] = sync_copy_path(o->sync_out, o->host);
	add_file(files, &nr, copies[0], "--sync-out", "the host trace's copy", true);
	for (i = 0; i < o->nr_guests; i++) {
		copies[i + 1] = sync_copy_path(o->sync_out, o->guests[i].file.path);
		add_file(files, &nr, copies[i + 1], "--sync-out", "a guest trace's copy", true);
	}
	return nr;
}

/* No output may replace an input or another output: a usage error. */
static int check_files(const struct options *o)
{
	struct run_file files[2 * (1 + MAX_GUESTS) + 4];
	char *copies[1 + MAX_GUESTS] = { NULL };
	int i, ret;

	ret = check_run_files(files, list_files(o, files, copies));
	for (i = 0; i <= o->nr_guests; i++)
		free(copies[i]);
	return ret;
}

enum { OUT_TIMELINE, OUT_JSON, OUT_PERFETTO, OUT_SUMMARY, NR_OUTFILES };

struct outputs {
	struct outfile files[NR_OUTFILES];	/* indexed by OUT_* */
	struct sync_out *sync;
	struct sink_desc *desc;		/* the run as every sink sees it */
	struct sink sinks[4];
	int nr_sinks;
};

/* The options that name the outputs, for the error that lists those kept. */
static const char *const outfile_options[NR_OUTFILES] = { "-o", "-j", "-p", "-s" };

static void add_sink(struct outputs *out, const struct sink_ops *ops, void *priv)
{
	out->sinks[out->nr_sinks++] = (struct sink){ ops, priv };
}

/* Every output is opened before the merge, so a bad path costs no merge. */
static int open_outputs(struct options *o, struct trace_file *host, struct vm_table *vms,
			struct outputs *out)
{
	struct outfile *files = out->files;

	out->desc = describe_run(host, o->guests, o->nr_guests, vms);
	if (o->sync_out) {
		out->sync = sync_prepare(o->sync_out, o->force, o->sync_max_error, out->desc);
		if (!out->sync)
			return -1;
		add_sink(out, &sync_sink_ops, out->sync);
	}
	if (o->timeline) {
		if (outfile_open(&files[OUT_TIMELINE], timeline_path(o)))
			return -1;
		add_sink(out, &text_sink_ops,
			 text_sink_new(&(struct sink_out){ files[OUT_TIMELINE].f, out->desc, o->tsc_khz },
				       o->fields));
	}
	if (o->json) {
		if (outfile_open(&files[OUT_JSON], o->json))
			return -1;
		add_sink(out, &json_sink_ops,
			 json_sink_new(&(struct sink_out){ files[OUT_JSON].f, out->desc,
							    o->file_khz }));
	}
	if (o->perfetto) {
		if (outfile_open(&files[OUT_PERFETTO], o->perfetto))
			return -1;
		add_sink(out, &perfetto_sink_ops,
			 perfetto_sink_new(&(struct sink_out){ files[OUT_PERFETTO].f, out->desc,
								o->file_khz }));
	}
	if (o->summary && outfile_open(&files[OUT_SUMMARY], o->summary))
		return -1;
	return 0;
}

/* A run that failed says which of its outputs are complete and in place. */
static void say_kept(const struct outputs *out)
{
	int i, nr = 0;

	for (i = 0; i < NR_OUTFILES; i++) {
		if (!out->files[i].kept)
			continue;
		fprintf(stderr, "%s %s %s", nr++ ? "," : "kvm-tsc-merge: kept, complete:",
			outfile_options[i], out->files[i].path);
	}
	if (nr)
		fputc('\n', stderr);
}

/*
 * Finish every sink. A merge that failed completes no output, and the
 * paths the user named stay as they were; after a merge that succeeded,
 * an output that fails is dropped and the others that completed are kept.
 */
static int finish_outputs(struct options *o, struct outputs *out, struct trace_file *host,
			  struct vm_table *vms, const struct merge_stats *stats, bool failed)
{
	int i, ret = failed ? -1 : 0;

	for (i = 0; i < out->nr_sinks; i++)
		if (out->sinks[i].ops->finish)
			out->sinks[i].ops->finish(out->sinks[i].priv);
	if (failed) {
		outfiles_abort(out->files, NR_OUTFILES);
	} else {
		if (out->files[OUT_SUMMARY].f)
			summary_print(out->files[OUT_SUMMARY].f, host, vms, o->guests,
				      o->nr_guests, stats, o->file_khz);
		if (out->sync && (sync_write(out->sync) || sync_commit(out->sync)))
			ret = -1;
		if (outfiles_commit(out->files, NR_OUTFILES))
			ret = -1;
		if (ret)
			say_kept(out);
	}
	sync_free(out->sync);
	describe_free(out->desc);
	return ret;
}

/* What the timeline marks or leaves out, and of which files. */
static void warn_merge(const struct options *o, const struct trace_file *host,
		       const struct merge_stats *stats)
{
	int i;

	fprintf(stderr, "kvm-tsc-merge: %s", host->path);
	for (i = 0; i < o->nr_guests; i++)
		fprintf(stderr, "%s%s", i ? ", " : " with ", o->guests[i].file.path);
	fprintf(stderr, ": %llu guest events fell outside every host run interval of their vCPU (marked '!'), %llu fit more than one TSC step (marked '?'), %llu came out of order, %llu damaged records were not printed; see the summary\n",
		(unsigned long long)stats->outside, (unsigned long long)stats->ambiguous,
		(unsigned long long)stats->out_of_order, (unsigned long long)stats->damaged);
}

/*
 * Most of an L1 guest's events outside every run of its VM but inside the
 * runs of the VM's nested guest: a trace recorded inside L2, given
 * without ,l2.
 */
static void hint_nested(const struct options *o)
{
	char spec[32];
	int i;

	for (i = 0; i < o->nr_guests; i++) {
		const struct guest *g = &o->guests[i];

		if (g->outside_fit_l2 * 2 <= g->events)
			continue;
		guest_vm_spec(g, spec, sizeof(spec));
		fprintf(stderr, "kvm-tsc-merge: %s: %llu of its %llu events fall outside every run of VM %s but inside the runs of its nested guest (kvm_nested_tsc_offset): recorded inside that nested guest? Give it with ,l2: --guest %s=%s%s,l2\n",
			g->file.path, (unsigned long long)g->outside_fit_l2,
			(unsigned long long)g->events, spec, g->name, g->file.path, spec);
	}
}

/*
 * The host's TSC rate: -k, else trace-cmd's TSC2NSEC option (its tsc2nsec
 * clock), else record-host.sh's snapshot. The text timeline keeps TSC
 * ticks unless -k is given, so that it reads like the host's raw events.
 */
static int find_tsc_khz(struct options *o, const struct trace_file *host)
{
	o->file_khz = o->tsc_khz;
	if (!o->file_khz)
		o->file_khz = td_meta_tsc_khz(&host->meta);
	if (!o->file_khz)
		o->file_khz = host->snapshot_khz;
	if ((o->json || o->perfetto) && !o->file_khz) {
		fprintf(stderr, "kvm-tsc-merge: --json and --perfetto need the host's TSC rate, and %s does not say it (no TSC2NSEC option, no record-host.sh snapshot): give --tsc-khz, e.g. from 'tsc: Refined TSC clocksource calibration' in dmesg\n",
			host->path);
		return -1;
	}
	return 0;
}

static int run(struct options *o, struct trace_file *host, struct vm_table *vms)
{
	struct outputs out = { 0 };
	struct merge_stats stats;
	int ret;

	if (check_files(o))
		return EXIT_USAGE;
	if (trace_file_open(host, o->host) || open_guests(o) ||
	    scan_host(host, vms, o->progress) || tie_guests(o, host, vms) || find_tsc_khz(o, host))
		return EXIT_BAD_INPUT;
	if (open_outputs(o, host, vms, &out)) {
		finish_outputs(o, &out, host, vms, NULL, true);
		return EXIT_BAD_INPUT;
	}
	ret = merge_traces(host, o->guests, o->nr_guests, vms, out.desc, out.sinks,
			   out.nr_sinks, &stats, o->progress);
	if (finish_outputs(o, &out, host, vms, &stats, ret))
		return EXIT_BAD_INPUT;
	if (stats.outside || stats.ambiguous || stats.out_of_order || stats.damaged) {
		warn_merge(o, host, &stats);
		hint_nested(o);
		return EXIT_OUTSIDE;
	}
	return 0;
}

/* The fuzzing driver (fuzz/driver.c) calls this under another name. */
#ifndef TSC_MERGE_MAIN
#define TSC_MERGE_MAIN main
#endif

int TSC_MERGE_MAIN(int argc, char **argv)
{
	struct trace_file host = { 0 };
	struct options *o = xcalloc(1, sizeof(*o));
	struct vm_table *vms = vm_table_new();
	int i, ret;

	parse_options(o, argc, argv);
	/* Name the file in our own messages, not libtracecmd's. */
	tracecmd_set_loglevel(TEP_LOG_NONE);
	ret = run(o, &host, vms);
	for (i = 0; i < o->nr_guests; i++) {
		trace_file_close(&o->guests[i].file);
		free(o->guests[i].default_name);
	}
	trace_file_close(&host);
	vm_table_free(vms);
	free(o);
	return ret;
}
