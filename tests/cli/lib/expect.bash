# Shared by the CLI test scripts (sourced; not a test itself). Needs $placer, and counts
# into $n (checks) and $fail (failures).

# expect NAME EXPECTED_SUBSTRING... -- ARGS: `placer ARGS` exits non-zero (not a crash, not
# an internal error) and its output contains every substring.
expect() {
  local name=$1; shift
  local needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done; shift
  n=$((n + 1))
  out=$("$placer" "$@" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then echo "FAIL $name: exit 0"; fail=$((fail + 1)); return; fi
  if [ $rc -ge 128 ]; then echo "FAIL $name: crashed (exit $rc): $out"; fail=$((fail + 1)); return; fi
  if echo "$out" | grep -q "internal error"; then echo "FAIL $name: internal error: $out"; fail=$((fail + 1)); return; fi
  for s in "${needles[@]}"; do
    if ! echo "$out" | grep -qF -- "$s"; then
      echo "FAIL $name: message lacks '$s': $out"; fail=$((fail + 1)); return
    fi
  done
  echo "ok   $name: $(echo "$out" | tail -n 1)"
}

# check NAME CONDITION-COMMAND...: the command succeeds.
check() {
  local name=$1; shift
  n=$((n + 1))
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fail=$((fail + 1)); fi
}
