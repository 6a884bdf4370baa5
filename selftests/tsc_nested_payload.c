// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_nested_payload: run a tiny guest that makes a ucall right after each
 * rdtsc, and write every value it reads into this kernel's trace_marker.
 *
 * Not a test: it checks nothing but that each exit of the guest is its report.
 * It is L2 of the end-to-end scenario nested (scripts/e2e/record-pair.sh,
 * scripts/e2e/guest-init.sh): run inside a guest
 * that is itself a KVM host, each ucall is a port write (libkvm's port
 * 0x1000) that exits to the outermost KVM first, so the outer host's trace
 * has an IO exit for every marker this program writes into the middle
 * guest's trace. A marker reads
 *
 *	ktt-n-marker cpu=C seq=K tsc=T
 *
 * with C the vCPU, K the marker's number on that vCPU and T the guest's
 * rdtsc, decimal. Half way, each vCPU's IA32_TSC jumps forward (KVM_SET_MSRS), so
 * that this kernel's KVM writes a new TSC offset between two markers; the
 * jump is written into the trace too, as "ktt-n-jump cpu=C from=X to=Y".
 * With -k, the guest's TSC runs at that rate (KVM_SET_TSC_KHZ, TSC
 * scaling), so that this kernel's KVM has a multiplier of its own for it.
 * The rate is the VM's, set before its vCPUs exist, so that each vCPU's
 * TSC starts at 0 at that rate: set on a vCPU afterwards, it would keep the
 * offset computed for this kernel's rate, and the guest's TSC would start
 * below 0, a wrap no trace of the guest's could hold in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tracefs/tracefs.h>

#include "kvm_util.h"
#include "processor.h"

#include "kvm_dev.h"
#include "tsc_guest.h"

#define MAX_VCPUS	16
#define DEFAULT_MARKERS	50
#define DEFAULT_JUMP	1000000000000ULL

static unsigned int nr_vcpus = 1;
static unsigned int nr_markers = DEFAULT_MARKERS;
static uint64_t tsc_jump = DEFAULT_JUMP;
/* The guest's TSC rate; 0: this kernel's own. */
static unsigned int tsc_khz;
/* trace_marker of the top-level buffer, or of the instance -i names. */
static int marker_fd = -1;

/* What one vCPU's thread saw, printed once all are done. */
struct vcpu_result {
	struct kvm_vcpu *vcpu;
	uint64_t first_tsc;
	uint64_t last_tsc;
	uint64_t jump_from;
	uint64_t jump_to;
};

/*
 * One write() a line, so that a line is one ftrace print event. With the
 * buffer's tracing_on at 0 the kernel refuses the write with EBADF.
 */
static void write_trace_line(const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int len, err;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	TEST_ASSERT(len > 0 && len < (int)sizeof(line), "marker line too long");
	/* errno saved: the assertion's own report changes it first. */
	err = write(marker_fd, line, len) == len ? 0 : errno;
	TEST_ASSERT(!err, "writing '%.*s' to trace_marker: %s%s", len - 1, line, strerror(err),
		    err == EBADF ? " (tracing_on is 0)" : "");
}

/*
 * While the vCPU waits in its ucall exit: the kernel's KVM writes a new
 * TSC offset, and the guest's next rdtsc is @tsc_jump ahead of its last.
 */
static void jump_tsc(struct vcpu_result *r)
{
	struct kvm_vcpu *vcpu = r->vcpu;
	uint64_t to;

	r->jump_from = vcpu_get_msr(vcpu, MSR_IA32_TSC);
	/* A local: vcpu_set_msr() declares an r of its own. */
	to = r->jump_from + tsc_jump;
	vcpu_set_msr(vcpu, MSR_IA32_TSC, to);
	r->jump_to = to;
	write_trace_line("ktt-n-jump cpu=%u from=%" PRIu64 " to=%" PRIu64 "\n",
			 vcpu->id, r->jump_from, r->jump_to);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu_result *r = arg;
	struct tsc_sample sample;
	uint64_t seq;

	for (seq = 0; seq < nr_markers; seq++) {
		if (tsc_jump && seq == nr_markers / 2)
			jump_tsc(r);
		tsc_guest_read(r->vcpu, &sample);
		write_trace_line("ktt-n-marker cpu=%u seq=%" PRIu64 " tsc=%" PRIu64 "\n",
				 r->vcpu->id, seq, sample.guest);
		if (!seq)
			r->first_tsc = sample.guest;
		r->last_tsc = sample.guest;
	}
	return NULL;
}

static void open_trace_marker(const char *instance_name)
{
	struct tracefs_instance *inst = NULL;
	char *path;

	if (instance_name) {
		TEST_ASSERT(tracefs_instance_exists(instance_name),
			    "no tracefs instance %s", instance_name);
		inst = tracefs_instance_alloc(NULL, instance_name);
		TEST_ASSERT(inst, "tracefs instance %s: %s", instance_name, strerror(errno));
	}
	path = tracefs_instance_get_file(inst, "trace_marker");
	TEST_ASSERT(path, "the path of trace_marker: %s", strerror(errno));
	marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	TEST_ASSERT(marker_fd >= 0, "opening %s: %s", path, strerror(errno));
	tracefs_put_tracing_file(path);
	tracefs_instance_free(inst);
}

static void usage(const char *name)
{
	printf("usage: %s [-v VCPUS] [-n MARKERS] [-j CYCLES] [-k KHZ] [-i INSTANCE]\n"
	       "  -v VCPUS     the guest's vCPUs, each run by a thread of its own (default 1, at most %d)\n"
	       "  -n MARKERS   markers per vCPU (default %d)\n"
	       "  -j CYCLES    each vCPU's IA32_TSC jumps forward by CYCLES after half its markers\n"
	       "               (default %llu; 0: no jump)\n"
	       "  -k KHZ       the guest's TSC rate, through TSC scaling (default this kernel's)\n"
	       "  -i INSTANCE  write into that tracefs instance's trace_marker, not the top-level one\n",
	       name, MAX_VCPUS, DEFAULT_MARKERS, DEFAULT_JUMP);
}

static unsigned long long parse_number(const char *opt, const char *arg, unsigned long long max)
{
	unsigned long long val;
	char *end;

	errno = 0;
	val = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || arg[0] == '-' || val > max) {
		fprintf(stderr, "-%s %s: give a number from 0 to %llu\n", opt, arg, max);
		exit(KSFT_FAIL);
	}
	return val;
}

int main(int argc, char *argv[])
{
	struct vcpu_result results[MAX_VCPUS] = {};
	struct kvm_vcpu *vcpus[MAX_VCPUS];
	pthread_t threads[MAX_VCPUS];
	const char *instance_name = NULL;
	int opt, err = kvm_dev_errno();
	struct vcpu_result *r;
	struct kvm_vm *vm;
	unsigned int i;

	while ((opt = getopt(argc, argv, "v:n:j:k:i:h")) != -1) {
		switch (opt) {
		case 'v':
			nr_vcpus = parse_number("v", optarg, MAX_VCPUS);
			break;
		case 'n':
			nr_markers = parse_number("n", optarg, 1000000);
			break;
		case 'j':
			tsc_jump = parse_number("j", optarg, 1ULL << 62);
			break;
		case 'k':
			tsc_khz = parse_number("k", optarg, UINT32_MAX);
			break;
		case 'i':
			instance_name = optarg;
			break;
		case 'h':
			usage(argv[0]);
			return 0;
		default:
			usage(argv[0]);
			return KSFT_FAIL;
		}
	}
	if (optind < argc || !nr_vcpus) {
		usage(argv[0]);
		return KSFT_FAIL;
	}
	__TEST_REQUIRE(!geteuid() && tracefs_tracing_dir(), "needs root and a mounted tracefs");
	__TEST_REQUIRE(!err, KVM_DEV_UNUSABLE, strerror(err));
	__TEST_REQUIRE(!tsc_khz || (kvm_has_cap(KVM_CAP_TSC_CONTROL) &&
				    kvm_has_cap(KVM_CAP_VM_TSC_CONTROL)),
		       "-k needs TSC scaling, which this kernel's KVM has not");
	open_trace_marker(instance_name);

	vm = vm_create(nr_vcpus);
	if (tsc_khz)
		vm_ioctl(vm, KVM_SET_TSC_KHZ, (void *)(unsigned long)tsc_khz);
	for (i = 0; i < nr_vcpus; i++)
		vcpus[i] = vm_vcpu_add(vm, i, tsc_guest_code);
	for (i = 0; i < nr_vcpus; i++) {
		results[i].vcpu = vcpus[i];
		err = pthread_create(&threads[i], NULL, vcpu_thread, &results[i]);
		TEST_ASSERT(!err, "creating vCPU %u's thread: %s", i, strerror(err));
	}
	for (i = 0; i < nr_vcpus; i++)
		pthread_join(threads[i], NULL);

	for (i = 0; i < nr_vcpus; i++) {
		r = &results[i];
		printf("cpu=%u: %u markers, guest tsc %" PRIu64 " .. %" PRIu64, i, nr_markers,
		       r->first_tsc, r->last_tsc);
		if (r->jump_to)
			printf(", IA32_TSC %" PRIu64 " -> %" PRIu64 " before seq=%u", r->jump_from,
			       r->jump_to, nr_markers / 2);
		printf("\n");
	}
	kvm_vm_free(vm);
	close(marker_fd);
	return 0;
}
