#!/bin/sh
# run-target.sh BINARY SEEDS WORK [DICT] - one bounded libFuzzer run of a fuzz target,
# as `meson test -C build-fuzz --suite fuzz` (scripts/test.sh) runs it.
#
# Runs BINARY for T2S_FUZZ_SECONDS seconds (default 20) on the corpus
# WORK/corpus (kept between runs, grows) seeded from SEEDS (fuzz/corpus/<target>,
# only read; every seed is replayed first, so a crash input committed there is
# a regression test).  A crash, leak, UB report or an input slower than 10 s
# is written to WORK/artifacts/ and fails the run (libFuzzer exits non-zero).
# DICT (optional, a file of fuzz/dict/) is a libFuzzer dictionary.
# T2S_FUZZ_ARGS adds libFuzzer options (e.g. "-jobs=2 -workers=2").
set -eu
bin=$1
seeds=$2
work=$3
dict=""
[ $# -ge 4 ] && dict="-dict=$4"
secs=${T2S_FUZZ_SECONDS:-20}
mkdir -p "$work/corpus" "$work/artifacts"
# A hard bound in case an input wedges the target past libFuzzer's own -timeout.
# shellcheck disable=SC2086
exec timeout -k 10 $((secs * 2 + 120)) "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-max_len=16384 -print_final_stats=1 -artifact_prefix="$work/artifacts/" $dict ${T2S_FUZZ_ARGS:-} \
	"$work/corpus" "$seeds"
