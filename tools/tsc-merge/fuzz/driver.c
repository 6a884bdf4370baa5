// SPDX-License-Identifier: GPL-2.0
/*
 * driver.c: run kvm-tsc-merge's own main() on AFL++ inputs, many per
 * process (AFL++'s persistent mode), with the input as one trace.dat of a
 * merge or as the whole argument list:
 *
 *   driver host GUEST.dat [TIE]   the input is the host trace.dat
 *   driver guest HOST.dat [TIE]   the input is the guest trace.dat
 *   driver args                   the input is the argument list, NUL-separated
 *
 * TIE follows the guest's path: @PID[.N][,l2]. fuzz/roles.sh names the
 * fuzzing roles, each a side, a partner file and a tie, and gives the
 * command lines built here to the scripts that replay saved inputs with
 * the tool's own sanitizer build (tests/replay-fuzz.sh): keep them in step.
 *
 * A trace run writes every output at once (timeline with every column,
 * summary, JSON, Perfetto, --sync-out copies), so that the input reaches
 * each of them. Two checks turn a run that returns into a failure AFL++
 * counts (abort(), with a message saying why):
 *
 *  - the round trip: after a merge that exited 0, its --sync-out copies
 *    are merged again, the guest tied by the GUEST option of the host's
 *    copy instead of its pid, and must give the same timeline: copies
 *    that trace-cmd and KernelShark read but the tool itself refuses or
 *    places otherwise are a bug;
 *  - the memory bound: a merge may allocate at most MEM_PER_INPUT times
 *    the size of its input files, and MEM_FLOOR at least, so that an
 *    input that makes the tool allocate far beyond what it holds is a
 *    finding and not a pass.
 *
 * FUZZ_ROUND_TRIP=0 in the environment leaves the round trip out: a
 * known round-trip bug makes every seed of a role fail it, and AFL++
 * will not start from seeds that all crash.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sanitizer/allocator_interface.h>
#include <sanitizer/common_interface_defs.h>

int kvm_tsc_merge_main(int argc, char **argv);

#define MAX_ARGS	32
#define FIELDS		"time,source,cpu,task,comm,pid,event,info,guest_ts"
#define MEM_PER_INPUT	64
#define MEM_FLOOR	(64LL << 20)
/* An argument vector's argc: its entries but the closing NULL. */
#define ARGC(argv)	((int)(sizeof(argv) / sizeof((argv)[0])) - 1)

__AFL_FUZZ_INIT();

/* What a trace run works with: the partner and the files it writes. */
struct trace_run {
	bool input_is_host;
	const char *partner;
	const char *tie;		/* after the guest's path */
	const char *round_trip_tie;	/* after the guest copy's path */
	bool round_trip;		/* check it (FUZZ_ROUND_TRIP is not 0) */
	char dir[64];			/* this process's, under /dev/shm */
	char input[96];
	char timeline[96];
	char summary[96];
	char json[96];
	char perfetto[96];
	char sync[96];
	char timeline_again[96];
};

static struct trace_run run;

/*
 * The memory bound. ASan's allocator serves every malloc, the libraries'
 * too, and calls these hooks (its public interface) for each allocation
 * and free, in every thread: they count the bytes allocated, and a merge
 * that goes over its bound aborts at the allocation that crosses it, so
 * that the stack names the culprit. Requested bytes count, not RSS: the
 * amplifications found so far were gigabyte mallocs that a lazy kernel
 * never made resident. The other ways fail here: getrusage()'s peak RSS
 * only grows over a persistent process's thousand inputs, and a fork per
 * input gives up persistent mode; ASan's hard_rss_limit_mb and
 * malloc_limit_mb, like afl-fuzz -m (which ASan's shadow memory defeats,
 * hence -m none), are one fixed limit, not one per input size; and glibc's
 * mallinfo2() does not see ASan's allocator.
 */
static long long mem_in_use;		/* allocated less freed, since the hooks */
static long long mem_base;		/* mem_in_use when the merge started */
static long long mem_limit;		/* of this merge; 0: none running */

static void die_memory(long long used, long long limit)
{
	char msg[192];
	int len;

	/* No stdio: it may allocate, and this runs inside malloc. */
	len = snprintf(msg, sizeof(msg),
		       "driver: memory bound: the merge allocated %lld bytes, over its bound of %lld (%d times its input files, %lld at least)\n",
		       used, limit, MEM_PER_INPUT, MEM_FLOOR);
	if (write(STDERR_FILENO, msg, len) < 0)
		abort();
	__sanitizer_print_stack_trace();
	abort();
}

static void count_malloc(const volatile void *p, size_t size)
{
	long long used = __atomic_add_fetch(&mem_in_use, size, __ATOMIC_RELAXED) - mem_base;
	long long limit = __atomic_load_n(&mem_limit, __ATOMIC_RELAXED);

	if (limit && used > limit)
		die_memory(used, limit);
}

/* The hook runs before ASan checks the free: a double free is its to report. */
static void count_free(const volatile void *p)
{
	if (__sanitizer_get_ownership(p))
		__atomic_sub_fetch(&mem_in_use, __sanitizer_get_allocated_size(p),
				   __ATOMIC_RELAXED);
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_size;
}

static void bound_memory(long long input_bytes)
{
	long long limit = MEM_PER_INPUT * input_bytes;

	mem_base = __atomic_load_n(&mem_in_use, __ATOMIC_RELAXED);
	__atomic_store_n(&mem_limit, limit > MEM_FLOOR ? limit : MEM_FLOOR, __ATOMIC_RELAXED);
}

static void unbound_memory(void)
{
	__atomic_store_n(&mem_limit, 0, __ATOMIC_RELAXED);
}

/*
 * Each call is a run of its own: getopt starts over. The argument role's
 * files are whatever its input names, the seeds' at most 80 kB: its bound
 * is the floor (@input_bytes 0).
 */
static int merge(int argc, char **argv, long long input_bytes)
{
	int ret;

	optind = 0;
	bound_memory(input_bytes);
	ret = kvm_tsc_merge_main(argc, argv);
	unbound_memory();
	return ret;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_tree(const char *path)
{
	nftw(path, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void remove_work_dir(void)
{
	remove_tree(run.dir);
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* The process's own directory, for its input and every output. */
static void make_work_dir(void)
{
	struct trace_run *r = &run;

	snprintf(r->dir, sizeof(r->dir), "/dev/shm/kvm-tsc-merge-fuzz.%d", getpid());
	remove_tree(r->dir);
	if (mkdir(r->dir, 0700))
		die(r->dir);
	atexit(remove_work_dir);
	snprintf(r->input, sizeof(r->input), "%s/input.dat", r->dir);
	snprintf(r->timeline, sizeof(r->timeline), "%s/timeline.txt", r->dir);
	snprintf(r->summary, sizeof(r->summary), "%s/summary.txt", r->dir);
	snprintf(r->json, sizeof(r->json), "%s/trace.json", r->dir);
	snprintf(r->perfetto, sizeof(r->perfetto), "%s/trace.perfetto", r->dir);
	snprintf(r->sync, sizeof(r->sync), "%s/sync", r->dir);
	snprintf(r->timeline_again, sizeof(r->timeline_again), "%s/round-trip.txt", r->dir);
}

/* The input as a file, for libtracecmd, which reads trace.dat by path. */
static void write_input(const unsigned char *buf, size_t len)
{
	int fd = open(run.input, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
		die(run.input);
	close(fd);
}

/* --sync-out DIR/NAME for the input at .../NAME, as the tool names it. */
static void copy_path(char *buf, size_t size, const char *input)
{
	const char *base = strrchr(input, '/') ? strrchr(input, '/') + 1 : input;

	snprintf(buf, size, "%s/%s", run.sync, base);
}

/*
 * A nested guest keeps its pid: the tool needs it, and a GUEST option
 * names only the L1 guests. Any other guest of the round trip is tied by
 * the GUEST option of the host's copy.
 */
static const char *round_trip_tie(const char *tie)
{
	size_t len = strlen(tie);

	return len >= 3 && !strcmp(tie + len - 3, ",l2") ? tie : "";
}

static void fail_round_trip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "driver: round trip: merging the --sync-out copies in %s again (-g COPY%s) ",
		run.sync, run.round_trip_tie);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* The offset of the first byte where two files differ; -1: the same. */
static long long first_difference(const char *a, const char *b)
{
	FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
	long long off = 0;
	int ca, cb;

	if (!fa || !fb)
		fail_round_trip("left no timeline to compare");
	do {
		ca = getc_unlocked(fa);
		cb = getc_unlocked(fb);
		off++;
	} while (ca == cb && ca != EOF);
	fclose(fa);
	fclose(fb);
	return ca == cb ? -1 : off - 1;
}

/* The same command line as roles.sh's role_round_trip_argv. */
static void check_round_trip(const char *host, const char *guest)
{
	char host_copy[192], guest_copy[192], spec[256];
	char *argv[] = {
		"kvm-tsc-merge", "-q", "-k", "1000", "-o", run.timeline_again, "-F", FIELDS,
		"-H", host_copy, "-g", spec, NULL
	};
	long long diff;
	int ret;

	copy_path(host_copy, sizeof(host_copy), host);
	copy_path(guest_copy, sizeof(guest_copy), guest);
	snprintf(spec, sizeof(spec), "%s%s", guest_copy, run.round_trip_tie);
	ret = merge(ARGC(argv), argv, file_size(host_copy) + file_size(guest_copy));
	if (ret)
		fail_round_trip("was refused: exit status %d, where the first merge exited 0", ret);
	diff = first_difference(run.timeline, run.timeline_again);
	if (diff >= 0)
		fail_round_trip("gave another timeline: it differs from the first merge's from byte %lld",
				diff);
}

/* The same command line as roles.sh's role_argv, into a fresh sync dir. */
static int run_trace_role(void)
{
	const char *host = run.input_is_host ? run.input : run.partner;
	const char *guest = run.input_is_host ? run.partner : run.input;
	char spec[256];
	char *argv[] = {
		"kvm-tsc-merge", "-q", "-k", "1000", "-o", run.timeline, "-s", run.summary,
		"-j", run.json, "-p", run.perfetto, "-F", FIELDS, "-S", run.sync, "-f",
		"-H", (char *)host, "-g", spec, NULL
	};
	int ret;

	remove_tree(run.sync);
	if (mkdir(run.sync, 0700))
		die(run.sync);
	/* The tool parses the guest's argument in place: a new one each run. */
	snprintf(spec, sizeof(spec), "%s%s", guest, run.tie);
	ret = merge(ARGC(argv), argv, file_size(host) + file_size(guest));
	if (!ret && run.round_trip)
		check_round_trip(host, guest);
	return ret;
}

/* NUL-separated arguments; the tool's own name comes first. */
static int run_args_role(unsigned char *buf, size_t len)
{
	char *argv[MAX_ARGS + 2] = { "kvm-tsc-merge" };
	int argc = 1;
	size_t i = 0;

	while (i < len && argc <= MAX_ARGS) {
		argv[argc++] = (char *)buf + i;
		while (i < len && buf[i])
			i++;
		i++;
	}
	argv[argc] = NULL;
	return merge(argc, argv, 0);
}

/* driver host|guest PARTNER [TIE]; false: a usage error. */
static bool set_trace_role(int argc, char **argv)
{
	if (argc < 3 || argc > 4 || (strcmp(argv[1], "host") && strcmp(argv[1], "guest")))
		return false;
	run.input_is_host = !strcmp(argv[1], "host");
	run.partner = argv[2];
	run.tie = argc > 3 ? argv[3] : "";
	run.round_trip_tie = round_trip_tie(run.tie);
	run.round_trip = !getenv("FUZZ_ROUND_TRIP") || strcmp(getenv("FUZZ_ROUND_TRIP"), "0");
	return true;
}

int main(int argc, char **argv)
{
	static unsigned char copy[1 << 20];
	bool trace_role = set_trace_role(argc, argv);
	int ret = 0;

	if (!trace_role && !(argc == 2 && !strcmp(argv[1], "args"))) {
		fprintf(stderr, "usage: driver host GUEST.dat [TIE] | guest HOST.dat [TIE] | args\n");
		return 2;
	}
	if (!__sanitizer_install_malloc_and_free_hooks(count_malloc, count_free)) {
		fprintf(stderr, "driver: cannot install ASan's malloc hooks for the memory bound\n");
		return 2;
	}
	__AFL_INIT();
	/* After AFL++'s fork server has forked: the pid is this process's. */
	if (trace_role)
		make_work_dir();
	while (__AFL_LOOP(1000)) {
		size_t len = __AFL_FUZZ_TESTCASE_LEN;

		if (len > sizeof(copy) - 1)
			len = sizeof(copy) - 1;
		memcpy(copy, __AFL_FUZZ_TESTCASE_BUF, len);
		copy[len] = '\0';
		if (trace_role) {
			write_input(copy, len);
			ret = run_trace_role();
		} else {
			ret = run_args_role(copy, len);
		}
	}
	return ret;
}
