// SPDX-License-Identifier: GPL-2.0
/*
 * test_kvm_tsc_tp_attach.c: tp_attach.c, built into test_kvm_tsc as an
 * object of its own name (see Kbuild).
 */
#include "tp_attach.c"
