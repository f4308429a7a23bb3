#!/bin/sh
# The whole test suite, as CI runs it (.ci/run calls exactly this):
#   1. install every dependency (Debian packages, scripts/install-deps.sh);
#   2. build three times: build/ (-O3 with debug info), build-sanitize/
#      (ASan+UBSan) and build-tsan/ (ThreadSanitizer; tests/meson.build gives
#      its tests TSAN_OPTIONS with halt_on_error and tests/tsan.supp);
#   3. start a real PostgreSQL and Redis on loopback, load Spider databases
#      into PostgreSQL when ../shared/datasets is present;
#   4. run every registered test on build/, all but the source checks
#      (suite tools) on build-sanitize/, and the unit and integration
#      suites but the no-tsan tests on build-tsan/ (whose integration tests start
#      build-tsan/text2sqld);
#   5. build build-fuzz/ with clang (-Dfuzz=true, fuzz/README.md) and run
#      each libFuzzer target for T2S_FUZZ_SECONDS (default 20), two at a
#      time; each target counts as one check;
#   6. print one closing line "N passed, N failed[, N skipped]" counting the
#      checks of all the builds and exit non-zero on any failure.
# T2S_SKIP_SANITIZE=1 skips both sanitizer builds and the fuzzing (quicker
# local runs); T2S_FUZZ=1 fuzzes all the same, T2S_FUZZ=0 never.
# T2S_TEST_JOBS=N runs N tests at a time (default: twice the cores, at most 8).
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
started=$(date +%s)

./scripts/install-deps.sh

build() { # build DIR [meson options...]
	dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >/dev/null
	fi
	if ! meson compile -C "$dir" >"$dir/meson-logs/compile.txt" 2>&1; then
		tail -40 "$dir/meson-logs/compile.txt"
		echo "== the build in $dir failed"
		echo "0 passed, 1 failed"
		exit 1
	fi
}
build build
builds="build"
if [ "${T2S_SKIP_SANITIZE:-0}" != 1 ]; then
	build build-sanitize -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
	build build-tsan -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debug
	builds="$builds build-sanitize build-tsan"
fi
fuzz=${T2S_FUZZ:-}
if [ -z "$fuzz" ]; then
	fuzz=1
	[ "${T2S_SKIP_SANITIZE:-0}" = 1 ] && fuzz=0
fi
if [ "$fuzz" = 1 ]; then
	if [ ! -f build-fuzz/build.ninja ]; then
		CC=clang meson setup build-fuzz -Dfuzz=true >/dev/null
	fi
	if ! meson compile -C build-fuzz >build-fuzz/meson-logs/compile.txt 2>&1; then
		tail -40 build-fuzz/meson-logs/compile.txt
		echo "== the build in build-fuzz failed"
		echo "0 passed, 1 failed"
		exit 1
	fi
	builds="$builds build-fuzz"
fi

. tests/lib/servers.sh
trap t2s_stop_servers EXIT INT TERM
t2s_start_postgres
t2s_start_redis

# Spider databases copied into PostgreSQL, so both engines are tested on the same schema.
: "${T2S_DATASETS:=$root/../shared/datasets}"
export T2S_DATASETS
T2S_TEST_PG_SPIDER_DBS=""
if [ -d "$T2S_DATASETS/spider-dev/database" ]; then
	for db in concert_singer pets_1 car_1 world_1 dog_kennels flight_2; do
		src="$T2S_DATASETS/spider-dev/database/$db/$db.sqlite"
		[ -f "$src" ] || continue
		python3 tests/lib/load_sqlite_into_pg.py "$src" --host "$T2S_TEST_PG_HOST" \
			--port "$T2S_TEST_PG_PORT" --dbname "$db" --reader-role t2s_reader >/dev/null
		T2S_TEST_PG_SPIDER_DBS="$T2S_TEST_PG_SPIDER_DBS $db"
	done
fi
export T2S_TEST_PG_SPIDER_DBS

# One MariaDB server for the whole run, with a few Spider databases and a SELECT-only account
# (t2s_reader, password in T2S_TEST_MARIADB_READER_PW) for the MySQL engine's tests.
T2S_TEST_MARIADB_SPIDER_DBS=""
T2S_TEST_MARIADB_READER_PW="t2s-reader-$$"
export T2S_TEST_MARIADB_READER_PW
if t2s_start_mariadb; then
	if [ -d "$T2S_DATASETS/spider-dev/database" ]; then
		for db in concert_singer pets_1 car_1 world_1; do
			src="$T2S_DATASETS/spider-dev/database/$db/$db.sqlite"
			[ -f "$src" ] || continue
			python3 tests/lib/load_sqlite_into_mariadb.py "$src" --socket "$T2S_TEST_MARIADB_SOCKET" \
				--dbname "$db" --reader-role t2s_reader --reader-password "$T2S_TEST_MARIADB_READER_PW" >/dev/null &&
				T2S_TEST_MARIADB_SPIDER_DBS="$T2S_TEST_MARIADB_SPIDER_DBS $db"
		done
	fi
else
	echo "== MariaDB did not start: its tests skip" >&2
fi
export T2S_TEST_MARIADB_SPIDER_DBS

# Tests at a time: twice the cores, at most 8 (T2S_TEST_JOBS overrides).  Most of a test's time is
# spent waiting (a stub's delay, a time limit, a service starting), so two per core keeps the cores
# busy: on 2 cores the three builds' tests took 229 + ~300 + ~345 s two at a time, 138 + 202 + 225 s
# four at a time.
jobs=${T2S_TEST_JOBS:-$(($(nproc) * 2))}
[ "$jobs" -gt 8 ] && [ -z "${T2S_TEST_JOBS:-}" ] && jobs=8
status=0
logs=""
for dir in $builds; do
	echo "== tests on $dir"
	suites=""
	# The tools suite reads sources only: the normal build runs it.  ThreadSanitizer runs the
	# unit and integration suites but the tests marked no-tsan (tests/meson.build: documents and
	# contracts checked one request at a time; the corpus suite is one request at a time too).
	[ "$dir" = build-sanitize ] && suites="--no-suite tools"
	[ "$dir" = build-tsan ] && suites="--suite unit --suite integration --no-suite no-tsan"
	[ "$dir" = build-fuzz ] && suites="--suite fuzz"
	# shellcheck disable=SC2086
	meson test -C "$dir" $suites --num-processes "$jobs" --print-errorlogs >"$dir/meson-logs/test-console.txt" 2>&1 ||
		status=1
	grep -E "^ *[0-9]+/[0-9]+ " "$dir/meson-logs/test-console.txt" || true
	logs="$logs $dir/meson-logs/testlog.json"
done
echo "== suite took $(($(date +%s) - started)) s"
# shellcheck disable=SC2086
python3 scripts/test-summary.py $logs || status=1
exit $status
