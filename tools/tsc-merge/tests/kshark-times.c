// SPDX-License-Identifier: GPL-2.0
/*
 * kshark-times.c: load a host trace.dat and a guest trace.dat with libkshark,
 * as `kernelshark -i HOST -a GUEST` does, and print every entry of the
 * guest's stream as "TIME CPU EVENT", for the tests to compare with
 * kvm-tsc-merge's timeline; with --combo, check what KernelShark's KVM
 * combo plot needs instead: libkshark's host/guest mapping, and in the host
 * stream that mapping names, each vCPU thread's kvm_entry and kvm_exit.
 *
 * usage: kshark-times [--combo] HOST.dat GUEST.dat
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libkshark.h>
#include <libkshark-tepdata.h>

static int open_stream(struct kshark_context *ctx, const char *path)
{
	int sd = kshark_open(ctx, path);

	if (sd < 0)
		fprintf(stderr, "kshark-times: libkshark cannot open %s\n", path);
	return sd;
}

/* "system/event" of @e is kvm/@name. */
static bool is_kvm_event(struct kshark_entry *e, const char *name)
{
	char *event = kshark_get_event_name(e);
	bool yes = event && !strncmp(event, "kvm/", 4) && !strcmp(event + 4, name);

	free(event);
	return yes;
}

/*
 * One line per guest vCPU: "vcpu N tid T stream S kvm_entry E kvm_exit X";
 * fails when libkshark maps no guest or a vCPU thread has no entry or exit
 * in the host stream the mapping names.
 */
static int check_combo(struct kshark_context *ctx)
{
	struct kshark_host_guest_map *map = NULL;
	struct kshark_entry **rows = NULL;
	int nr_maps, m, c, bad = 0;
	ssize_t i, n;

	nr_maps = kshark_tracecmd_get_hostguest_mapping(&map);
	if (nr_maps <= 0) {
		fprintf(stderr, "kshark-times: libkshark finds no host/guest mapping\n");
		return 1;
	}
	for (m = 0; m < nr_maps; m++) {
		n = kshark_load_entries(ctx, map[m].host_id, &rows);
		for (c = 0; c < map[m].vcpu_count; c++) {
			long entries = 0, exits = 0;

			for (i = 0; i < n; i++) {
				if (rows[i]->pid != map[m].cpu_pid[c])
					continue;
				entries += is_kvm_event(rows[i], "kvm_entry");
				exits += is_kvm_event(rows[i], "kvm_exit");
			}
			printf("%s vcpu %d tid %d stream %d kvm_entry %ld kvm_exit %ld\n",
			       map[m].guest_name, c, map[m].cpu_pid[c], map[m].host_id, entries, exits);
			bad += !entries || !exits;
		}
		for (i = 0; i < n; i++)
			free(rows[i]);
		free(rows);
	}
	kshark_tracecmd_free_hostguest_map(map, nr_maps);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct kshark_context *ctx = NULL;
	struct kshark_entry **rows = NULL;
	bool combo = argc == 4 && !strcmp(argv[1], "--combo");
	ssize_t i, n;
	int host, guest, ret;

	if (argc != 3 && !combo) {
		fprintf(stderr, "usage: kshark-times [--combo] HOST.dat GUEST.dat\n");
		return 2;
	}
	argv += combo;
	if (!kshark_instance(&ctx))
		return 1;
	host = open_stream(ctx, argv[1]);
	if (host < 0 || kshark_tep_init_all_buffers(ctx, host) < 0)
		return 1;
	guest = open_stream(ctx, argv[2]);
	if (guest < 0)
		return 1;
	if (combo) {
		ret = check_combo(ctx);
		kshark_free(ctx);
		return ret;
	}
	n = kshark_load_entries(ctx, guest, &rows);
	if (n < 0) {
		fprintf(stderr, "kshark-times: libkshark cannot load the entries of %s\n", argv[2]);
		return 1;
	}
	for (i = 0; i < n; i++) {
		char *name = kshark_get_event_name(rows[i]);
		/* "system/event": the timeline names the event alone. */
		char *event = name && strchr(name, '/') ? strchr(name, '/') + 1 : name;

		printf("%lld %d %s\n", (long long)rows[i]->ts, rows[i]->cpu, event ? event : "?");
		free(name);
		free(rows[i]);
	}
	free(rows);
	kshark_free(ctx);
	return 0;
}
