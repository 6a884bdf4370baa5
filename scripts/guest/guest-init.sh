#!/bin/busybox sh
# shellcheck shell=dash
# guest-init.sh: /init of the test VM: mount, load KVM, refuse an unstable TSC, run the payload, report its status.
#
# /ktt, the repository, and /export come as vmtest.sh's header says (over
# 9p where ktt_share=9p is on the kernel command line). Serial ports: ttyS0
# is the kernel console, ttyS1 carries the payload's output, ttyS2 receives
# its exit status and nothing else, so the host never has to guess it from
# console text. The payload is the command line in /payload, run from /ktt.

export PATH=/bin:/sbin:/usr/bin:/usr/sbin
# shellcheck source-path=SCRIPTDIR source=../lib/poll.sh # where vmtest.sh puts it in the initramfs
. /lib/ktt/poll.sh

setup_mounts()
{
	mkdir -p /proc /sys /dev /tmp /run /ktt /export /lib
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
	# What udev would add: kselftest's runner writes to /dev/stdout.
	ln -s /proc/self/fd /dev/fd
	ln -s /proc/self/fd/1 /dev/stdout
	ln -s /proc/self/fd/2 /dev/stderr
	mount -t tmpfs tmpfs /tmp
	mount -t tracefs tracefs /sys/kernel/tracing
	mount -t debugfs debugfs /sys/kernel/debug
	# A kernel build's modules are in /ktt (ktt_modroot, from the kernel
	# command line); a kernel package's are in the initramfs already, and
	# its virtio, 9p and vhost_vsock are modules: modprobe finds those
	# built in no more. vhost_vsock makes /dev/vhost-vsock, which nothing
	# would load on the first open here.
	if [ -n "${ktt_modroot:-}" ]; then
		ln -s "/ktt/$ktt_modroot/lib/modules" /lib/modules
	else
		modprobe -a -q virtio_pci 9pnet_virtio 9p vhost_vsock
	fi
	if [ "${ktt_share:-}" = 9p ]; then
		mount -t 9p -o trans=virtio,version=9p2000.L,ro ktt /ktt
		mount -t 9p -o trans=virtio,version=9p2000.L export /export
	fi
}

# Forced emulation lets a selftest's L1 run RDTSC through KVM's emulator, the
# only way L1 sees the offset KVM keeps in software on VMX (nested_tsc_restore_test).
load_kvm()
{
	modprobe kvm force_emulation_prefix=1
	if grep -qw svm /proc/cpuinfo; then
		modprobe kvm_amd nested=1
	elif grep -qw vmx /proc/cpuinfo; then
		modprobe kvm_intel nested=1
	else
		echo "# the VM's CPU has neither SVM nor VMX: no /dev/kvm" >&2
	fi
}

readonly CLOCKSOURCE=/sys/devices/system/clocksource/clocksource0/current_clocksource

tsc_is_clocksource()
{
	[ "$(cat "$CLOCKSOURCE")" = tsc ]
}

run_payload()
{
	cd /ktt || return 1
	# The refined TSC clocksource replaces tsc-early a second after boot, which
	# under Bochs (a guest second is about a minute) comes after the first
	# tests: kvm_clock_test needs it. Idle time is cheap in both emulators.
	wait_until 10 tsc_is_clocksource ||
		echo "# the clocksource is still $(cat "$CLOCKSOURCE") after 10 s, not tsc"
	# With an unstable TSC, KVM rewrites the offsets at every vcpu_load and
	# exact event sequences become meaningless.
	if dmesg | grep -q 'Marking TSC unstable'; then
		echo "Bail out! the TSC of the test VM is marked unstable: $(dmesg | grep -m1 'TSC unstable')"
		return 1
	fi
	sh -c "$(cat /payload)"
}

# Without 9p, /export leaves as a tar stream; tar and gzip tell if it came whole.
send_export()
{
	[ "${ktt_share:-}" = 9p ] && return 0
	[ -n "$(ls -A /export)" ] || return 0
	stty -F /dev/ttyS3 115200 raw -echo
	tar -c -C /export . | gzip -1 >/dev/ttyS3
}

main()
{
	local status

	/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
	/bin/busybox --install -s
	setup_mounts
	load_kvm
	stty -F /dev/ttyS1 115200 raw -echo
	stty -F /dev/ttyS2 115200 raw -echo
	run_payload >/dev/ttyS1 2>&1
	status=$?
	send_export >/dev/ttyS1 2>&1 || status=1
	echo "$status" >/dev/ttyS2
	sync
	poweroff -f
}

main
