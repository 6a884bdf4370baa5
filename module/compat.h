/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h: the names test_kvm_tsc uses that Linux 6.1, the oldest kernel
 * Kbuild accepts, has under older names or not at all.
 */
#ifndef KTT_COMPAT_H
#define KTT_COMPAT_H

#include <linux/version.h>

/* 6.12 moved the unaligned accessors out of asm/. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/* 6.8 renamed close_fd_get_file() and named the VM type KVM_CREATE_VM takes. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 8, 0)
#define file_close_fd(fd)	close_fd_get_file(fd)
#define KVM_X86_DEFAULT_VM	0
#endif

#endif
