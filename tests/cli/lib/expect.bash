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

# refuse NAME EXPECTED_ERROR -- ARGS: `placer ARGS` exits 1, its one error line (the last
# of stderr) is exactly EXPECTED_ERROR, and it writes nothing into $tmp/out (where it was
# told to write). Needs $tmp.
refuse() {
  local name=$1 want=$2; shift 3
  n=$((n + 1))
  rm -rf "$tmp/out"; mkdir "$tmp/out"
  local out rc got
  out=$("$placer" "$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 1 ]; then echo "FAIL $name: exit $rc (want 1): $out"; fail=$((fail + 1)); return; fi
  # Notes may come first (e.g. "simulating the training step"); the error is one line, last.
  got=$(echo "$out" | tail -n 1)
  if [ "$(echo "$out" | grep -c 'error')" -ne 1 ]; then
    echo "FAIL $name: not exactly one error line: $out"; fail=$((fail + 1)); return
  fi
  if [ "$got" != "$want" ]; then
    printf 'FAIL %s:\n  got:  %s\n  want: %s\n' "$name" "$got" "$want"; fail=$((fail + 1)); return
  fi
  if [ -n "$(ls -A "$tmp/out")" ]; then
    echo "FAIL $name: wrote $(ls -A "$tmp/out")"; fail=$((fail + 1)); return
  fi
  echo "ok   $name"
}
