#!/bin/sh
# Installs every system package text2sqld needs to build, test and run, by Debian name.
# Used by README's first command, .ci/run and docker/Dockerfile. Idempotent.
# Set TEXT2SQLD_RUNTIME_ONLY=1 to install only what the running service needs.
# With the test packages it also installs the tests' npm packages from their lock
# files (tests/browser: playwright-core, which drives Debian's chromium, no browser is
# ever downloaded; tests/deploy: kubernetes-models; clients/js: typescript).
# Set TEXT2SQLD_RUNTIME_ONLY=1 to install only what the running service needs, and
# TEXT2SQLD_BUILD_ONLY=1 for what building needs without the test servers (docker/Dockerfile).
# Building fetches Swagger UI for /docs (scripts/embed_docs.py) and the playground's chart
# renderer (scripts/embed_playground.py) with npm pack: Debian's npm is
# installed when no npm is on the PATH.
set -eu

BUILD_PKGS="build-essential pkg-config meson ninja-build
 libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev libpq-dev libsqlite3-dev
 libhiredis-dev libpg-query-dev libssl-dev wordnet-base libmariadb-dev"
RUNTIME_PKGS="libmicrohttpd12 libcurl4 libjansson4 libpq5 libsqlite3-0 libhiredis0.14 libpg-query1504.0 libssl3 wordnet-base
 libmariadb3"
# prometheus ships promtool (check metrics, check rules: deploy/prometheus/).
TEST_PKGS="postgresql redis-server redis-tools sqlite3 curl python3 prometheus chromium nodejs"
# The integration tests validate responses against openapi/openapi.json with jsonschema
# (4.10 in Debian 12: JSON Schema 2020-12, OpenAPI 3.1's dialect).
TEST_PKGS="$TEST_PKGS python3-jsonschema"
# test_haproxy runs two replicas behind a real gateway (haproxy checking /readyz).
TEST_PKGS="$TEST_PKGS haproxy"
# The MySQL engine's tests run a real MariaDB server (tests/lib/servers.sh, t2s_start_mariadb)
# and load it with the mariadb client (mariadb-server brings both).
TEST_PKGS="$TEST_PKGS mariadb-server"
# The libFuzzer targets (fuzz/): clang and its runtime libraries (libclang_rt.fuzzer, .asan,
# .ubsan; libclang-rt-dev pulls libclang-rt-14-dev, the version of Debian 12's default clang).
TEST_PKGS="$TEST_PKGS clang libclang-rt-dev"
# test_jwt signs real RS256 and ES256 tokens (and tampered, expired, alg-confused ones).
TEST_PKGS="$TEST_PKGS python3-cryptography python3-jwt"

if [ "${TEXT2SQLD_RUNTIME_ONLY:-0}" != 1 ] && ! command -v npm >/dev/null 2>&1; then
  BUILD_PKGS="$BUILD_PKGS npm"
fi
if [ "${TEXT2SQLD_RUNTIME_ONLY:-0}" = 1 ]; then
  PKGS="$RUNTIME_PKGS ca-certificates"
elif [ "${TEXT2SQLD_BUILD_ONLY:-0}" = 1 ]; then
  PKGS="$BUILD_PKGS ca-certificates"
else
  PKGS="$BUILD_PKGS $TEST_PKGS ca-certificates"
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

if [ "${TEXT2SQLD_RUNTIME_ONLY:-0}" != 1 ]; then
  # npm ships inside NodeSource's nodejs and is a package of its own in Debian's.
  if ! command -v npm >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm
  fi
  # The tests' npm packages belong to the test set: not with TEXT2SQLD_BUILD_ONLY=1 (the image's
  # build stage never runs the tests).  Each folder is installed with `npm ci` from its lock file,
  # again only when the lock file changed since (the copy kept in node_modules says so):
  #   tests/browser  playwright-core (the playground in Debian's chromium)
  #   tests/deploy   kubernetes-models, yaml, typescript (deploy/kubernetes/ against the API schemas)
  #   clients/js     typescript and openapi-typescript (the client, built by test_js_client.py)
  #   tests/mcp      @modelcontextprotocol/sdk (the official MCP client, driven by test_mcp.py)
  #   tests/chart    vega-lite and ajv (answers' charts against the Vega-Lite schema, test_chart.py)
  if [ "${TEXT2SQLD_BUILD_ONLY:-0}" != 1 ]; then
    for dir in tests/browser tests/deploy clients/js tests/mcp tests/chart; do
      d="$(dirname "$0")/../$dir"
      if [ -f "$d/package-lock.json" ] &&
        ! cmp -s "$d/package-lock.json" "$d/node_modules/.package-lock.json.installed" 2>/dev/null; then
        (cd "$d" && npm ci --no-audit --no-fund --loglevel=error &&
          cp package-lock.json node_modules/.package-lock.json.installed)
      fi
    done
  fi
fi
