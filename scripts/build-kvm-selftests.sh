#!/bin/bash
# build-kvm-selftests.sh: build, statically, the in-tree KVM selftests that `make check` runs in the test VM.
#
# The new tsc_tracepoint_test from the series, and upstream tests whose
# pass on the patched kernel shows the series breaks nothing around the TSC
# and nested SVM. Installed with a `tests` list in build/kvm-selftests-install.

set -eu

. "$(dirname "$0")/common.sh"

readonly TESTS="x86_64/tsc_tracepoint_test x86_64/tsc_msrs_test x86_64/svm_vmcall_test
	x86_64/svm_nested_shutdown_test x86_64/kvm_clock_test"
readonly OUTPUT=$BUILD_DIR/kvm-selftests
readonly INSTALL=$BUILD_DIR/kvm-selftests-install

main()
{
	local tree test targets=

	tree=$(kernel_tree)
	make -s -C "$tree" O="$KBUILD_OUT" headers >/dev/null || die "make headers failed"
	for test in $TESTS; do
		targets="$targets $OUTPUT/$test"
	done
	mkdir -p "$OUTPUT"
	# shellcheck disable=SC2086
	make -C "$tree/tools/testing/selftests/kvm" OUTPUT="$OUTPUT" \
		KHDR_INCLUDES="-isystem $KBUILD_OUT/usr/include" EXTRA_CFLAGS=-static \
		-j"$(nproc)" $targets >"$OUTPUT/build.log" 2>&1 ||
		die "KVM selftests build failed, last lines of $OUTPUT/build.log:
$(tail -15 "$OUTPUT/build.log")"
	rm -rf "$INSTALL"
	mkdir -p "$INSTALL"
	for test in $TESTS; do
		cp "$OUTPUT/$test" "$INSTALL/"
		basename "$test"
	done >"$INSTALL/tests"
	cp "$tree/tools/testing/selftests/kvm/settings" "$INSTALL/settings"
}

main "$@"
