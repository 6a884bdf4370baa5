# Makefile: the build graph of kvm-tsc-trace and its top-level targets; Documentation/checks.md says what each runs and prints.
#
#   make check   install what is missing, build everything, run every test
#                and close with one line "N passed, N failed, N skipped"
#   make demo    boot the patched kernel, show what the TSC events say, and
#                merge a real host and guest trace with them
#
# Builds are files under build/ with their real prerequisites, so a change
# rebuilds what depends on it and nothing else, and -j is safe; the
# kselftest collections and the tools are built by their own Makefiles,
# which make enters every time.
# KSRC=/path/to/linux patches and builds a user's own clean git tree instead
# of Debian's linux-source-6.12; make apply and make kernel-config patch and
# configure it for the user's own build.

BUILD := $(CURDIR)/build
TREE := $(or $(KSRC),$(BUILD)/linux)
RESULTS := $(BUILD)/results
# Where the kselftest collections are installed side by side, with
# kselftest's run_kselftest.sh: what the test VMs run.
KSFT := $(BUILD)/selftests-install
NPROC := $(shell nproc)
# kbuild records CC in every .cmd file: ccache, looked for when a kernel is
# built (after deps installed it), so that the choice never changes.
KCC = $(if $(shell command -v ccache),ccache gcc,gcc)
# ccache's keys without this checkout's path, so that another clone of the
# repository (CI's) reuses the objects: kbuild names sources by absolute
# path, and its -fmacro-prefix-map takes that path out of the objects.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_IGNOREOPTIONS := -fmacro-prefix-map=*
# The patches in the order they are applied (patches/series names the
# sub-series: the fixes, then the tracing series), and the series files.
SERIES := $(addprefix patches/,$(shell bash -c '. scripts/lib/common.sh && series_patches'))
SERIES_FILES := patches/series $(filter-out patches/6.1/series,$(wildcard patches/*/series))
MODULE_SRCS := module/Kbuild module/Makefile $(wildcard module/*.c module/*.h include/tsc_event_names.h)
# The in-tree KVM selftests the VMs run: the series' own tests (the events,
# and the reproducers of the bugs the fixes series fixes), and upstream
# tests whose pass shows the series breaks nothing around the TSC and nested
# SVM (under QEMU) or nested VMX and TSC scaling (under Bochs). Each skips
# in the VM without its vendor. Left out: vmx_preemption_timer_test and
# tsc_scaling_sync, because a VMX guest spinning with interrupts off
# livelocks Bochs 2.7; state_test, because under TCG it can fail before any
# nested or TSC step, which says nothing about the series.
KVM_TESTS := x86_64/tsc_tracepoint_test x86_64/nested_tsc_restore_test \
	x86_64/tsc_msrs_test x86_64/kvm_clock_test \
	x86_64/svm_vmcall_test x86_64/svm_nested_shutdown_test \
	x86_64/vmx_tsc_adjust_test x86_64/vmx_nested_tsc_scaling_test \
	x86_64/vmx_close_while_nested_test x86_64/vmx_set_nested_state_test
# What `make check` runs, each leaving its TAP in $(RESULTS)/NAME.tap.
# Listing the longest VM runs first made the run slower (2,319 s against
# 2,143 s): the two longest QEMU runs then ran side by side, in 743 s and
# 1,026 s, against 636 s and 741 s each beside a Bochs run.
CHECKS := shellcheck tools fuzz-replay series kernel-tree user-kernel run-tests-exit module-build \
	vm-debian-6.1 vm-debian-6.12 vmtest e2e-hang vm-vmx merge-e2e-vmx vm-debug merge-e2e \
	merge-e2e-debian-6.1 merge-e2e-debian-6.12 merge-e2e-debian-vmx vm-debian-6.1-vmx vm-debian-6.12-vmx
# kvm_tsc_probe's churn test: load/unload cycles, then VMs with it loaded.
CHURN := 1000 10000
DEBUG_CHURN := 100 1000

all: kernel module selftests tools

# Every package group (make check and make demo use them all), or one:
# build for a user's kernel, tools for kvm-tsc-merge (scripts/build/deps.sh).
deps:
	scripts/build/deps.sh

deps-build deps-tools:
	scripts/build/deps.sh $(@:deps-%=%)

# A user's own kernel (Documentation/own-kernel.md): the series applied to
# KSRC, a git tree with git am or a plain one with patch; Kconfig.snippet
# merged into BASE_CONFIG (default KSRC's .config, else the running
# kernel's) as O/.config (default KSRC/.config).
apply:
	KSRC="$(KSRC)" scripts/build/apply.sh

kernel-config: deps-build
	KSRC="$(KSRC)" BASE_CONFIG="$(BASE_CONFIG)" O="$(O)" scripts/build/user-config.sh

# kvm-tsc-merge, its manual page and the recorder, kvm-tsc-record, into
# $(DESTDIR)$(PREFIX) (PREFIX default /usr/local; tools/Makefile).
install: deps-tools
	+$(MAKE) -C tools install

uninstall:
	+$(MAKE) -C tools uninstall

# kernel-tree.sh puts the tree back at its base and applies the series,
# again when the series, Debian's source package or a KSRC tree's HEAD
# (whose reflog git appends to) moves.
TREE_INPUTS := $(if $(KSRC),$(wildcard $(KSRC)/.git/logs/HEAD),$(wildcard /usr/src/linux-source-6.12.tar.xz))
$(BUILD)/series.applied: $(SERIES_FILES) $(SERIES) scripts/build/kernel-tree.sh $(TREE_INPUTS) | deps
	KSRC=$(KSRC) scripts/build/kernel-tree.sh
	@touch $@

# kernel_rules(OUT, MODULE_OUT, FRAGMENTS): one variant of the test kernel,
# its modules installed in OUT/modroot, and this project's two modules
# (kvm_tsc_probe, test_kvm_tsc) built for it.
# kbuild leaves bzImage alone when nothing changed: touch it for make.
define kernel_rules
$(1)/.config: Kconfig.snippet $(3) scripts/build/kernel-config.sh $(BUILD)/series.applied
	+scripts/build/kernel-config.sh $(TREE) $(1) $(abspath Kconfig.snippet $(3))

$(1)/arch/x86/boot/bzImage: $(1)/.config
	+$(MAKE) -C $(TREE) O=$(1) CC="$(KCC)" bzImage modules >$(1)/build.log 2>&1 || \
		{ tail -20 $(1)/build.log; echo "kernel build failed: $(1)/build.log"; exit 1; }
	rm -rf $(1)/modroot
	+$(MAKE) -s -C $(TREE) O=$(1) INSTALL_MOD_PATH=$(1)/modroot INSTALL_MOD_STRIP=1 modules_install
	touch $$@

$(2)/kvm_tsc_probe.ko $(2)/test_kvm_tsc.ko &: $(MODULE_SRCS) $(1)/arch/x86/boot/bzImage
	+$(MAKE) -C module KDIR=$(1) OUT=$(2)
	touch $(2)/kvm_tsc_probe.ko $(2)/test_kvm_tsc.ko
endef
$(eval $(call kernel_rules,$(BUILD)/kernel,$(BUILD)/module,configs/qemu.config))
$(eval $(call kernel_rules,$(BUILD)/kernel-debug,$(BUILD)/module-debug,configs/qemu.config configs/debug.config))

kernel: $(BUILD)/kernel/arch/x86/boot/bzImage
module: $(BUILD)/module/kvm_tsc_probe.ko

# The series' KVM modules for an installed distribution kernel (KVER,
# default the running one), built from its headers (KHEADERS, default
# /lib/modules/KVER/build) and the kernel's own source with the series: the
# packaged tree (for a 6.1 kernel, Debian's 6.1 with patches/6.1), or KSRC
# as it is (make apply first), into build/kvm-modules/RELEASE.
# scripts/host/kvm-swap.sh loads or installs them.
KVER ?= $(shell uname -r)
kvm_6.1 = $(filter 6.1.%,$(KVER))
kvm-modules: deps-build $(if $(KSRC),,$(if $(kvm_6.1),$(BUILD)/series-6.1.applied,$(BUILD)/series.applied))
	+KSRC="$(or $(KSRC),$(if $(kvm_6.1),$(TREE_6.1),$(TREE)))" \
		KHEADERS="$(or $(KHEADERS),/lib/modules/$(KVER)/build)" STOCK="$(STOCK)" \
		scripts/build/kvm-modules.sh

# The modules' dkms source tree (module/dkms.conf says how dkms builds it),
# for `dkms add`.
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' module/dkms.conf)
DKMS_SRC := $(BUILD)/dkms/src/kvm-tsc-trace-$(DKMS_VERSION)
DKMS_SRCS := module/Kbuild module/dkms.conf $(wildcard module/*.c module/*.h)

$(DKMS_SRC)/dkms.conf: $(DKMS_SRCS) include/tsc_event_names.h
	rm -rf $(DKMS_SRC)
	mkdir -p $(DKMS_SRC)/include
	cp include/tsc_event_names.h $(DKMS_SRC)/include/
	cp $(DKMS_SRCS) $(DKMS_SRC)/

dkms-src: $(DKMS_SRC)/dkms.conf

# dkms_build(DIR, KERNEL_DIR, PREREQUISITE): the two modules as dkms builds
# them from that tree for the kernel whose build directory (a kernel build
# or a headers package) is KERNEL_DIR, copied into DIR, as for an installed
# kernel. Its own --dkmstree and --sourcetree keep the system's dkms state
# out of it, and the key dkms makes to sign them goes in DIR.
define dkms_build
$(1)/kvm_tsc_probe.ko: $(DKMS_SRC)/dkms.conf $(3) | deps
	rm -rf $(1)
	mkdir -p $(1)/tree
	+sign_file=$(2)/scripts/sign-file mok_signing_key=$(1)/mok.key \
	mok_certificate=$(1)/mok.pub dkms build --dkmstree $(1)/tree \
		--sourcetree $(BUILD)/dkms/src -m kvm-tsc-trace -v $(DKMS_VERSION) \
		-k $$$$(cat $(2)/include/config/kernel.release) --kernelsourcedir $(2) || \
		{ tail -20 $(1)/tree/kvm-tsc-trace/$(DKMS_VERSION)/build/make.log; exit 1; }
	cp $(1)/tree/kvm-tsc-trace/$(DKMS_VERSION)/*/*/module/*.ko $(1)/
endef

# Debian 12's stock kernels: 6.1, its default, and 6.12 beside it, their
# image and headers packages unpacked under build/debian (nothing installed),
# and the modules dkms builds for each from its headers alone.
DEBIAN_KERNELS := 6.1.0-56-amd64 6.12.117+deb12-amd64
debian_headers = $(BUILD)/debian/$(1)/root/usr/src/linux-headers-$(1)

$(BUILD)/debian/%/packages: scripts/build/debian-kernel.sh | deps
	scripts/build/debian-kernel.sh $* $(BUILD)/debian/$*

$(foreach k,$(DEBIAN_KERNELS),$(eval $(call dkms_build,$(BUILD)/dkms/$(k),$(call debian_headers,$(k)),$(BUILD)/debian/$(k)/packages)))

# Their builds take pahole from their packages' root (scripts/build/deps.sh
# says why it is not installed).
$(foreach k,$(DEBIAN_KERNELS),$(eval $(BUILD)/dkms/$(k)/kvm_tsc_probe.ko $(BUILD)/kvm-modules/$(k)/kvm.ko: \
	export PATH := $(BUILD)/debian/$(k)/root/usr/bin:$(PATH)))

# headers_install needs no config: its own output directory keeps it out of
# the kernel builds' way under -j.
$(BUILD)/headers/usr/include/linux/kvm.h: $(BUILD)/series.applied
	$(MAKE) -s -C $(TREE) O=$(BUILD)/headers headers
	touch $@

# The collections, each installed by its own Makefile (this project's
# suite also installs run_kselftest.sh), and one list for the runner.
# They build with ccache too: with -g ccache would key the objects by the
# directory they are built in, so another clone's objects serve only
# once it is told not to (the path in their debug info is never read).
KSFT_CC := CC="$(KCC)" CCACHE_NOHASHDIR=1
selftests: $(BUILD)/series.applied $(BUILD)/headers/usr/include/linux/kvm.h
	+$(MAKE) -C selftests $(KSFT_CC) KSRC=$(TREE) KHDR_INCLUDES="-isystem $(BUILD)/headers/usr/include" \
		INSTALL_PATH=$(KSFT) install

module-tests: selftests $(BUILD)/module/kvm_tsc_probe.ko
	+$(MAKE) -C module/tests KSRC=$(TREE) MODULE_KO=$(BUILD)/module/kvm_tsc_probe.ko \
		INSTALL_PATH=$(KSFT)/kvm_tsc_probe install

# kvm_selftests(TREE, HEADERS, OUT, INSTALL): the KVM_TESTS built from
# TREE's tools/testing/selftests/kvm against HEADERS' uapi, into OUT, and
# installed with their settings in INSTALL/kvm.
define kvm_selftests
	+$(MAKE) -C $(1)/tools/testing/selftests/kvm $(KSFT_CC) OUTPUT=$(3) \
		KHDR_INCLUDES="-isystem $(2)/usr/include" EXTRA_CFLAGS=-static \
		$(addprefix $(3)/,$(KVM_TESTS)) >$(3).log 2>&1 || \
		{ tail -20 $(3).log; exit 1; }
	mkdir -p $(4)/kvm
	cp $(addprefix $(3)/,$(KVM_TESTS)) $(1)/tools/testing/selftests/kvm/settings $(4)/kvm/
endef

kvm-selftests: selftests $(BUILD)/headers/usr/include/linux/kvm.h
	$(call kvm_selftests,$(TREE),$(BUILD)/headers,$(BUILD)/kvm-selftests,$(KSFT))

# The runner's list is written here alone, the one place that knows all
# three collections: the module's collection last, since its first test
# reads what the probe saw while the others ran.
ksft: selftests kvm-selftests module-tests
	{ $(MAKE) -s --no-print-directory -C selftests KSRC=$(TREE) emit_tests; \
	  printf 'kvm:%s\n' $(notdir $(KVM_TESTS)); \
	  $(MAKE) -s --no-print-directory -C module/tests KSRC=$(TREE) emit_tests; } \
		>$(KSFT)/kselftest-list.txt

# Debian's linux-source-6.1 with the series' backport (patches/6.1), for
# Debian's 6.1 kernel, where the KVM selftests of 6.12 all skip (they need
# KVM_SET_USER_MEMORY_REGION2, from 6.8): the collections installed again
# in KSFT_6.1 with 6.1's own KVM selftests.
TREE_6.1 := $(BUILD)/linux-6.1
KSFT_6.1 := $(BUILD)/selftests-install-6.1
SERIES_6.1 := patches/6.1/series $(wildcard patches/6.1/*/series patches/6.1/*/*.patch)
$(BUILD)/series-6.1.applied: $(SERIES_6.1) scripts/build/kernel-tree.sh | deps
	SOURCE_VERSION=6.1 TREE_DIR=$(TREE_6.1) PATCH_DIR=$(CURDIR)/patches/6.1 scripts/build/kernel-tree.sh
	@touch $@

$(BUILD)/headers-6.1/usr/include/linux/kvm.h: $(BUILD)/series-6.1.applied
	$(MAKE) -s -C $(TREE_6.1) O=$(BUILD)/headers-6.1 headers
	touch $@

ksft-6.1: ksft $(BUILD)/headers-6.1/usr/include/linux/kvm.h
	rm -rf $(KSFT_6.1)
	cp -a $(KSFT) $(KSFT_6.1)
	$(call kvm_selftests,$(TREE_6.1),$(BUILD)/headers-6.1,$(BUILD)/kvm-selftests-6.1,$(KSFT_6.1))

# kvm-tsc-merge and the helpers of its tests, into build/tools.
tools: | deps-tools
	+$(MAKE) -C tools

# A check always runs again, except the series check, which make keeps
# while the patches and the config it builds with stay the same.
$(RESULTS)/tools.tap: tools FORCE
	scripts/ci/result.sh run $@ tools/tsc-merge/tests/run-tests.sh $(BUILD)/tools

# shellcheck -x -S warning on every shell script git tracks, one result a
# file; it needs nothing built.
$(RESULTS)/shellcheck.tap: FORCE
	scripts/ci/result.sh run $@ scripts/ci/shell-lint-test.sh

# Every input that once broke kvm-tsc-merge under the fuzzer, replayed
# under ASan and UBSan.
$(RESULTS)/fuzz-replay.tap: tools FORCE
	scripts/ci/result.sh run $@ tools/tsc-merge/tests/replay-fuzz.sh $(BUILD)/tools

# Fuzz kvm-tsc-merge with AFL++ (not part of check): FUZZ_SECONDS per input
# role (default 600), FUZZ_ROLES (default: every role, tools/tsc-merge/fuzz/roles.sh).
fuzz: tools
	+$(MAKE) -C tools/tsc-merge fuzz

# Real trace.dat seeds for the fuzzer, committed under FUZZ_REAL (not part
# of check): short trace-cmd recordings made in the test VM by
# tools/tsc-merge/fuzz/record-seeds.sh, and the agent-mode (record -A)
# files of the last merge-e2e runs (build/vmtest-e2e*, from make check),
# each made smaller with trace-cmd convert, which keeps their TSC2NSEC,
# TIME_SHIFT and GUEST options (trace-cmd split would drop them).
FUZZ_REAL := tools/tsc-merge/fuzz/seeds/real
FUZZ_SEEDS_VM := $(BUILD)/fuzz-seeds
fuzz-seeds: $(BUILD)/kernel/arch/x86/boot/bzImage selftests
	scripts/vm/vmtest.sh --dir $(FUZZ_SEEDS_VM) -- tools/tsc-merge/fuzz/record-seeds.sh
	mkdir -p $(FUZZ_REAL)/host $(FUZZ_REAL)/guest
	cp $(FUZZ_SEEDS_VM)/export/seeds/host/*.dat $(FUZZ_REAL)/host/
	cp $(FUZZ_SEEDS_VM)/export/seeds/guest/*.dat $(FUZZ_REAL)/guest/
	$(call agent_seed,$(BUILD)/vmtest-e2e-vmx/export/agent/host.dat,host/agent-host-vmx-v7-zstd.dat,--compression zstd)
	$(call agent_seed,$(BUILD)/vmtest-e2e-vmx/export/agent/guest.dat,guest/agent-guest-vmx-v7-zstd.dat,--compression zstd)
	$(call agent_seed,$(BUILD)/vmtest-e2e-vmx/export/agent/guest.dat,guest/agent-guest-vmx-v6.dat,--file-version 6)
	$(call agent_seed,$(BUILD)/vmtest-e2e-debian-6.12/export/agent/guest.dat,guest/agent-guest-qemu-v7-zstd.dat,--compression zstd)

# agent_seed(SOURCE, SEED, CONVERT_OPTIONS): SEED under FUZZ_REAL from an
# agent-mode recording, skipped (with a word) when the run that makes it
# has not been made, and dropped when over 200 kB: a seed that big slows
# every fuzz run (the agents' host files are 1 MB and more uncompressed).
define agent_seed
@if [ ! -f $(1) ]; then \
	echo "fuzz-seeds: $(1) absent (make check's merge-e2e runs make it): $(2) skipped"; \
elif ! trace-cmd convert $(3) -i $(1) -o $(FUZZ_REAL)/$(2) >/dev/null; then \
	echo "fuzz-seeds: trace-cmd convert $(3) failed on $(1)" >&2; exit 1; \
elif [ "$$(wc -c <$(FUZZ_REAL)/$(2))" -gt 204800 ]; then \
	echo "fuzz-seeds: $(2) skipped: over 200 kB"; rm -f $(FUZZ_REAL)/$(2); \
else \
	echo "$(2): $$(wc -c <$(FUZZ_REAL)/$(2)) bytes, from $(1)"; \
fi
endef

# Its KVM builds take their jobs from make's.
$(RESULTS)/series.tap: $(SERIES_FILES) $(SERIES) scripts/build/check-series.sh $(BUILD)/kernel/.config
	+scripts/ci/result.sh run $@ scripts/build/check-series.sh

$(RESULTS)/kernel-tree.tap: $(BUILD)/series.applied FORCE
	scripts/ci/result.sh run $@ scripts/build/kernel-tree-test.sh

# make apply, make kernel-config and make install/uninstall, on copies of
# the packaged trees and into a scratch DESTDIR.
$(RESULTS)/user-kernel.tap: $(BUILD)/series.applied $(BUILD)/series-6.1.applied tools FORCE
	scripts/ci/result.sh run $@ scripts/build/user-kernel-test.sh

# The collections' run_tests fail when a planted test fails, and pass on
# passes and skips: the tree's lib.mk and runner.sh, no VM, no root.
$(RESULTS)/run-tests-exit.tap: $(BUILD)/series.applied FORCE
	scripts/ci/result.sh run $@ scripts/ci/run-tests-exit-test.sh

# The modules dkms built from Debian's headers packages, and what kbuild
# refuses: a kernel without KVM or tracepoints, a version without
# declarations, a declaration unlike the test kernel's trace.h.
$(RESULTS)/module-build.tap: $(foreach k,$(DEBIAN_KERNELS),$(BUILD)/dkms/$(k)/kvm_tsc_probe.ko) \
		$(BUILD)/kernel/arch/x86/boot/bzImage FORCE
	scripts/ci/result.sh run $@ scripts/build/module-build-test.sh $(DEBIAN_KERNELS)

$(RESULTS)/vmtest.tap: $(BUILD)/kernel/arch/x86/boot/bzImage FORCE
	scripts/ci/result.sh run $@ scripts/vm/vmtest-test.sh

# vm_check(NAME, KERNEL, OPTIONS, CHECKS_OPTIONS): the check NAME
# boots the KERNEL (test or debug) build with vmtest.sh's options, in
# build/NAME, and runs vm-checks.sh there with the probe built for it.
# The VM sees the repository only, so the probe is named by its path there.
# A selftest prints its result only when it is done, and the probe's load
# cycles alone take two minutes on the test kernel: the VM may be quiet for
# up to ten minutes before vmtest.sh calls it stalled.
vm_suffix = $(if $(filter debug,$(1)),-debug)
define vm_check
$(RESULTS)/$(1).tap: ksft $(BUILD)/kernel$(call vm_suffix,$(2))/arch/x86/boot/bzImage \
		$(BUILD)/module$(call vm_suffix,$(2))/kvm_tsc_probe.ko FORCE
	scripts/ci/result.sh run $$@ scripts/vm/vmtest.sh --dir $(BUILD)/$(1) --kernel $(2) --silence 600 $(3) -- \
		sh scripts/guest/vm-checks.sh build/module$(call vm_suffix,$(2))/kvm_tsc_probe.ko $(4)
endef

# The test kernel under Bochs, for Intel VMX, nested VMX and TSC scaling.
# Bochs has no 9p: the files the checks read go in the initramfs.
$(eval $(call vm_check,vm-vmx,test,--vmm bochs \
	--files "build/selftests-install build/module scripts/guest/vm-checks.sh"))

# The debug kernel runs the suites with the probe watching, and the probe's
# churn with fewer cycles and VMs than on Debian's 6.12: under KASAN and
# TCG each costs several times as much.
$(eval $(call vm_check,vm-debug,debug,--timeout 1800,--churn $(DEBUG_CHURN)))

# The series' KVM modules for each Debian kernel, from its packaged tree
# with the series (SERIES_STAMP) and its headers.
define debian_kvm_modules
$(BUILD)/kvm-modules/$(1)/kvm.ko: $(2) $(BUILD)/debian/$(1)/packages scripts/build/kvm-modules.sh
	+KSRC=$(3) KHEADERS=$(call debian_headers,$(1)) STOCK=$(BUILD)/debian/$(1)/root/lib/modules/$(1)/kernel \
		OUT=$(BUILD)/kvm-modules/$(1) scripts/build/kvm-modules.sh
endef
$(eval $(call debian_kvm_modules,6.1.0-56-amd64,$(BUILD)/series-6.1.applied,$(TREE_6.1)))
$(eval $(call debian_kvm_modules,6.12.117+deb12-amd64,$(BUILD)/series.applied,$(TREE)))

# debian_vm_check(NAME, KVER, KSFT_TARGET, KSFT, OTHER_KVER, ENV[, VMTEST_OPTIONS]):
# the check NAME boots Debian's kernel KVER, as its packages have it, under
# QEMU (or as VMTEST_OPTIONS say), and runs the collections installed in
# KSFT there with scripts/guest/stock-checks.sh and ENV: on its own KVM,
# with the probe dkms built from its headers, then with the series' KVM
# modules in place of its own (scripts/host/kvm-swap.sh, which must refuse
# OTHER_KVER's first).
define debian_vm_check
$(RESULTS)/$(1).tap: $(3) $(BUILD)/dkms/$(2)/kvm_tsc_probe.ko $(BUILD)/kvm-modules/$(2)/kvm.ko \
		$(BUILD)/kvm-modules/$(5)/kvm.ko FORCE
	scripts/ci/result.sh run $$@ scripts/vm/vmtest.sh --dir $(BUILD)/$(1) --kernel $(BUILD)/debian/$(2)/root \
		--timeout 1800 --silence 600 $(7) -- KSFT=$(4) $(6) \
		sh scripts/guest/stock-checks.sh build/dkms/$(2)/kvm_tsc_probe.ko build/kvm-modules/$(2) build/kvm-modules/$(5)
endef
# On 6.12 with the series' modules, the probe's churn test too.
$(eval $(call debian_vm_check,vm-debian-6.1,6.1.0-56-amd64,ksft-6.1,build/selftests-install-6.1,6.12.117+deb12-amd64))
$(eval $(call debian_vm_check,vm-debian-6.12,6.12.117+deb12-amd64,ksft,build/selftests-install,6.1.0-56-amd64,\
	CHURN_CYCLES=$(word 1,$(CHURN)) CHURN_VMS=$(word 2,$(CHURN))))
# Under Bochs (VMX), where Debian's kernels boot in about two minutes, the
# fixes' reproducer alone, whose VMX failed-entry case QEMU cannot run.
# Bochs has no 9p: the files go in the initramfs.
debian_vmx_options = --vmm bochs --files "$(1)/kvm/nested_tsc_restore_test build/dkms/$(2) build/kvm-modules \
	scripts/guest/stock-checks.sh scripts/host scripts/lib"
$(eval $(call debian_vm_check,vm-debian-6.1-vmx,6.1.0-56-amd64,ksft-6.1,build/selftests-install-6.1,6.12.117+deb12-amd64,\
	REPRODUCER_ONLY=1,$(call debian_vmx_options,build/selftests-install-6.1,6.1.0-56-amd64)))
$(eval $(call debian_vm_check,vm-debian-6.12-vmx,6.12.117+deb12-amd64,ksft,build/selftests-install,6.1.0-56-amd64,\
	REPRODUCER_ONLY=1,$(call debian_vmx_options,build/selftests-install,6.12.117+deb12-amd64)))

# The end-to-end recordings: scripts/e2e/e2e-test.sh records each
# scenario in the test VM and e2e-check judges the traces and
# kvm-tsc-merge's outputs. e2e-check prints with the tree's kselftest.h;
# its check runs it, and its sanitizer build, on no recordings at all.
E2E_SCENARIOS := scripts/e2e/scenarios
E2E_TEST := scripts/e2e/e2e-test.sh --root $(BUILD)/e2e-root
e2e-check: $(BUILD)/series.applied | deps-tools
	+$(MAKE) -C tools/e2e-check KSRC=$(TREE) check

# The guests' root, filled once for every check that records: the test
# kernel, and tsc_nested_payload for scenario nested. Scenario linux-n's
# L1 boots a Linux guest of its own, whose root it gets too.
$(BUILD)/e2e-root/e2e/guest.cpio.gz: selftests $(BUILD)/kernel/arch/x86/boot/bzImage
	scripts/e2e/guest-root.sh $(BUILD)/e2e-root

$(BUILD)/e2e-root-linux/e2e/guest.cpio.gz: selftests $(BUILD)/kernel/arch/x86/boot/bzImage
	scripts/e2e/guest-root.sh --linux $(BUILD)/e2e-root-linux

# A guest made to hang (its QEMU stopped) is reported after the scenario's
# silence, here 30 s, with its console's tail.
$(RESULTS)/e2e-hang.tap: $(BUILD)/e2e-root/e2e/guest.cpio.gz FORCE
	scripts/ci/result.sh run $@ $(E2E_TEST) --hang --dir $(BUILD)/e2e-hang --set silence=30 \
		$(E2E_SCENARIOS)/own.scenario

# Under QEMU scenario nested, whose L1 runs tsc_nested_payload's guest.
# The three recipes run on the series under Bochs (merge-e2e-vmx) and
# on Debian's own KVM under QEMU (merge-e2e-debian-*).
$(RESULTS)/merge-e2e.tap: tools e2e-check $(BUILD)/e2e-root/e2e/guest.cpio.gz FORCE
	scripts/ci/result.sh run $@ $(E2E_TEST) $(E2E_SCENARIOS)/nested.scenario

# The same under Bochs, with L1's TSC scaled to half L0's 3.5 GHz.
$(RESULTS)/merge-e2e-vmx.tap: tools e2e-check $(BUILD)/e2e-root/e2e/guest.cpio.gz FORCE
	scripts/ci/result.sh run $@ $(E2E_TEST) --vmm bochs --dir $(BUILD)/vmtest-e2e-vmx \
		--set l1_tsc_khz=1750000 $(addprefix $(E2E_SCENARIOS)/,own.scenario agent.scenario late.scenario)

# debian_e2e_check(NAME, KVER, OPTIONS, SCENARIOS): the check merge-e2e-NAME
# records SCENARIOS with L0 on Debian's kernel KVER and its own KVM, where
# only kvm_write_tsc_offset and record-host.sh's two snapshots tell the
# merge; e2e-test.sh's OPTIONS.
define debian_e2e_check
$(RESULTS)/merge-e2e-$(1).tap: tools e2e-check $(BUILD)/e2e-root/e2e/guest.cpio.gz $(BUILD)/debian/$(2)/packages FORCE
	scripts/ci/result.sh run $$@ $(E2E_TEST) $(3) --kernel $(BUILD)/debian/$(2)/root --dir $(BUILD)/vmtest-e2e-$(1) \
		$(addprefix $(E2E_SCENARIOS)/,$(4))
endef
# The three recipes under QEMU.
$(eval $(call debian_e2e_check,debian-6.1,6.1.0-56-amd64,,own.scenario agent.scenario late.scenario))
$(eval $(call debian_e2e_check,debian-6.12,6.12.117+deb12-amd64,,own.scenario agent.scenario late.scenario))
# Scenario own under Bochs: L1 created during the recording at half L0's
# rate, a multiplier that only record-host.sh stop's snapshot tells.
$(eval $(call debian_e2e_check,debian-vmx,6.12.117+deb12-amd64,--vmm bochs --set l1_tsc_khz=1750000,own.scenario))

# Scenario linux-n alone, not part of check (L2's boot alone takes
# minutes): L1 boots a Linux guest of its own, which traces itself.
$(RESULTS)/merge-e2e-linux-n.tap: tools e2e-check $(BUILD)/e2e-root-linux/e2e/guest.cpio.gz FORCE
	scripts/ci/result.sh run $@ scripts/e2e/e2e-test.sh --root $(BUILD)/e2e-root-linux --dir $(BUILD)/vmtest-e2e-linux-n \
		$(E2E_SCENARIOS)/linux-n.scenario

merge-e2e-linux-n: $(RESULTS)/merge-e2e-linux-n.tap

# Scenario nested under Bochs, not part of check (the Bochs runs there take
# their share already): L1 at half L0's TSC rate, L2 at half L1's, each
# through TSC scaling.
$(RESULTS)/merge-e2e-vmx-nested.tap: tools e2e-check $(BUILD)/e2e-root/e2e/guest.cpio.gz FORCE
	scripts/ci/result.sh run $@ $(E2E_TEST) --vmm bochs --dir $(BUILD)/vmtest-e2e-vmx-nested \
		--set l1_tsc_khz=1750000 --set l2_tsc_khz=875000 $(E2E_SCENARIOS)/nested.scenario

merge-e2e-vmx-nested: $(RESULTS)/merge-e2e-vmx-nested.tap

# One job per core; each check's output is kept whole (-Otarget) even when
# two run at once, and a check that could not run for want of a build
# counts as a failure.
check: deps
	@mkdir -p $(RESULTS)
	@rm -f $(addprefix $(RESULTS)/,$(filter-out series.tap,$(CHECKS:%=%.tap)))
	@$(MAKE) --no-print-directory -k -j$(NPROC) -Otarget $(CHECKS:%=$(RESULTS)/%.tap) || true
	@scripts/ci/result.sh tally $(CHECKS:%=$(RESULTS)/%.tap)

# The series check alone.
series-check: $(RESULTS)/series.tap

# Builds one job per core, as check does, then two VM runs.
demo: deps
	@$(MAKE) --no-print-directory -j$(NPROC) kernel ksft tools
	scripts/vm/vmtest.sh --dir $(BUILD)/demo-guest -- build/selftests-install/kvm-tsc-trace/tsc_guest_demo
	scripts/vm/demo-merge.sh

clean:
	rm -rf $(BUILD)

FORCE:

.PHONY: all deps deps-build deps-tools apply kernel-config install uninstall kernel module kvm-modules dkms-src selftests module-tests kvm-selftests ksft ksft-6.1 tools e2e-check check fuzz fuzz-seeds \
	series-check merge-e2e-linux-n merge-e2e-vmx-nested demo clean FORCE
