// SPDX-License-Identifier: GPL-2.0
/*
 * kshark-times.c: load a host trace.dat and a guest trace.dat with libkshark,
 * as `kernelshark -i HOST -a GUEST` does, and print every entry of the
 * guest's stream as "TIME CPU EVENT", for the tests to compare with
 * kvm-tsc-merge's timeline.
 *
 * usage: kshark-times HOST.dat GUEST.dat
 */
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

int main(int argc, char **argv)
{
	struct kshark_context *ctx = NULL;
	struct kshark_entry **rows = NULL;
	ssize_t i, n;
	int host, guest;

	if (argc != 3) {
		fprintf(stderr, "usage: kshark-times HOST.dat GUEST.dat\n");
		return 2;
	}
	if (!kshark_instance(&ctx))
		return 1;
	host = open_stream(ctx, argv[1]);
	if (host < 0 || kshark_tep_init_all_buffers(ctx, host) < 0)
		return 1;
	guest = open_stream(ctx, argv[2]);
	if (guest < 0)
		return 1;
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
