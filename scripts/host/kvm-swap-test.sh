#!/bin/bash
# kvm-swap-test.sh: TAP: kvm-swap.sh on a made-up machine, its /sys, /proc and /lib/modules in a directory and its module commands stand-ins that log.
#
# No module is loaded: rmmod, insmod, modprobe and depmod are scripts that
# change the made-up /sys/module and write what they were asked to do to a
# log, which each test compares with the commands it expects. The modules
# are empty objects with a .modinfo section, which modinfo reads as it
# reads a module's.

set -u

TOP_DIR=$(cd "$(dirname "$0")/../.." && pwd)
readonly TOP_DIR
# shellcheck source-path=SCRIPTDIR source=../../tools/tsc-merge/tests/tap.sh
. "$TOP_DIR/tools/tsc-merge/tests/tap.sh"

readonly SWAP=$TOP_DIR/scripts/host/kvm-swap.sh
readonly RELEASE=6.12.0-test
readonly VERMAGIC="$RELEASE SMP preempt mod_unload modversions "
WORK=$TOP_DIR/build/kvm-swap-test
readonly WORK
readonly ROOT=$WORK/root BUILT=$WORK/built

# fake_module FILE NAME VERMAGIC DEPENDS
fake_module()
{
	printf 'vermagic=%s\0depends=%s\0name=%s\0' "$3" "$4" "$2" >"$WORK/modinfo"
	objcopy --add-section .modinfo="$WORK/modinfo" --set-section-flags .modinfo=alloc,readonly \
		"$WORK/empty.o" "$1"
}

# Loaded: a /sys/module directory with no users, as a module has.
loaded()
{
	mkdir -p "$ROOT/sys/module/$1/holders"
	echo 0 >"$ROOT/sys/module/$1/refcnt"
	echo "${2:-}" >"$ROOT/sys/module/$1/taint"
}

# The stand-ins, each logging its command line.
write_commands()
{
	local bin=$WORK/bin

	mkdir -p "$bin"
	printf '#!/bin/sh\necho 0\n' >"$bin/id"
	printf '#!/bin/sh\necho %s\n' "$RELEASE" >"$bin/uname"
	cat >"$bin/rmmod" <<'EOF'
#!/bin/sh
echo "rmmod $*" >>"$KVM_SWAP_ROOT/log"
[ "$(cat "$KVM_SWAP_ROOT/sys/module/$1/refcnt")" = 0 ] || { echo "rmmod: $1 is in use" >&2; exit 1; }
rm -r "$KVM_SWAP_ROOT/sys/module/$1"
rm -f "$KVM_SWAP_ROOT"/sys/module/*/holders/"$1"
EOF
	cat >"$bin/insmod" <<'EOF'
#!/bin/sh
echo "insmod $*" >>"$KVM_SWAP_ROOT/log"
name=$(modinfo -F name "$1")
[ ! -e "$KVM_SWAP_ROOT/fail-$name" ] || { echo "insmod: ERROR: could not insert module $1" >&2; exit 1; }
mkdir -p "$KVM_SWAP_ROOT/sys/module/$name/holders"
echo 0 >"$KVM_SWAP_ROOT/sys/module/$name/refcnt"
echo OE >"$KVM_SWAP_ROOT/sys/module/$name/taint"
EOF
	cat >"$bin/modprobe" <<'EOF'
#!/bin/sh
[ "$1" = -c ] && { cat "$KVM_SWAP_ROOT/modprobe.conf"; exit 0; }
echo "modprobe $*" >>"$KVM_SWAP_ROOT/log"
mkdir -p "$KVM_SWAP_ROOT/sys/module/$1/holders"
echo 0 >"$KVM_SWAP_ROOT/sys/module/$1/refcnt"
EOF
	printf '#!/bin/sh\necho "depmod $*" >>"$KVM_SWAP_ROOT/log"\n' >"$bin/depmod"
	chmod +x "$bin"/*
}

# A host running RELEASE on an AMD CPU with the stock kvm and kvm_amd
# loaded, and the built modules in BUILT.
make_machine()
{
	local stock=$ROOT/lib/modules/$RELEASE/kernel/arch/x86/kvm

	rm -rf "$ROOT" "$BUILT"
	mkdir -p "$ROOT/proc" "$ROOT/sys/module/module/parameters" "$stock" "$BUILT"
	echo "Linux version $RELEASE (test@test) #1 SMP" >"$ROOT/proc/version"
	echo "flags		: fpu svm" >"$ROOT/proc/cpuinfo"
	echo "quiet kvm_amd.nested=0" >"$ROOT/proc/cmdline"
	echo "options kvm ignore_msrs=1" >"$ROOT/modprobe.conf"
	echo N >"$ROOT/sys/module/module/parameters/sig_enforce"
	loaded irqbypass
	loaded kvm
	loaded kvm_amd
	touch "$ROOT/sys/module/kvm/holders/kvm_amd"
	fake_module "$stock/kvm.ko" kvm "$VERMAGIC" irqbypass
	fake_module "$stock/kvm-amd.ko" kvm_amd "$VERMAGIC" kvm,ccp
	fake_module "$BUILT/kvm.ko" kvm "$VERMAGIC" irqbypass
	fake_module "$BUILT/kvm-amd.ko" kvm_amd "$VERMAGIC" kvm,ccp
	fake_module "$BUILT/kvm-intel.ko" kvm_intel "$VERMAGIC" kvm
	: >"$ROOT/log"
}

# Run kvm-swap.sh ARG... on the machine: OUT its output, STATUS its exit.
run_swap()
{
	OUT=$(PATH="$WORK/bin:$PATH" KVM_SWAP_ROOT=$ROOT "$SWAP" "$@" 2>&1)
	STATUS=$?
}

# The log is the LINEs, in order.
expect_log()
{
	local want

	want=$(printf '%s\n' "$@")
	[ "$(cat "$ROOT/log")" = "$want" ] && return 0
	echo "# expected the commands:"
	sed 's/^/#   /' <<<"$want"
	echo "# got:"
	sed 's/^/#   /' "$ROOT/log"
	echo "# output:"
	sed 's/^/#   /' <<<"$OUT"
	return 1
}

expect_refused()
{
	local pattern=$1

	[ "$STATUS" != 0 ] && grep -q -- "$pattern" <<<"$OUT" && expect_log && return 0
	echo "# expected a refusal matching '$pattern' and no command, got status $STATUS:"
	sed 's/^/#   /' <<<"$OUT"
	return 1
}

test_swap()
{
	make_machine
	run_swap swap "$BUILT"
	[ "$STATUS" = 0 ] || { sed 's/^/#   /' <<<"$OUT"; return 1; }
	expect_log "rmmod kvm_amd" "rmmod kvm" "modprobe irqbypass" "insmod $BUILT/kvm.ko ignore_msrs=1" \
		"modprobe ccp" "insmod $BUILT/kvm-amd.ko nested=0" &&
		grep -q "kvm: loaded, taint 'OE'" <<<"$OUT"
}

test_restore()
{
	make_machine
	run_swap swap "$BUILT"
	: >"$ROOT/log"
	run_swap restore "$BUILT"
	[ "$STATUS" = 0 ] && expect_log "rmmod kvm_amd" "rmmod kvm" "modprobe kvm_amd"
}

test_other_release()
{
	make_machine
	fake_module "$BUILT/kvm-amd.ko" kvm_amd "6.1.0-56-amd64 SMP preempt mod_unload modversions " kvm,ccp
	run_swap swap "$BUILT"
	expect_refused "kvm-amd.ko: vermagic '6.1.0-56-amd64"
}

test_in_use()
{
	make_machine
	echo 2 >"$ROOT/sys/module/kvm_amd/refcnt"
	run_swap swap "$BUILT"
	expect_refused "/dev/kvm is in use (kvm_amd has 2 users"
}

test_other_holder()
{
	make_machine
	touch "$ROOT/sys/module/kvm/holders/kvmgt"
	run_swap swap "$BUILT"
	expect_refused "the module kvmgt uses kvm"
}

test_lockdown()
{
	make_machine
	mkdir -p "$ROOT/sys/kernel/security"
	echo "none [integrity] confidentiality" >"$ROOT/sys/kernel/security/lockdown"
	run_swap swap "$BUILT"
	expect_refused "signed modules only"
}

# The vendor module does not load: the stock ones are loaded again.
test_load_fails()
{
	make_machine
	touch "$ROOT/fail-kvm_amd"
	run_swap swap "$BUILT"
	[ "$STATUS" != 0 ] && grep -q "the stock modules are loaded again" <<<"$OUT" &&
		expect_log "rmmod kvm_amd" "rmmod kvm" "modprobe irqbypass" "insmod $BUILT/kvm.ko ignore_msrs=1" \
			"modprobe ccp" "insmod $BUILT/kvm-amd.ko nested=0" "rmmod kvm" "modprobe kvm_amd"
}

test_install_uninstall()
{
	local dest=$ROOT/lib/modules/$RELEASE/updates/kvm-tsc-trace

	make_machine
	run_swap install "$BUILT"
	[ "$STATUS" = 0 ] && [ "$(ls "$dest")" = "$(printf 'kvm-amd.ko\nkvm-intel.ko\nkvm.ko')" ] &&
		expect_log "depmod -a $RELEASE" || return 1
	run_swap uninstall "$BUILT"
	[ "$STATUS" = 0 ] && [ ! -e "$dest" ] && expect_log "depmod -a $RELEASE" "depmod -a $RELEASE"
}

main()
{

	tap_header
	command -v objcopy >/dev/null 2>&1 || tap_skip_all "objcopy is not installed (binutils)"
	command -v modinfo >/dev/null 2>&1 || tap_skip_all "modinfo is not installed (kmod)"
	rm -rf "$WORK"
	mkdir -p "$WORK"
	trap 'rm -rf "$WORK"' EXIT
	echo 'int kvm_swap_test;' | gcc -c -x c - -o "$WORK/empty.o" || tap_bail "gcc cannot make an object"
	write_commands
	tap_plan 8
	test_swap
	tap_result $? "swap: the vendor module and kvm unloaded, the built ones loaded with their options and dependencies"
	test_restore
	tap_result $? "restore: the built modules unloaded, the stock vendor module loaded with modprobe"
	test_other_release
	tap_result $? "swap refuses a module built for another release before it unloads anything"
	test_in_use
	tap_result $? "swap refuses while /dev/kvm is in use, before it unloads anything"
	test_other_holder
	tap_result $? "swap refuses while another module uses kvm"
	test_lockdown
	tap_result $? "swap refuses unsigned modules under lockdown"
	test_load_fails
	tap_result $? "a built module that does not load: the stock ones are loaded again, and swap fails"
	test_install_uninstall
	tap_result $? "install copies the modules to updates/kvm-tsc-trace and runs depmod; uninstall removes them and runs depmod"
	tap_finished
}

main "$@"
