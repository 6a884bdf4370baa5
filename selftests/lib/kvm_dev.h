/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvm_dev.h: whether this process can use /dev/kvm. The KVM selftest
 * library exits at its first use without it; a program checks first to
 * skip with the reason instead.
 */
#ifndef KTT_KVM_DEV_H
#define KTT_KVM_DEV_H

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "kvm_util.h"

#define KVM_DEV_UNUSABLE "cannot open " KVM_DEV_PATH ": %s"

/* The errno of opening /dev/kvm as the library does for a VM, or 0. */
static inline int kvm_dev_errno(void)
{
	int fd = open(KVM_DEV_PATH, O_RDWR);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

#endif
