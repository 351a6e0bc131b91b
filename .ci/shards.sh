# shellcheck shell=bash
# Sourced by .ci/run (reference mode), .ci/kernel-classes, .ci/clang-libcxx and .ci/arm64.
#
# machine_independent_tests prints the test files (under tests/) whose code does not depend on the
# machine: the programs (tests/examples), the run folders and data (tests/train but TrainParity's
# file), the tokenizers, the docs and the chat templates over the models (tests/models/
# test_chat_session.cpp). The models they run are tested on their own by autograd/, nn/, optim/ and
# models/'s files. The stages that prove kernels of another class or machine (.ci/kernel-classes,
# .ci/arm64) run the rest; the x86-64 runs of the whole suite run these.
# kernel_suites_filter prints a --gtest_filter that leaves their test suites out of the whole binary.
machine_independent_tests() {
  local f
  for f in tests/examples/*.cpp tests/io/*.cpp tests/tokenizers/*.cpp tests/docs/*.cpp tests/train/*.cpp tests/models/test_chat_session.cpp; do
    [[ $f == tests/train/test_train_parity.cpp ]] || echo "$f"
  done
}
suites_of() { xargs grep -hoE '^(TEST|TEST_F|TEST_P)\( *[A-Za-z0-9_]+' | sed -E 's/.*\( *//' | sort -u; }
kernel_suites_filter() {
  local suites
  # the suites of those files (TEST, TEST_F, TEST_P) that no other file has a test of; a
  # parameterized one is "Prefix/Suite"
  mapfile -t suites < <(comm -23 <(machine_independent_tests | suites_of) \
                                 <(find tests -name '*.cpp' | sort | comm -23 - <(machine_independent_tests | sort) | suites_of))
  local filter=-
  for s in "${suites[@]}"; do filter+="$s.*:*/$s.*:"; done
  echo "${filter%:}"
}

# run_shards:
# run_shards runs a GoogleTest binary as two processes per core, each a shard of the tests
# (GTEST_TOTAL_SHARDS), prints each shard's summary and, for a shard that failed, the end of its
# output; it returns 1 when one failed. Two a core, not one: GoogleTest deals the tests out in
# turn, and a few long ones (minutes under AddressSanitizer or qemu) left one core's shard a
# minute behind the other's; with twice as many shards the cores share that work out.
#   run_shards [LAUNCHER...] BINARY [GTEST_ARGS...]   e.g. run_shards qemu-aarch64 build/tests/tapegrad_tests
# Several processes at once, each with a thread per core: OpenMP's threads must sleep, not spin,
# while they wait (OMP_WAIT_POLICY=passive), or they take the cores from each other's processes.
run_shards() {
  local shards logs failed=0 shard
  shards=$((2 * $(nproc)))
  logs=$(mktemp -d)
  local pids=()
  for ((shard = 0; shard < shards; shard++)); do
    OMP_WAIT_POLICY=passive GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard "$@" \
      >"$logs/$shard" 2>&1 &
    pids+=($!)
  done
  for ((shard = 0; shard < shards; shard++)); do
    if ! wait "${pids[$shard]}"; then
      failed=1
      grep -v '^\[ worst \|^\[ fuzz \|^\[ RUN \|^\[       OK \]' "$logs/$shard" | tail -60 >&2
      # a test that crashed (a signal, a sanitizer's report) has no FAILED line: the last one started
      echo "shard $shard: the last test it started: $(grep '^\[ RUN ' "$logs/$shard" | tail -1)" >&2
    fi
    echo "shard $shard: $(grep -E '^\[ *(PASSED|SKIPPED|FAILED) *\] [0-9]+ test' "$logs/$shard" | tr '\n' ' ')"
  done
  rm -rf "$logs"
  return "$failed"
}
