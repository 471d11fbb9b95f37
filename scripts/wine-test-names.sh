#!/bin/sh
# The names of the tests in the given Rust test files (each #[test] or #[tokio::test]
# function), one per line: `make test-rust` runs the Wine suites' tests beside the rest by name.
# Prints nothing (and fails) unless every test attribute gave a name.
names=$(awk '/^#\[(tokio::)?test/ { t = 1; next }
             t && /fn / { sub(/.*fn /, ""); sub(/\(.*/, ""); print; t = 0 }' "$@")
tests=$(cat "$@" | grep -cE '^#\[(tokio::)?test')
[ "$(printf '%s\n' "$names" | grep -c .)" -eq "$tests" ] || exit 1
printf '%s\n' "$names"
