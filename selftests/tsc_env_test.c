// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_env_test: what the events and this suite rely on in the running
 * kernel: kvm_write_tsc_offset's format as in unpatched 6.12, the contract's
 * fields in each TSC event, tracefs instances with the x86-tsc clock, and a
 * vendor module with nested virtualization enabled.
 */
#include <limits.h>

#include "tsc_fixture.h"

/*
 * Read from a boot of the unpatched 6.12.117 test kernel: the series must
 * not change it. runner.sh runs the test from the directory it is
 * installed in, next to this file.
 */
#define REF_FORMAT "kvm_write_tsc_offset.format"
#define MAX_LINE 512

/*
 * The next line of @f but an ID line, false at the end. Event IDs are not
 * ABI (the contract): the format stays "byte-identical" if every other line
 * is, which lets a kernel that numbers its events differently, like the
 * debug kernel, pass.
 */
static bool read_format_line(FILE *f, char *line)
{
	while (fgets(line, MAX_LINE, f))
		if (strncmp(line, "ID:", strlen("ID:")))
			return true;
	return false;
}

static FILE *open_event_format(struct __test_metadata *_metadata, const char *event)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/events/%s/%s/format", tracefs_tracing_dir(),
		 TSC_EVENT_SYSTEM, event);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f) TH_LOG("cannot open %s: %s", path, strerror(errno));
	return f;
}

TEST(offset_format_unchanged)
{
	char expected[MAX_LINE], seen[MAX_LINE];
	bool more_expected, more_seen;
	const char *unusable = tsc_event_unusable(_metadata, TSC_OFFSET_EVENT);
	FILE *ref, *format;
	int line;

	if (unusable)
		SKIP(return, "%s", unusable);
	ref = fopen(REF_FORMAT, "r");
	ASSERT_NE(NULL, ref) TH_LOG("cannot open %s: %s", REF_FORMAT, strerror(errno));
	format = open_event_format(_metadata, TSC_OFFSET_EVENT);

	for (line = 1;; line++) {
		more_expected = read_format_line(ref, expected);
		more_seen = read_format_line(format, seen);
		ASSERT_EQ(more_expected, more_seen)
			TSC_LOG_RULE(TSC_RULE_OFFSET_FORMAT_UNCHANGED,
				     "line %d (ID aside): one format ends before the other", line);
		if (!more_expected)
			break;
		EXPECT_STREQ(expected, seen)
			TSC_LOG_RULE(TSC_RULE_OFFSET_FORMAT_UNCHANGED,
				     "line %d (ID aside) differs from %s", line, REF_FORMAT);
	}
	fclose(format);
	fclose(ref);
}

/* The event's own fields: names, sizes, signedness and order, no more. */
static void check_contract_fields(struct __test_metadata *_metadata, enum tsc_event_kind kind)
{
	const struct tsc_event_type *type = &tsc_event_types[kind];
	const char *unusable = tsc_event_unusable(_metadata, type->name);
	struct tep_format_field **fields;
	unsigned int i;

	if (unusable)
		SKIP(return, "%s", unusable);
	fields = trace_kvm_event_fields(type->name);
	ASSERT_NE(NULL, fields) TH_LOG("cannot parse the format of kvm:%s", type->name);

	for (i = 0; i < type->nr_fields; i++) {
		ASSERT_NE(NULL, fields[i])
			TSC_LOG_RULE(TSC_RULE_CONTRACT_FIELDS,
				     "kvm:%s: %u fields, the contract has %u", type->name, i,
				     type->nr_fields);
		EXPECT_STREQ(type->fields[i].name, fields[i]->name)
			TSC_LOG_RULE(TSC_RULE_CONTRACT_FIELDS, "kvm:%s: field %u", type->name, i);
		EXPECT_EQ((int)type->fields[i].size, fields[i]->size)
			TSC_LOG_RULE(TSC_RULE_CONTRACT_FIELDS, "kvm:%s: size of %s", type->name,
				     fields[i]->name);
		EXPECT_EQ(type->fields[i].is_signed, !!(fields[i]->flags & TEP_FIELD_IS_SIGNED))
			TSC_LOG_RULE(TSC_RULE_CONTRACT_FIELDS, "kvm:%s: signedness of %s",
				     type->name, fields[i]->name);
	}
	EXPECT_EQ(NULL, fields[i])
		TSC_LOG_RULE(TSC_RULE_CONTRACT_FIELDS, "kvm:%s: more fields than the contract's %u",
			     type->name, type->nr_fields);
	free(fields);
}

TEST(offset_fields)
{
	check_contract_fields(_metadata, TSC_OFFSET);
}

TEST(multiplier_fields)
{
	check_contract_fields(_metadata, TSC_MULTIPLIER);
}

TEST(nested_fields)
{
	check_contract_fields(_metadata, TSC_NESTED);
}

TEST(x86_tsc_instance)
{
	char name[TSC_INSTANCE_NAME_MAX], dir[PATH_MAX], *inst_dir;
	const char *unusable = tsc_tracefs_unusable();
	struct tracefs_instance *inst;
	int ret;

	if (unusable)
		SKIP(return, "%s", unusable);
	snprintf(name, sizeof(name), TSC_INSTANCE_FMT, tsc_harness_pid, getpid());
	inst = tracefs_instance_create(name);
	ASSERT_NE(NULL, inst) TH_LOG("cannot create tracefs instance %s: %s", name,
				     strerror(errno));
	inst_dir = tracefs_instance_get_dir(inst);
	ASSERT_NE(NULL, inst_dir);
	snprintf(dir, sizeof(dir), "%s", inst_dir);
	tracefs_put_tracing_file(inst_dir);

	ret = _trace_set_clock(inst, TRACE_TSC_CLOCK);
	EXPECT_EQ(0, ret) TH_LOG("cannot write %s to trace_clock: %s", TRACE_TSC_CLOCK,
				 strerror(-ret));
	EXPECT_TRUE(trace_clock_is(inst, TRACE_TSC_CLOCK));
	ret = _trace_instance_remove(inst);
	ASSERT_EQ(0, ret) TH_LOG("cannot remove %s: %s", dir, strerror(-ret));
	ret = access(dir, F_OK) ? errno : 0;
	EXPECT_EQ(ENOENT, ret) TH_LOG("%s is still there after its removal", dir);
}

/* Y or 1 in /sys/module/@module/parameters/nested. */
static bool nested_enabled(const char *module)
{
	char path[PATH_MAX], value[8] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/nested", module);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(value, sizeof(value), f))
		value[0] = '\0';
	fclose(f);
	return value[0] == 'Y' || value[0] == '1';
}

TEST(vendor_module_nested)
{
	const char *module = kvm_vendor_module();

	if (!module) {
		ASSERT_FALSE(tsc_on_test_kernel()) TH_LOG("the test kernel loaded no vendor module");
		SKIP(return, "neither kvm_amd nor kvm_intel is loaded");
	}
	ASSERT_TRUE(nested_enabled(module)) TH_LOG("%s has nested=0 or no nested parameter", module);
}

TEST_HARNESS_MAIN
