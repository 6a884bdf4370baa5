#!/bin/bash
# kvm-swap.sh: on a host running the kernel kvm-modules.sh built for, load its KVM modules in place of the stock ones, or install them, and go back.
#
# usage: kvm-swap.sh swap|restore|install|uninstall|status [DIR]
#
#   swap       unload kvm_amd or kvm_intel and kvm, load DIR's kvm.ko and
#              vendor module with insmod (their other dependencies, such as
#              irqbypass and ccp, with modprobe); when a load fails, the
#              stock modules are loaded again with modprobe. Until reboot.
#   restore    unload them and load what modprobe finds: the stock modules,
#              or the installed copies while they are installed.
#   install    copy DIR's modules to /lib/modules/RELEASE/updates/kvm-tsc-trace/
#              and run depmod: modprobe (at boot, or restore) loads them from
#              then on. Nothing loaded changes.
#   uninstall  remove that directory and run depmod: modprobe finds the stock
#              modules again. Then restore, or a reboot, loads them.
#   status     which kvm modules are loaded and whether they have the series'
#              events.
#
# DIR holds kvm.ko, kvm-amd.ko and kvm-intel.ko (default
# build/kvm-modules/RELEASE, where make kvm-modules puts them). Before
# anything is unloaded or copied, each built module must have the stock
# kvm.ko's vermagic, for the release the kernel runs (uname -r and
# /proc/version), and, when the kernel takes signed modules only (Secure
# Boot), a signature. The modules are built outside the kernel's tree and
# unsigned: loading them taints the kernel (O, and E without a signature).
# The options modprobe would give the modules (/etc/modprobe.d, the kernel's
# command line) are given to insmod too.

set -eu -o pipefail

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly INSTALL_SUBDIR=updates/kvm-tsc-trace
# Events the series adds: with them in tracefs, the loaded kvm is the series'.
readonly SERIES_EVENTS="kvm_write_tsc_multiplier kvm_nested_tsc_offset"

# The running kernel's release, the same by uname and /proc/version.
running_release()
{
	local release proc

	release=$(uname -r)
	proc=$(awk '{ print $3 }' "/proc/version")
	[ "$release" = "$proc" ] || die "uname -r says $release, /proc/version $proc"
	echo "$release"
}

# The module this CPU's KVM uses: the one loaded, else by the CPU's flags.
vendor_module()
{
	if [ -d "/sys/module/kvm_intel" ]; then
		echo kvm_intel
	elif [ -d "/sys/module/kvm_amd" ]; then
		echo kvm_amd
	elif grep -qw vmx "/proc/cpuinfo"; then
		echo kvm_intel
	elif grep -qw svm "/proc/cpuinfo"; then
		echo kvm_amd
	else
		die "this CPU has neither VMX nor SVM (or it is off in the firmware): no KVM vendor module can load"
	fi
}

# The stock module's file under /lib/modules, compressed or not.
stock_file()
{
	local f

	for f in "/lib/modules/$RELEASE/kernel/arch/x86/kvm/$1.ko"{,.xz,.zst,.gz}; do
		[ -f "$f" ] && { echo "$f"; return 0; }
	done
	die "no stock $1 module under /lib/modules/$RELEASE/kernel/arch/x86/kvm"
}

# Refused before anything changes: modules for another kernel, or unsigned
# ones where the kernel takes signed ones only.
check_built()
{
	local file want vermagic enforce stock

	stock=$(stock_file kvm)
	want=$(modinfo -F vermagic "$stock")
	[[ $want == "$RELEASE "* ]] || die "the stock kvm's vermagic '$want' is not for the running $RELEASE"
	# Lockdown (Debian's under Secure Boot) refuses unsigned modules even
	# when sig_enforce says N.
	enforce=$(cat "/sys/module/module/parameters/sig_enforce" 2>/dev/null || echo N)
	grep -qE '\[(integrity|confidentiality)\]' "/sys/kernel/security/lockdown" 2>/dev/null && enforce=Y
	for file in "$@"; do
		[ -f "$file" ] || die "$file missing: build it with make kvm-modules KVER=$RELEASE"
		vermagic=$(modinfo -F vermagic "$file")
		[ "$vermagic" = "$want" ] ||
			die "$file: vermagic '$vermagic', the running kernel's is '$want': build for $RELEASE (make kvm-modules KVER=$RELEASE)"
		[ "$enforce" != Y ] || [ -n "$(modinfo -F sig_id "$file")" ] ||
			die "the kernel loads signed modules only (sig_enforce or lockdown: Secure Boot?) and $file is unsigned: sign it with a key enrolled with mokutil (scripts/sign-file sha256 KEY CERT $file)"
	done
}

check_root()
{
	[ "$(id -u)" = 0 ] || die "$1 needs root"
}

# KVM can be unloaded: no VM or open /dev/kvm holds the vendor module, and
# no module but the vendor one uses kvm.
check_unused()
{
	local holders count users

	[ -d "/sys/module/kvm" ] || return 0
	[ -f "/sys/module/kvm/refcnt" ] || die "kvm is built into the running kernel, not a module: there is nothing to swap"
	holders=$(ls "/sys/module/kvm/holders")
	for users in $holders; do
		case $users in kvm_amd | kvm_intel) ;; *) die "the module $users uses kvm: unload it first" ;; esac
	done
	if [ -d "/sys/module/$VENDOR" ]; then
		count=$(cat "/sys/module/$VENDOR/refcnt")
		[ "$count" = 0 ] ||
			die "/dev/kvm is in use ($VENDOR has $count users: running VMs, or processes with /dev/kvm open$(command -v fuser >/dev/null && fuser /dev/kvm 2>/dev/null | sed 's/^/: pids/')): stop them first"
	fi
}

unload_kvm()
{
	check_unused
	[ ! -d "/sys/module/$VENDOR" ] || rmmod "$VENDOR" || die "rmmod $VENDOR failed: is /dev/kvm in use?"
	# The vendor module again, so that a failure here leaves KVM as it was.
	[ ! -d "/sys/module/kvm" ] || rmmod kvm ||
		{ modprobe "$VENDOR"; die "rmmod kvm failed: another module or a user holds it; $VENDOR is loaded again"; }
}

# What modprobe would give a module and insmod does not: the options of
# /etc/modprobe.d (nested=1 and the like) and of the kernel's command line
# (kvm_amd.nested=0, or kvm-amd.nested=0).
module_options()
{
	local name=$1

	{
		modprobe -c | awk -v m="$name" '$1 == "options" && $2 == m { $1 = $2 = ""; print }'
		tr ' ' '\n' <"/proc/cmdline" | sed -n -e "s/^$name\.//p" -e "s/^${name//_/-}\.//p"
	} | xargs
}

# insmod FILE after its dependencies but kvm, each loaded with modprobe.
insmod_with_deps()
{
	local file=$1 name=$2 dep

	for dep in $(modinfo -F depends "$file" | tr , ' '); do
		[ "$dep" = kvm ] && continue
		modprobe "$dep" || return 1
	done
	# shellcheck disable=SC2046 # the options are words
	insmod "$file" $(module_options "$name")
}

# The stock modules back, with whatever of the built ones loaded gone.
load_stock()
{
	local m

	for m in "$VENDOR" kvm; do
		[ -d "/sys/module/$m" ] && rmmod "$m"
	done
	modprobe "$VENDOR"
}

swap_modules()
{
	check_root swap
	VENDOR=$(vendor_module)
	VENDOR_FILE=${VENDOR//_/-}
	check_built "$DIR/kvm.ko" "$DIR/$VENDOR_FILE.ko"
	unload_kvm
	if ! insmod_with_deps "$DIR/kvm.ko" kvm || ! insmod_with_deps "$DIR/$VENDOR_FILE.ko" "$VENDOR"; then
		note "loading the built modules failed (dmesg says why); loading the stock ones again"
		load_stock || die "modprobe $VENDOR failed too: KVM is not loaded"
		die "the stock modules are loaded again; the built ones did not load"
	fi
	note "loaded $DIR/kvm.ko and $DIR/$VENDOR_FILE.ko; back to the stock ones with: $0 restore"
	show_status
}

restore_modules()
{
	check_root restore
	VENDOR=$(vendor_module)
	[ ! -d "/lib/modules/$RELEASE/$INSTALL_SUBDIR" ] ||
		note "the built modules are installed in /lib/modules/$RELEASE/$INSTALL_SUBDIR: modprobe loads those; run '$0 uninstall' first for the stock ones"
	unload_kvm
	modprobe "$VENDOR" || die "modprobe $VENDOR failed: KVM is not loaded"
	show_status
}

install_modules()
{
	local dest=/lib/modules/$RELEASE/$INSTALL_SUBDIR files=("$DIR/kvm.ko") f

	check_root install
	for f in kvm-amd kvm-intel; do
		[ -f "$DIR/$f.ko" ] && files+=("$DIR/$f.ko")
	done
	check_built "${files[@]}"
	mkdir -p "$dest"
	cp "${files[@]}" "$dest/"
	depmod -a "$RELEASE"
	note "installed in $dest: modprobe now loads these ($(modinfo -k "$RELEASE" -F filename kvm)). Load them now with '$0 restore'; go back with '$0 uninstall' then '$0 restore' (or a reboot)"
}

uninstall_modules()
{
	local dest=/lib/modules/$RELEASE/$INSTALL_SUBDIR

	check_root uninstall
	[ -d "$dest" ] || { note "nothing installed in $dest"; return 0; }
	rm -rf "$dest"
	depmod -a "$RELEASE"
	note "removed $dest: modprobe loads the stock modules again ($(modinfo -k "$RELEASE" -F filename kvm)); '$0 restore' (or a reboot) replaces loaded ones"
}

show_status()
{
	local m events=/sys/kernel/tracing/events/kvm e missing=

	for m in kvm kvm_amd kvm_intel; do
		[ -d "/sys/module/$m" ] || continue
		if [ -f "/sys/module/$m/refcnt" ]; then
			echo "$m: loaded, taint '$(cat "/sys/module/$m/taint")', users $(cat "/sys/module/$m/refcnt")"
		else
			echo "$m: built into the kernel"
		fi
	done
	[ -d "/sys/module/kvm" ] || echo "kvm: not loaded"
	[ -d "$events" ] || { echo "series' events: cannot tell ($events not there: tracefs not mounted, or kvm not loaded)"; return 0; }
	for e in $SERIES_EVENTS; do
		[ -d "$events/$e" ] || missing="$missing $e"
	done
	echo "series' events: ${missing:+missing:}${missing:-present}"
}

main()
{
	local cmd=${1:-}

	[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: ${0##*/} swap|restore|install|uninstall|status [DIR]"
	need_cmd modinfo kmod
	RELEASE=$(running_release)
	DIR=${2:-$BUILD_DIR/kvm-modules/$RELEASE}
	case $cmd in
	swap) swap_modules ;;
	restore) restore_modules ;;
	install) install_modules ;;
	uninstall) uninstall_modules ;;
	status) show_status ;;
	*) die "unknown command '$cmd': swap, restore, install, uninstall or status" ;;
	esac
}

main "$@"
