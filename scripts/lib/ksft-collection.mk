# SPDX-License-Identifier: GPL-2.0
# ksft-collection.mk: what the kernel tree's lib.mk needs from a kselftest collection outside the tree.
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
