/*
 * sqlite_guard.c - authorizer, limits and deadline for SQLite connections
 * (see sqlite_guard.h).
 */
#include "pipeline/db/sqlite_guard.h"

#include "common/clock.h"
#include "common/error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- per-thread memory ceiling (see sqlite_guard.h) ---------------------- */

static sqlite3_mem_methods base_mem;     /* SQLite's own allocator, wrapped */
static pthread_once_t mem_once = PTHREAD_ONCE_INIT;
static int mem_init_rc;

/* This thread's statement budget; counting only while armed. */
static _Thread_local struct {
	bool armed;
	bool refused;
	long long used;  /* net bytes allocated since begin (frees of older blocks may make it negative) */
	long long peak;
	long long limit; /* 0: none */
} mem_budget;

static void *mem_malloc(int n)
{
	if (mem_budget.armed && mem_budget.limit > 0 && mem_budget.used + n > mem_budget.limit) {
		mem_budget.refused = true;
		return NULL;
	}
	void *p = base_mem.xMalloc(n);
	if (p && mem_budget.armed) {
		mem_budget.used += base_mem.xSize(p);
		if (mem_budget.used > mem_budget.peak)
			mem_budget.peak = mem_budget.used;
	}
	return p;
}

static void mem_free(void *p)
{
	if (p && mem_budget.armed)
		mem_budget.used -= base_mem.xSize(p);
	base_mem.xFree(p);
}

static void *mem_realloc(void *p, int n)
{
	if (!mem_budget.armed)
		return base_mem.xRealloc(p, n);
	long long old = p ? base_mem.xSize(p) : 0;
	if (mem_budget.limit > 0 && n > old && mem_budget.used + (n - old) > mem_budget.limit) {
		mem_budget.refused = true;
		return NULL;
	}
	void *q = base_mem.xRealloc(p, n);
	if (q) {
		mem_budget.used += base_mem.xSize(q) - old;
		if (mem_budget.used > mem_budget.peak)
			mem_budget.peak = mem_budget.used;
	}
	return q;
}

static int mem_size(void *p)
{
	return base_mem.xSize(p);
}

static int mem_roundup(int n)
{
	return base_mem.xRoundup(n);
}

static int mem_init(void *ctx)
{
	return base_mem.xInit(ctx);
}

static void mem_shutdown(void *ctx)
{
	base_mem.xShutdown(ctx);
}

static void mem_install(void)
{
	static const sqlite3_mem_methods wrapped = {mem_malloc, mem_free,  mem_realloc,  mem_size,
						   mem_roundup, mem_init, mem_shutdown, NULL};
	mem_init_rc = -T2S_ERR_INTERNAL;
	if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &base_mem) != SQLITE_OK || !base_mem.xMalloc)
		return;
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &wrapped) != SQLITE_OK)
		return;
	mem_init_rc = 0;
}

int sqlite_guard_global_init(void)
{
	pthread_once(&mem_once, mem_install);
	return mem_init_rc;
}

void sqlite_guard_memory_begin(size_t limit_bytes)
{
	mem_budget.armed = true;
	mem_budget.refused = false;
	mem_budget.used = 0;
	mem_budget.peak = 0;
	mem_budget.limit = limit_bytes > (size_t)INT64_MAX ? INT64_MAX : (long long)limit_bytes;
}

bool sqlite_guard_memory_end(size_t *ret_peak)
{
	bool refused = mem_budget.refused;
	if (ret_peak)
		*ret_peak = mem_budget.peak > 0 ? (size_t)mem_budget.peak : 0;
	mem_budget.armed = false;
	mem_budget.refused = false;
	return refused;
}

/* Functions that reach outside the database or load code. */
static const char *const denied_functions[] = {
	"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "sqlite_dbpage", NULL,
};

/* Pragmas that only describe the schema; usable as table-valued functions too. */
static const char *const schema_pragmas[] = {
	"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list", NULL,
};

/* The temp schema's own table, under both its names (the only thing in temp on these connections). */
static const char *const temp_schema_tables[] = {"sqlite_temp_master", "sqlite_temp_schema", NULL};

static bool in_list(const char *name, const char *const *list)
{
	for (; name && *list; list++)
		if (strcasecmp(name, *list) == 0)
			return true;
	return false;
}

static const char *action_name(int action)
{
	switch (action) {
	case SQLITE_INSERT: return "INSERT";
	case SQLITE_UPDATE: return "UPDATE";
	case SQLITE_DELETE: return "DELETE";
	case SQLITE_ATTACH: return "ATTACH";
	case SQLITE_DETACH: return "DETACH";
	case SQLITE_TRANSACTION: return "transaction control";
	case SQLITE_SAVEPOINT: return "SAVEPOINT";
	case SQLITE_PRAGMA: return "PRAGMA";
	case SQLITE_ALTER_TABLE: return "ALTER TABLE";
	case SQLITE_REINDEX: return "REINDEX";
	case SQLITE_ANALYZE: return "ANALYZE";
	case SQLITE_CREATE_VTABLE: return "CREATE VIRTUAL TABLE";
	case SQLITE_DROP_VTABLE: return "DROP VIRTUAL TABLE";
	default: return action >= SQLITE_CREATE_INDEX && action <= SQLITE_DROP_VIEW ? "schema change (CREATE/DROP)"
										      : "this operation";
	}
}

static int deny(struct sqlite_guard *g, const char *what, const char *arg)
{
	if (!g->denied[0])
		snprintf(g->denied, sizeof(g->denied), "%s%s%s is not allowed", what, arg ? " " : "", arg ? arg : "");
	return SQLITE_DENY;
}

static int authorize(void *ctx, int action, const char *a1, const char *a2, const char *db_name,
		     const char *trigger)
{
	struct sqlite_guard *g = ctx;
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_READ:
		/*
		 * Only the main database: not temp (temp.sqlite_master,
		 * sqlite_temp_master) nor any other.  A table read for no column
		 * (count(*)) by its bare name comes without db_name; the temp
		 * schema holds nothing but its schema table (these connections
		 * create nothing), so that table's names are refused by name.
		 */
		if (db_name && strcmp(db_name, "main") != 0)
			return deny(g, "reading from schema", db_name);
		if (in_list(a1, temp_schema_tables))
			return deny(g, "reading from schema", "temp");
		if (g->table_allowed && a1 && !g->table_allowed(g->table_ctx, a1)) {
			if (!g->hidden_table[0]) { /* through a view (or CTE), trigger names it */
				snprintf(g->hidden_table, sizeof(g->hidden_table), "%s", a1);
				snprintf(g->hidden_via, sizeof(g->hidden_via), "%s", trigger ? trigger : "");
			}
			return deny(g, "reading table", a1);
		}
		return SQLITE_OK;
	case SQLITE_FUNCTION:
		if (in_list(a2, denied_functions))
			return deny(g, "function", a2);
		return SQLITE_OK;
	case SQLITE_UPDATE:
		/*
		 * SQLite itself asks for this while it sets up the eponymous
		 * pragma_* virtual tables.  The connection is read-only, so no
		 * write can follow; user UPDATEs never get here (leading keyword
		 * check, sqlite3_stmt_readonly).
		 */
		if (a1 && strcmp(a1, "sqlite_master") == 0 && trigger == NULL)
			return SQLITE_OK;
		return deny(g, "UPDATE", a1);
	case SQLITE_PRAGMA:
		if (db_name && strcmp(db_name, "main") != 0)
			return deny(g, "PRAGMA on schema", db_name);
		if (in_list(a1, schema_pragmas))
			return SQLITE_OK;
		return deny(g, "PRAGMA", a1);
	default:
		return deny(g, action_name(action), NULL);
	}
}

/* ---- printf()/format() whose widths and precisions are bounded --------- */

/*
 * SQLite's printf() builds "%.*c" one character per loop turn without ever
 * looking at the progress handler or the length limit, so printf('%.*c',
 * 2147483647, 'x') runs for seconds past any deadline.  These replace
 * printf() and format() on every guarded connection: the format is read the
 * same way (flags, width, precision, "*" taking an argument, a length
 * modifier, the conversion), a width or precision longer than the
 * connection's SQLITE_LIMIT_LENGTH is refused at once with SQLITE_TOOBIG,
 * and each conversion is then written by sqlite3_str_appendf with the
 * argument converted as SQLite's SQL printf converts it (integers, doubles,
 * text); "%c" (first character of a text argument, repeated) is written here.
 */
static long long arg_int(sqlite3_value **argv, int argc, int *next)
{
	return *next < argc ? sqlite3_value_int64(argv[(*next)++]) : 0;
}

static double arg_double(sqlite3_value **argv, int argc, int *next)
{
	return *next < argc ? sqlite3_value_double(argv[(*next)++]) : 0.0;
}

static const char *arg_text(sqlite3_value **argv, int argc, int *next)
{
	return *next < argc ? (const char *)sqlite3_value_text(argv[(*next)++]) : NULL;
}

/* "%c": the first UTF-8 character of text, precision times, padded to width. */
static void append_char(sqlite3_str *out, const char *text, long long width, long long prec, bool left)
{
	char c[4];
	int n = 0;
	if (text && *text) {
		c[n++] = *text++;
		if (((unsigned char)c[0] & 0xc0) == 0xc0)
			while (n < 4 && ((unsigned char)*text & 0xc0) == 0x80)
				c[n++] = *text++;
	} else {
		c[n++] = '\0';
	}
	long long reps = prec > 1 ? prec : 1;
	long long pad = width > reps ? width - reps : 0;
	if (pad && !left)
		sqlite3_str_appendchar(out, (int)pad, ' ');
	if (n == 1) /* one call: SQLite fills the run itself (reps is within the length limit) */
		sqlite3_str_appendchar(out, (int)reps, c[0]);
	else
		for (long long i = 0; i < reps && sqlite3_str_errcode(out) == SQLITE_OK; i++)
			sqlite3_str_append(out, c, n);
	if (pad && left)
		sqlite3_str_appendchar(out, (int)pad, ' ');
}

static void bounded_printf(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *p = argc >= 1 ? (const char *)sqlite3_value_text(argv[0]) : NULL;
	if (!p)
		return; /* NULL, as SQLite's */
	sqlite3 *db = sqlite3_context_db_handle(ctx);
	long long limit = sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1);
	sqlite3_str *out = sqlite3_str_new(db);
	int next = 1;
	bool wrote = false; /* SQLite's printf gives NULL when nothing was written, even "" */
	while (*p && sqlite3_str_errcode(out) == SQLITE_OK) {
		if (*p != '%') {
			const char *q = strchr(p, '%');
			size_t n = q ? (size_t)(q - p) : strlen(p);
			sqlite3_str_append(out, p, (int)n);
			p += n;
			wrote = true;
			continue;
		}
		char spec[48];
		int k = 0;
		bool left = false;
		const char *spec_start = p;
		spec[k++] = *p++;
		while (*p && strchr("-+ 0#!,", *p)) {
			left |= *p == '-';
			if (k < 12)
				spec[k++] = *p;
			p++;
		}
		long long width = 0, prec = -1;
		if (*p == '*') {
			width = arg_int(argv, argc, &next);
			p++;
		} else {
			while (*p >= '0' && *p <= '9' && width <= limit)
				width = width * 10 + (*p++ - '0');
			while (*p >= '0' && *p <= '9')
				p++;
		}
		if (width < 0) {
			left = true;
			width = width < -limit ? limit + 1 : -width;
			if (k < 12)
				spec[k++] = '-';
		}
		if (*p == '.') {
			p++;
			prec = 0;
			if (*p == '*') {
				prec = arg_int(argv, argc, &next);
				p++;
				if (prec < 0) /* as SQLite: the absolute value */
					prec = prec < -limit ? limit + 1 : -prec;
			} else {
				while (*p >= '0' && *p <= '9' && prec <= limit)
					prec = prec * 10 + (*p++ - '0');
				while (*p >= '0' && *p <= '9')
					p++;
			}
		}
		while (*p == 'l')
			p++;
		char type = *p;
		if (!type) {
			if (p == spec_start + 1) { /* a lone '%' at the end is kept, as SQLite does */
				sqlite3_str_appendchar(out, 1, '%');
				wrote = true;
			}
			break;
		}
		p++;
		if (width > limit || prec > limit) {
			sqlite3_free(sqlite3_str_finish(out));
			sqlite3_result_error_toobig(ctx);
			return;
		}
		k += snprintf(spec + k, sizeof(spec) - (size_t)k, "%lld", width);
		if (prec >= 0)
			k += snprintf(spec + k, sizeof(spec) - (size_t)k, ".%lld", prec);
		switch (type) {
		case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'p': case 'r':
			snprintf(spec + k, sizeof(spec) - (size_t)k, "ll%c", type == 'p' ? 'X' : type);
			sqlite3_str_appendf(out, spec, arg_int(argv, argc, &next));
			break;
		case 'f': case 'e': case 'E': case 'g': case 'G':
			snprintf(spec + k, sizeof(spec) - (size_t)k, "%c", type);
			sqlite3_str_appendf(out, spec, arg_double(argv, argc, &next));
			break;
		case 's': case 'z': case 'q': case 'Q': case 'w':
			snprintf(spec + k, sizeof(spec) - (size_t)k, "%c", type == 'z' ? 's' : type);
			sqlite3_str_appendf(out, spec, arg_text(argv, argc, &next));
			break;
		case 'c':
			append_char(out, arg_text(argv, argc, &next), width, prec, left);
			break;
		case '%':
			sqlite3_str_appendchar(out, 1, '%');
			break;
		case 'n':
			break;
		default: /* SQLite stops at a conversion it does not know */
			p = "";
			continue;
		}
		wrote = true;
	}
	int rc = sqlite3_str_errcode(out);
	int n = sqlite3_str_length(out);
	char *text = sqlite3_str_finish(out);
	if (rc == SQLITE_TOOBIG)
		sqlite3_result_error_toobig(ctx);
	else if (rc == SQLITE_NOMEM)
		sqlite3_result_error_nomem(ctx);
	else if (text && n > 0)
		sqlite3_result_text(ctx, text, n, sqlite3_free);
	else if (wrote)
		sqlite3_result_text(ctx, "", 0, SQLITE_STATIC);
	if (rc != SQLITE_OK || n == 0)
		sqlite3_free(text);
}

static int progress(void *ctx)
{
	struct sqlite_guard *g = ctx;
	if (!g->deadline_ms && !g->cancelled)
		return 0;
	double now = clock_now_ms();
	if (g->deadline_ms > 0 && now > g->deadline_ms) {
		g->timed_out = true;
		return 1; /* interrupts the statement with SQLITE_INTERRUPT */
	}
	if (g->cancelled && now >= g->next_cancel_check_ms) {
		g->next_cancel_check_ms = now + SQLITE_GUARD_CANCEL_CHECK_MS;
		if (g->cancelled(g->cancel_ctx)) {
			g->was_cancelled = true;
			return 1;
		}
	}
	return 0;
}

int sqlite_guard_install(sqlite3 *db, struct sqlite_guard *g)
{
	static const struct {
		int id;
		int value;
	} limits[] = {
		{SQLITE_LIMIT_ATTACHED, 0},
		{SQLITE_LIMIT_LENGTH, SQLITE_GUARD_LENGTH_DEFAULT},
		{SQLITE_LIMIT_SQL_LENGTH, 1 << 20},
		{SQLITE_LIMIT_COLUMN, 2000},
		{SQLITE_LIMIT_EXPR_DEPTH, 500},
		{SQLITE_LIMIT_COMPOUND_SELECT, 100},
		{SQLITE_LIMIT_VDBE_OP, 1 << 20},
		{SQLITE_LIMIT_FUNCTION_ARG, 64},
		{SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 10000},
		{SQLITE_LIMIT_VARIABLE_NUMBER, 1000},
		{SQLITE_LIMIT_TRIGGER_DEPTH, 1},
		{SQLITE_LIMIT_WORKER_THREADS, 0},
	};
	g->mode = SQLITE_GUARD_QUERY;
	g->deadline_ms = 0;
	g->timed_out = false;
	g->cancelled = NULL;
	g->was_cancelled = false;
	g->denied[0] = '\0';
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		sqlite3_limit(db, limits[i].id, limits[i].value);
	if (sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL) != SQLITE_OK)
		return -T2S_ERR_INTERNAL;
	if (sqlite3_set_authorizer(db, authorize, g) != SQLITE_OK)
		return -T2S_ERR_INTERNAL;
	static const char *const printf_names[] = {"printf", "format"};
	for (size_t i = 0; i < sizeof(printf_names) / sizeof(printf_names[0]); i++)
		if (sqlite3_create_function_v2(db, printf_names[i], -1,
					       SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
					       bounded_printf, NULL, NULL, NULL) != SQLITE_OK)
			return -T2S_ERR_INTERNAL;
	sqlite3_progress_handler(db, 1000, progress, g);
	return 0;
}

void sqlite_guard_arm(struct sqlite_guard *g, enum sqlite_guard_mode mode, long timeout_ms)
{
	g->mode = mode;
	g->timed_out = false;
	g->denied[0] = '\0';
	g->deadline_ms = timeout_ms > 0 ? clock_now_ms() + (double)timeout_ms : 0;
	g->cancelled = NULL;
	g->cancel_ctx = NULL;
	g->was_cancelled = false;
}

void sqlite_guard_tables(struct sqlite_guard *g, bool (*allowed)(void *ctx, const char *table), void *ctx)
{
	g->table_allowed = allowed;
	g->table_ctx = ctx;
	g->hidden_table[0] = g->hidden_via[0] = '\0';
}

void sqlite_guard_cancel_on(struct sqlite_guard *g, bool (*cancelled)(void *ctx), void *ctx)
{
	g->cancelled = cancelled;
	g->cancel_ctx = ctx;
	g->next_cancel_check_ms = 0;
}
