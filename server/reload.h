/*
 * reload.h - SIGHUP: read the config file again and put into force what can
 * change while serving, refuse the rest.
 *
 * What a reload changes: the databases served (a name added is opened and
 * introspected, a name removed is no longer served; a database whose name
 * stays never changes in place: changing its settings is refused), auth
 * (API keys, scopes, rates), the limits that
 * are read per request (request_body_timeout_ms, drain_delay_ms,
 * drain_timeout_ms, key_rate_per_s, key_burst, key_max_concurrent,
 * key_max_timeout_ms, max_list_page_bytes) and listen.trusted_proxies.
 * Everything else (listen host and port, the limits the listener and the
 * library were started with, worker_threads, models, Redis, the
 * state store, caches, generation, linking, log) keeps its old value: a
 * change there is reported as refused ("needs a restart").  A file that
 * does not load or validate changes nothing.  The reloaded config is built
 * from the new file with every refused part replaced by the one in force, so
 * it is validated as a whole.
 *
 * Threads: called on the main thread only; requests already running keep
 * the config they arrived under (http_server_apply_config).
 */
#ifndef T2S_RELOAD_H
#define T2S_RELOAD_H

#include "common/contract.h"
#include "config/config.h"
#include "server/app.h"
#include "server/http_server.h"

#include <jansson.h>

/* The configs a process has put in force: the current one last.  Freed at exit, never before. */
struct reload_state {
	const char *path;      /* the config file */
	json_t *doc;           /* the document the current config was loaded from */
	struct config **cfgs;  /* malloc'd configs (cfgs[n - 1] is in force) */
	size_t n;
};

/*
 * Load path (the first config); on success *ret_cfg is in force and owned
 * by st.  0, or -T2S_ERR_* with err (nothing to release then but st).
 */
T2S_MUST_CHECK
int reload_state_init(struct reload_state *st, const char *path, const struct config **ret_cfg,
		      struct t2s_error *err);
/*
 * Read st->path again, log what changed, what was refused and why, and put
 * the new config in force on srv.  A bad file is logged and the config in
 * force kept.  Never exits.
 */
void reload_config(struct reload_state *st, struct app *app, struct http_server *srv);
/* Free every config and the document (after the server stopped). */
void reload_state_release(struct reload_state *st);

#endif
