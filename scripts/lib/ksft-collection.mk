# SPDX-License-Identifier: GPL-2.0
# ksft-collection.mk: what the kernel tree's lib.mk needs from a kselftest collection outside the tree, and a run_tests that fails when a test does.
#
# selftests/ and module/tests/ include it before anything uses KSRC, and
# set their COLLECTION (lib.mk's emit_tests names them by it) and OUTPUT
# (which lib.mk would otherwise set to the source directory) themselves.

# The project's root, from where this file lies, now: MAKEFILE_LIST grows
# with each include. KSRC is by default the tree its build unpacks and patches.
ktt_root := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))../..)
KSRC ?= $(ktt_root)/build/linux
ifeq ($(wildcard $(KSRC)/tools/testing/selftests/lib.mk),)
$(error KSRC=$(KSRC) is not a kernel tree with tools/testing/selftests/lib.mk: set KSRC)
endif

# For the include of lib.mk, which then sets top_srcdir again from where
# it lies: the same tree.
top_srcdir := $(KSRC)

# lib.mk's run_tests, with an exit status: 6.12's run_many returns that of
# its last `wait`, 0 whatever the tests did, so a CI could not tell. The
# runner's TAP goes through unchanged and into KSFT_RUN_LOG; the run fails
# unless every test it planned has a top-level result and none is "not ok"
# (a skip is "ok ... # SKIP"; a test's own lines are "# "-prefixed).
# ksft_run(BASE_DIR, TESTS): runner.sh from BASE_DIR/kselftest, TESTS from
# the current directory, as lib.mk's RUN_TESTS does.
KSFT_RUN_LOG = $(OUTPUT)/run_tests.tap
define ksft_run
	BASE_DIR="$(1)";						\
	. "$(1)/kselftest/runner.sh";					\
	if [ "X$(summary)" != "X" ]; then				\
		per_test_logging=1;					\
	fi;								\
	mkdir -p "$(dir $(KSFT_RUN_LOG))";				\
	run_many $(2) | tee "$(KSFT_RUN_LOG)";				\
	awk '/^1\.\.[0-9]+$$/ { plan = substr($$0, 4) + 0; planned = 1 } \
	     /^ok / { n++ }						\
	     /^not ok / { n++; failed++ }				\
	     END {							\
		if (failed)						\
			printf "run_tests: %d of %d tests failed\n", failed, plan; \
		else if (!planned || n != plan)			\
			printf "run_tests: %d results for %d tests\n", n, plan; \
		exit (failed || !planned || n != plan)		\
	     }' "$(KSFT_RUN_LOG)" >&2
endef

override define RUN_TESTS
	$(call ksft_run,$(selfdir),$(1))
endef
