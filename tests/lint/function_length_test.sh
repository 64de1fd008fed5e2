#!/usr/bin/env bash
# Self-test of scripts/check_function_length.sh on a small tree made here: a 160-line and a
# 120-line function (inside `namespace a::b {`), and a long one under src/cli (not checked).
#   bash tests/lint/function_length_test.sh [SOURCE_DIR]
set -uo pipefail
src="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
check="$src/scripts/check_function_length.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0

# function_file NAME LINES: a C++ function NAME of exactly LINES lines.
function_file() {
  echo "int $1(int x) {"
  for ((i = 0; i < $2 - 2; ++i)); do echo "  x += $i;"; done
  echo "}"
}
mkdir -p "$tmp/tree/src/cli" "$tmp/tree/simulator"
{
  echo "namespace a::b {"
  function_file very_long 160
  function_file long_one 120
  function_file short_one 100
  echo "}  // namespace a::b"
} >"$tmp/tree/simulator/lengths.cpp"
function_file cli_main 200 >"$tmp/tree/src/cli/main.cpp"

# expect STATUS DESCRIPTION ALLOWLIST-TEXT [OPTIONS...]: the check exits with STATUS.
expect() {
  local want="$1" what="$2"
  printf '%s' "$3" >"$tmp/allow.txt"
  shift 3
  bash "$check" --root "$tmp/tree" --allowlist "$tmp/allow.txt" "$@" >"$tmp/out.txt" 2>&1
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"
    cat "$tmp/out.txt"
    failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}
# expect_output PATTERN DESCRIPTION: the last run printed a line matching PATTERN.
expect_output() {
  if grep -qE "$1" "$tmp/out.txt"; then
    echo "ok: $2"
  else
    echo "FAIL: $2: no line matches '$1'"
    cat "$tmp/out.txt"
    failures=$((failures + 1))
  fi
}

expect 1 "160 and 120 lines, empty allowlist" ""
expect_output "^ +160 +simulator/lengths.cpp:2 very_long +FAIL" "the 160-line function is reported"
expect_output "^ +120 +simulator/lengths.cpp:162 long_one +FAIL" "the 120-line function is reported"
expect_output "2 functions over 100 lines, 2 failing" "summary counts (src/cli and 100 lines skipped)"
expect 1 "the 160-line function listed without the over-150 mark" \
  $'simulator/lengths.cpp very_long  # being split\nsimulator/lengths.cpp long_one  # x\n'
expect 0 "both listed, the long one marked over 150" \
  $'simulator/lengths.cpp very_long  # over 150: being split\nsimulator/lengths.cpp long_one  # x\n'
expect 1 "the same with --strict" \
  $'simulator/lengths.cpp very_long  # over 150: being split\nsimulator/lengths.cpp long_one  # x\n' \
  --strict
expect 1 "the same with --max-hard 119 (long_one is over it, unmarked)" \
  $'simulator/lengths.cpp very_long  # over 150: being split\nsimulator/lengths.cpp long_one  # x\n' \
  --max-hard 119
expect 0 "a stale entry is reported, not a failure" \
  $'# comment\nsimulator/lengths.cpp very_long  # over 150: split pending\nsimulator/lengths.cpp long_one  # x\nsimulator/lengths.cpp short_one  # was long\n'
expect_output "can be removed.*simulator/lengths.cpp short_one" "the stale entry is named"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
