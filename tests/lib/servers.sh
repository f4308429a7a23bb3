# servers.sh - start and stop the real PostgreSQL 15, Redis and MariaDB servers that
# integration tests talk to. POSIX sh; source it, do not execute it:
#
#   . tests/lib/servers.sh
#   trap t2s_stop_servers EXIT INT TERM
#   t2s_start_postgres || exit 1
#   t2s_start_redis || exit 1
#   ... run tests (they read the T2S_TEST_* variables) ...
#   t2s_stop_servers
#
# Both servers listen on 127.0.0.1 only, on a free port, with all their files
# in a fresh mktemp directory that t2s_stop_servers removes. Nothing is
# persisted (Postgres runs with fsync=off, Redis with --save '').
#
# Exported after t2s_start_postgres:
#   T2S_TEST_PG_HOST=127.0.0.1  T2S_TEST_PG_PORT  T2S_TEST_PG_DIR
#   T2S_TEST_PG_ADMIN_URL=postgresql://postgres@127.0.0.1:PORT/postgres
# (superuser `postgres`, trust authentication on loopback and on the unix
# socket in T2S_TEST_PG_DIR.)
# Exported after t2s_start_redis:
#   T2S_TEST_REDIS_PORT  T2S_TEST_REDIS_URL=redis://127.0.0.1:PORT/0  T2S_TEST_REDIS_DIR
#
# PostgreSQL refuses to run as root: as root the cluster is created and run
# as the `postgres` system user (via su); as any other user it runs as that
# user. T2S_PG_BINDIR overrides where initdb/pg_ctl are looked up.
# Functions return 0 on success and non-zero (with a message on stderr) on
# failure; t2s_stop_servers is idempotent and safe to call from a trap.

# Prints a TCP port that is free on 127.0.0.1 right now.
t2s_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Prints the directory holding initdb and pg_ctl (the newest installed major
# version unless T2S_PG_BINDIR is set).
_t2s_pg_bindir() {
	if [ -n "${T2S_PG_BINDIR:-}" ]; then
		echo "$T2S_PG_BINDIR"
		return 0
	fi
	if [ -x /usr/lib/postgresql/15/bin/initdb ]; then
		echo /usr/lib/postgresql/15/bin
		return 0
	fi
	_t2s_d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$_t2s_d" ] && [ -x "$_t2s_d/initdb" ]; then
		echo "$_t2s_d"
		return 0
	fi
	_t2s_d=$(command -v initdb 2>/dev/null) || return 1
	dirname "$_t2s_d"
}

# Runs a shell command line as the user that owns the cluster: `postgres`
# when we are root, ourselves otherwise. The command runs from the cluster
# directory (root's cwd may be unreadable for postgres).
_t2s_pg_run() {
	if [ "$(id -u)" = 0 ]; then
		su postgres -s /bin/sh -c "cd '$T2S_TEST_PG_DIR' && $1"
	else
		sh -c "cd '$T2S_TEST_PG_DIR' && $1"
	fi
}

# Starts a throw-away PostgreSQL cluster; see the file comment for the
# variables it exports. Retries on another port if the chosen one was taken
# in the meantime.
t2s_start_postgres() {
	if [ -n "${T2S_TEST_PG_DIR:-}" ] && [ -d "$T2S_TEST_PG_DIR" ]; then
		echo "t2s_start_postgres: already running in $T2S_TEST_PG_DIR" >&2
		return 1
	fi
	_t2s_bin=$(_t2s_pg_bindir) || {
		echo "t2s_start_postgres: PostgreSQL server binaries not found (set T2S_PG_BINDIR)" >&2
		return 1
	}
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		echo "t2s_start_postgres: running as root but there is no 'postgres' user" >&2
		return 1
	fi
	# As root the directory must be reachable by `postgres`, and the socket
	# path must stay short: use /tmp then, whatever TMPDIR says.
	if [ "$(id -u)" = 0 ]; then
		T2S_TEST_PG_DIR=$(mktemp -d /tmp/t2s-pg.XXXXXX) || return 1
	else
		T2S_TEST_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/t2s-pg.XXXXXX") || return 1
	fi
	export T2S_TEST_PG_DIR
	if [ "$(id -u)" = 0 ]; then
		chown postgres:postgres "$T2S_TEST_PG_DIR" || return 1
	fi
	chmod 700 "$T2S_TEST_PG_DIR"
	if ! _t2s_pg_run "'$_t2s_bin/initdb' -D '$T2S_TEST_PG_DIR/data' -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync" \
		>"$T2S_TEST_PG_DIR/initdb.log" 2>&1; then
		echo "t2s_start_postgres: initdb failed:" >&2
		cat "$T2S_TEST_PG_DIR/initdb.log" >&2
		rm -rf "$T2S_TEST_PG_DIR"
		unset T2S_TEST_PG_DIR
		return 1
	fi
	_t2s_try=0
	while [ "$_t2s_try" -lt 5 ]; do
		_t2s_try=$((_t2s_try + 1))
		_t2s_port=$(t2s_free_port) || return 1
		if _t2s_pg_run "'$_t2s_bin/pg_ctl' -D '$T2S_TEST_PG_DIR/data' -l '$T2S_TEST_PG_DIR/server.log' -w -t 60 \
			-o \"-c listen_addresses=127.0.0.1 -p $_t2s_port -k $T2S_TEST_PG_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off\" start" \
			>"$T2S_TEST_PG_DIR/pg_ctl.log" 2>&1; then
			T2S_TEST_PG_HOST=127.0.0.1
			T2S_TEST_PG_PORT=$_t2s_port
			T2S_TEST_PG_ADMIN_URL="postgresql://postgres@127.0.0.1:$_t2s_port/postgres"
			export T2S_TEST_PG_HOST T2S_TEST_PG_PORT T2S_TEST_PG_ADMIN_URL
			return 0
		fi
	done
	echo "t2s_start_postgres: pg_ctl start failed:" >&2
	cat "$T2S_TEST_PG_DIR/pg_ctl.log" "$T2S_TEST_PG_DIR/server.log" >&2 2>/dev/null
	rm -rf "$T2S_TEST_PG_DIR"
	unset T2S_TEST_PG_DIR
	return 1
}

# Stops the cluster started by t2s_start_postgres and removes its directory.
# Does nothing when none is running.
t2s_stop_postgres() {
	if [ -z "${T2S_TEST_PG_DIR:-}" ]; then
		return 0
	fi
	if [ -f "$T2S_TEST_PG_DIR/data/postmaster.pid" ]; then
		_t2s_bin=$(_t2s_pg_bindir) &&
			_t2s_pg_run "'$_t2s_bin/pg_ctl' -D '$T2S_TEST_PG_DIR/data' -m fast -w -t 60 stop" >/dev/null 2>&1
		if [ -f "$T2S_TEST_PG_DIR/data/postmaster.pid" ]; then
			# pg_ctl failed: kill the postmaster we started (first line of its pid file).
			_t2s_pid=$(head -n 1 "$T2S_TEST_PG_DIR/data/postmaster.pid" 2>/dev/null)
			[ -n "$_t2s_pid" ] && kill -QUIT "$_t2s_pid" 2>/dev/null
			sleep 1
		fi
	fi
	rm -rf "$T2S_TEST_PG_DIR"
	unset T2S_TEST_PG_DIR T2S_TEST_PG_HOST T2S_TEST_PG_PORT T2S_TEST_PG_ADMIN_URL
	return 0
}

# Starts a throw-away Redis server; see the file comment for the variables
# it exports.
t2s_start_redis() {
	if [ -n "${T2S_TEST_REDIS_DIR:-}" ] && [ -d "$T2S_TEST_REDIS_DIR" ]; then
		echo "t2s_start_redis: already running in $T2S_TEST_REDIS_DIR" >&2
		return 1
	fi
	command -v redis-server >/dev/null 2>&1 || {
		echo "t2s_start_redis: redis-server not found" >&2
		return 1
	}
	T2S_TEST_REDIS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/t2s-redis.XXXXXX") || return 1
	export T2S_TEST_REDIS_DIR
	_t2s_try=0
	while [ "$_t2s_try" -lt 5 ]; do
		_t2s_try=$((_t2s_try + 1))
		_t2s_port=$(t2s_free_port) || return 1
		rm -f "$T2S_TEST_REDIS_DIR/redis.pid"
		redis-server --bind 127.0.0.1 --port "$_t2s_port" --dir "$T2S_TEST_REDIS_DIR" \
			--save '' --appendonly no --daemonize yes \
			--pidfile "$T2S_TEST_REDIS_DIR/redis.pid" \
			--logfile "$T2S_TEST_REDIS_DIR/redis.log" >/dev/null 2>&1
		_t2s_wait=0
		while [ "$_t2s_wait" -lt 100 ]; do
			if [ "$(redis-cli -h 127.0.0.1 -p "$_t2s_port" ping 2>/dev/null)" = PONG ] &&
				[ -s "$T2S_TEST_REDIS_DIR/redis.pid" ]; then
				T2S_TEST_REDIS_PORT=$_t2s_port
				T2S_TEST_REDIS_URL="redis://127.0.0.1:$_t2s_port/0"
				export T2S_TEST_REDIS_PORT T2S_TEST_REDIS_URL
				return 0
			fi
			_t2s_wait=$((_t2s_wait + 1))
			sleep 0.1
		done
		# Not answering: kill ours if it wrote a pid file, then try another port.
		if [ -s "$T2S_TEST_REDIS_DIR/redis.pid" ]; then
			kill "$(cat "$T2S_TEST_REDIS_DIR/redis.pid")" 2>/dev/null
		fi
	done
	echo "t2s_start_redis: redis-server did not come up:" >&2
	cat "$T2S_TEST_REDIS_DIR/redis.log" >&2 2>/dev/null
	rm -rf "$T2S_TEST_REDIS_DIR"
	unset T2S_TEST_REDIS_DIR
	return 1
}

# Stops the Redis server started by t2s_start_redis and removes its
# directory. Does nothing when none is running.
t2s_stop_redis() {
	if [ -z "${T2S_TEST_REDIS_DIR:-}" ]; then
		return 0
	fi
	_t2s_pid=""
	if [ -s "$T2S_TEST_REDIS_DIR/redis.pid" ]; then
		_t2s_pid=$(cat "$T2S_TEST_REDIS_DIR/redis.pid")
	fi
	if [ -n "${T2S_TEST_REDIS_PORT:-}" ]; then
		redis-cli -h 127.0.0.1 -p "$T2S_TEST_REDIS_PORT" shutdown nosave >/dev/null 2>&1
	fi
	if [ -n "$_t2s_pid" ]; then
		_t2s_wait=0
		while kill -0 "$_t2s_pid" 2>/dev/null && [ "$_t2s_wait" -lt 50 ]; do
			_t2s_wait=$((_t2s_wait + 1))
			sleep 0.1
		done
		kill -0 "$_t2s_pid" 2>/dev/null && kill -KILL "$_t2s_pid" 2>/dev/null
	fi
	rm -rf "$T2S_TEST_REDIS_DIR"
	unset T2S_TEST_REDIS_DIR T2S_TEST_REDIS_PORT T2S_TEST_REDIS_URL
	return 0
}

# Starts a throw-away MariaDB server (mariadb-install-db into a fresh
# directory, mariadbd on 127.0.0.1 and a unix socket in it; as root it runs
# as the `mysql` system user). Exported:
#   T2S_TEST_MARIADB_HOST=127.0.0.1  T2S_TEST_MARIADB_PORT  T2S_TEST_MARIADB_DIR
#   T2S_TEST_MARIADB_SOCKET (root connects there without a password:
#   `mariadb --socket "$T2S_TEST_MARIADB_SOCKET" -u root`)
t2s_start_mariadb() {
	if [ -n "${T2S_TEST_MARIADB_DIR:-}" ] && [ -d "$T2S_TEST_MARIADB_DIR" ]; then
		echo "t2s_start_mariadb: already running in $T2S_TEST_MARIADB_DIR" >&2
		return 1
	fi
	command -v mariadb-install-db >/dev/null 2>&1 && [ -x /usr/sbin/mariadbd ] || {
		echo "t2s_start_mariadb: mariadb-server is not installed" >&2
		return 1
	}
	_t2s_user=$(id -un)
	if [ "$(id -u)" = 0 ]; then
		_t2s_user=mysql
		T2S_TEST_MARIADB_DIR=$(mktemp -d /tmp/t2s-maria.XXXXXX) || return 1
		chown mysql:mysql "$T2S_TEST_MARIADB_DIR" || return 1
	else
		T2S_TEST_MARIADB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/t2s-maria.XXXXXX") || return 1
	fi
	export T2S_TEST_MARIADB_DIR
	chmod 700 "$T2S_TEST_MARIADB_DIR"
	if ! mariadb-install-db --no-defaults --user="$_t2s_user" --datadir="$T2S_TEST_MARIADB_DIR/data" \
		--auth-root-authentication-method=socket --skip-test-db >"$T2S_TEST_MARIADB_DIR/install.log" 2>&1; then
		echo "t2s_start_mariadb: mariadb-install-db failed:" >&2
		cat "$T2S_TEST_MARIADB_DIR/install.log" >&2
		rm -rf "$T2S_TEST_MARIADB_DIR"
		unset T2S_TEST_MARIADB_DIR
		return 1
	fi
	T2S_TEST_MARIADB_SOCKET="$T2S_TEST_MARIADB_DIR/mysqld.sock"
	_t2s_try=0
	while [ "$_t2s_try" -lt 5 ]; do
		_t2s_try=$((_t2s_try + 1))
		_t2s_port=$(t2s_free_port) || return 1
		/usr/sbin/mariadbd --no-defaults --user="$_t2s_user" --datadir="$T2S_TEST_MARIADB_DIR/data" \
			--bind-address=127.0.0.1 --port="$_t2s_port" --socket="$T2S_TEST_MARIADB_SOCKET" \
			--pid-file="$T2S_TEST_MARIADB_DIR/mariadbd.pid" --log-error="$T2S_TEST_MARIADB_DIR/server.log" \
			--skip-log-bin --innodb-buffer-pool-size=32M --innodb-log-file-size=16M \
			--innodb-flush-log-at-trx-commit=0 --skip-name-resolve --character-set-server=utf8mb4 \
			--collation-server=utf8mb4_general_ci >/dev/null 2>&1 &
		_t2s_wait=0
		while [ "$_t2s_wait" -lt 300 ]; do
			if mariadb-admin --no-defaults --socket="$T2S_TEST_MARIADB_SOCKET" -u root ping >/dev/null 2>&1; then
				T2S_TEST_MARIADB_HOST=127.0.0.1
				T2S_TEST_MARIADB_PORT=$_t2s_port
				export T2S_TEST_MARIADB_HOST T2S_TEST_MARIADB_PORT T2S_TEST_MARIADB_SOCKET
				return 0
			fi
			_t2s_wait=$((_t2s_wait + 1))
			sleep 0.1
		done
		if [ -s "$T2S_TEST_MARIADB_DIR/mariadbd.pid" ]; then
			kill "$(cat "$T2S_TEST_MARIADB_DIR/mariadbd.pid")" 2>/dev/null
			sleep 1
		fi
	done
	echo "t2s_start_mariadb: mariadbd did not come up:" >&2
	cat "$T2S_TEST_MARIADB_DIR/server.log" >&2 2>/dev/null
	rm -rf "$T2S_TEST_MARIADB_DIR"
	unset T2S_TEST_MARIADB_DIR
	return 1
}

# Stops the server started by t2s_start_mariadb and removes its directory.
t2s_stop_mariadb() {
	if [ -z "${T2S_TEST_MARIADB_DIR:-}" ]; then
		return 0
	fi
	_t2s_pid=""
	if [ -s "$T2S_TEST_MARIADB_DIR/mariadbd.pid" ]; then
		_t2s_pid=$(cat "$T2S_TEST_MARIADB_DIR/mariadbd.pid")
	fi
	if [ -n "$_t2s_pid" ]; then
		kill "$_t2s_pid" 2>/dev/null
		_t2s_wait=0
		while kill -0 "$_t2s_pid" 2>/dev/null && [ "$_t2s_wait" -lt 100 ]; do
			_t2s_wait=$((_t2s_wait + 1))
			sleep 0.1
		done
		kill -0 "$_t2s_pid" 2>/dev/null && kill -KILL "$_t2s_pid" 2>/dev/null
	fi
	rm -rf "$T2S_TEST_MARIADB_DIR"
	unset T2S_TEST_MARIADB_DIR T2S_TEST_MARIADB_HOST T2S_TEST_MARIADB_PORT T2S_TEST_MARIADB_SOCKET
	return 0
}

# Stops whatever t2s_start_postgres / t2s_start_redis / t2s_start_mariadb started. Idempotent.
t2s_stop_servers() {
	t2s_stop_postgres
	t2s_stop_redis
	t2s_stop_mariadb
	return 0
}
