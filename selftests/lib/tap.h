/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tap.h: TAP 13 output and kselftest exit codes shared by the kvm-tsc-trace
 * selftests.
 */
#ifndef KTT_TAP_H
#define KTT_TAP_H

#include <stdbool.h>
#include <stdint.h>

#define KSFT_PASS 0
#define KSFT_FAIL 1
#define KSFT_SKIP 4

void tap_plan(int count);
void tap_ok(bool passed, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tap_skip(const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tap_skip_all(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void tap_bail_out(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
bool tap_check_u64(uint64_t expected, uint64_t actual, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int tap_finish(void);

#endif
