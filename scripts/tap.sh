# tap.sh: one TAP result line at a time, for host and in-VM scripts alike (POSIX sh, sourced).
#
# tap_result STATUS DESCRIPTION prints "ok N ..." for STATUS 0 and "not ok N
# ..." otherwise; TAP_NR counts the results, TAP_FAILED becomes 1 on the
# first failure.

TAP_NR=0
TAP_FAILED=0

tap_result()
{
	TAP_NR=$((TAP_NR + 1))
	if [ "$1" = 0 ]; then
		echo "ok $TAP_NR $2"
	else
		echo "not ok $TAP_NR $2"
		TAP_FAILED=1
	fi
}
