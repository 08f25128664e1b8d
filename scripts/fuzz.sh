#!/usr/bin/env bash
# The deep fuzz run: many more examples per operation than `make test` uses, the coverage phase (boundary
# values of every parameter) on, and fresh random examples each time. Same test, same checks:
# tests/reliability/test_fuzz.py. Takes about 20 minutes on 2 cores.
#
#   scripts/fuzz.sh                    # 200 examples per operation
#   FUZZ_EXAMPLES=1000 scripts/fuzz.sh # deeper still
#   scripts/fuzz.sh -k usage_record    # extra pytest arguments: only some operations
set -euo pipefail
cd "$(dirname "$0")/.."
export FUZZ_EXAMPLES="${FUZZ_EXAMPLES:-200}" FUZZ_COVERAGE=1 FUZZ_RANDOM=1
exec make test PYTEST_ARGS="tests/reliability/test_fuzz.py -p no:cacheprovider $*"
