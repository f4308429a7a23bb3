/*
 * sql_guard_mysql.h - the statement guard of MySQL / MariaDB: the first of
 * the layers that keep a user statement read-only and bounded there (the
 * others, in exec_mysql.c and pipeline/db/engine_mysql.c: a READ ONLY
 * session and transaction rolled back, a SELECT-only account checked at
 * start, the statement time limit and KILL QUERY, multi-statements off at
 * the client, row and byte caps while fetching).
 *
 * No MySQL parser is packaged as a C library, so the guard reads the
 * statement's tokens as the server's lexer does under the session's
 * sql_mode (engine_mysql.c: NO_BACKSLASH_ESCAPES, no ANSI_QUOTES): '...'
 * and "..." strings with doubled quotes, `...` names, -- (followed by a
 * space), # and C comments.  It admits one statement that starts with
 * SELECT, WITH, VALUES or TABLE (after opening parentheses), and refuses,
 * anywhere in it:
 *   - a second statement (a ';' with anything but comments after it);
 *   - executable comments and optimizer hints (a C comment opening with
 *     '!', 'M!' or '+'), which the server runs and this guard could not read;
 *   - the words that write, lock or leave the statement: INTO (INTO
 *     OUTFILE / DUMPFILE / @var), UPDATE (FOR UPDATE), LOCK (LOCK IN SHARE
 *     MODE), FOR SHARE, PROCEDURE (PROCEDURE ANALYSE), INSERT, DELETE,
 *     REPLACE INTO, SET, CALL, GRANT, CREATE, DROP, ALTER, ...;
 *   - variables (@x, @@global.x) and := assignments;
 *   - calls of the functions that sleep, wait, lock, read files or burn CPU
 *     (SLEEP, BENCHMARK, GET_LOCK, RELEASE_LOCK, IS_FREE_LOCK, IS_USED_LOCK,
 *     LOAD_FILE, MASTER_POS_WAIT, ...), of sequences (NEXTVAL, NEXT VALUE
 *     FOR, ...), and of stored functions (a qualified db.f( or a quoted
 *     `f`( name: the account holds no EXECUTE, and the role check says so);
 *   - the system schemas mysql, performance_schema and sys, and
 *     information_schema except its TABLES and COLUMNS views (as the
 *     PostgreSQL guard admits information_schema.tables and .columns).
 * Words are matched ignoring case and only as unquoted words: a column
 * named `update` (quoted, as MySQL requires for a reserved word) passes.
 */
#ifndef T2S_SQL_GUARD_MYSQL_H
#define T2S_SQL_GUARD_MYSQL_H

#include "common/contract.h"
#include "common/error.h"

#include <stddef.h>

/*
 * Check sql (NUL-ended).  0 when admitted, with *ret_end the length of the
 * statement without a final ';' and what follows it (the text to send);
 * -T2S_ERR_SQL_REJECTED with err naming what was refused, or
 * -T2S_ERR_SQL_INVALID for text that does not lex (an unterminated string,
 * name or comment), holds no statement or starts with a word that opens
 * no MySQL statement.
 */
T2S_MUST_CHECK
int sql_guard_mysql_check(const char *sql, size_t *ret_end, struct t2s_error *err);

#endif
