# Makefile: top-level targets of kvm-tsc-trace; README.md says what each needs and prints.
#
#   make check   install what is missing, build everything, run every check
#   make demo    boot the patched kernel, show what the TSC events say and
#                merge a real host and guest trace with them

BUILD := $(CURDIR)/build
KDIR := $(BUILD)/kernel

all: kernel selftests module tools

deps:
	scripts/deps.sh

# Both scripts do nothing when their inputs have not changed.
kernel:
	scripts/kernel-tree.sh
	scripts/build-kernel.sh

selftests:
	$(MAKE) -C selftests install

# The in-tree KVM selftests (the series' own and upstream's) for the test VM.
kvm-selftests: kernel
	scripts/build-kvm-selftests.sh

# checkpatch, a build after every patch and sparse, on patches/.
series-check: kernel
	scripts/check-series.sh

module: kernel
	$(MAKE) -C module KDIR=$(KDIR)

# kvm-tsc-merge and the helpers of its tests, into build/tools.
tools:
	$(MAKE) -C tools

# Boot the test kernel and run the in-VM checks and the selftests.
vmtest: kernel kvm-selftests selftests module
	scripts/vmtest.sh sh scripts/vm-checks.sh

check:
	scripts/check.sh

demo: deps kernel kvm-selftests selftests tools
	scripts/vmtest.sh sh scripts/demo-guest.sh
	scripts/demo-merge.sh

clean:
	rm -rf $(BUILD)

.PHONY: all deps kernel selftests kvm-selftests series-check module tools vmtest check demo clean
