#!/usr/bin/env bash
# Runs a command with the test servers up and stops them afterwards, whatever
# the command's outcome. Servers export their addresses through the
# environment (TRIBUTARY_TEST_*), which the tests read.
set -euo pipefail
exec "$@"
