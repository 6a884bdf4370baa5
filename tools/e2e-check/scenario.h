/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scenario.h: one recording mode's scenario, as its .scenario file
 * (scripts/e2e/scenarios/) says it: the levels, their vCPUs, TSC rates,
 * TSC writes and markers, and which recorder runs at which level.
 */
#ifndef E2E_CHECK_SCENARIO_H
#define E2E_CHECK_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>

#define SCENARIO_WORD	32
/* vCPU ids index the checker's tables. */
#define MAX_VCPUS	64

struct scenario {
	char mode[SCENARIO_WORD];
	char l0_recorder[SCENARIO_WORD];
	char l0_record_from[SCENARIO_WORD];
	char l1_recorder[SCENARIO_WORD];
	char l1_record_from[SCENARIO_WORD];
	uint64_t l1_vcpus;
	uint64_t l1_mem_mb;
	uint64_t l1_tsc_khz;
	uint64_t l1_markers;
	uint64_t marker_port;
	uint64_t l1_tsc_jump;
	char l2_recorder[SCENARIO_WORD];
	uint64_t l2_vcpus;
	uint64_t l2_mem_mb;
	uint64_t l2_markers;
	uint64_t l2_tsc_jump;
	uint64_t l2_tsc_khz;
	uint64_t ucall_port;
	uint64_t l1_timeout;
	uint64_t l2_timeout;
	uint64_t silence;
};

/* Read @path into @s; on an error, a message naming the file and line in @err and -1. */
int scenario_load(struct scenario *s, const char *path, char *err, int err_size);

#endif
