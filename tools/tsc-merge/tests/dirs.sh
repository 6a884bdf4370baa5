# shellcheck shell=bash
# dirs.sh: the folders kvm-tsc-merge's scripts work in, sourced first by each of them with its arguments.
#
# TOOL_DIR is tools/tsc-merge, TESTS_DIR and FUZZ_SRC its tests/ and
# fuzz/, TOP_DIR the project; BIN_DIR is the build folder the script's
# first argument names (default: the project's build/tools), absolute, so
# that it holds wherever the script goes.
# shellcheck disable=SC2034 # for the scripts that source this
TOOL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TESTS_DIR=$TOOL_DIR/tests
FUZZ_SRC=$TOOL_DIR/fuzz
TOP_DIR=$(cd "$TOOL_DIR/../.." && pwd)
BIN_DIR=$(cd "${1:-$TOP_DIR/build/tools}" && pwd)
readonly TOOL_DIR TESTS_DIR FUZZ_SRC TOP_DIR BIN_DIR
