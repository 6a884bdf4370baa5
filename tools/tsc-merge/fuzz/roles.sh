# shellcheck shell=bash
# roles.sh: the command line fuzz/driver.c gives kvm-tsc-merge in each fuzzing role, for the scripts that replay its inputs.
#
# role_argv SEED_FILES ROLE FILE sets ARGV: FILE as the host trace (-H)
# with SEED_FILES/guest-step.dat as the guest, FILE as the guest trace
# with SEED_FILES/host-step.dat as the host, or, for args, FILE's
# NUL-separated arguments. Keep in step with driver.c's run_trace_role().
# shellcheck disable=SC2034 # ARGV is the caller's
role_argv()
{
	case $2 in
	host) ARGV=(-q -k 1000 -o /dev/null -s /dev/null -p /dev/null -H "$3" -g "$1/guest-step.dat") ;;
	guest) ARGV=(-q -k 1000 -o /dev/null -s /dev/null -p /dev/null -H "$1/host-step.dat" -g "$3") ;;
	args) mapfile -d '' ARGV <"$3" ;;
	esac
}
