/*
 * mcp_session.h - the sessions of the MCP endpoint (handlers/mcp.c):
 * Streamable HTTP's Mcp-Session-Id, issued at initialize and required on
 * every later request of the session.
 *
 * A session belongs to the API key that opened it (by the key's name; with
 * auth off, to everyone): used with another key it is answered as unknown.
 * Sessions are bounded like connections: at most limits.mcp_max_sessions at
 * once, and one unused for limits.mcp_session_idle_s is ended (the config a
 * request arrived under says both, so a reload takes effect at once).  When
 * the table is full, opening one ends the opening key's least recently used
 * session (a client that reconnects without DELETE only crowds itself out),
 * else fails -T2S_ERR_UNAVAILABLE: another key's sessions are never ended.
 *
 * The table lives in app->mcp_sessions (made and freed by main);
 * every call takes a lock, held for a scan of at most mcp_max_sessions
 * entries.  Ids are 32 hex digits from getrandom (128 bits).
 */
#ifndef T2S_MCP_SESSION_H
#define T2S_MCP_SESSION_H

#include "common/contract.h"
#include "server/http.h"

#define MCP_SESSION_ID_SIZE 33      /* 32 hex digits and a NUL */
#define MCP_PROTOCOL_VERSION_SIZE 16

struct mcp_sessions;

/* A new empty table, or NULL (out of memory).  Registers the gauge text2sqld_mcp_sessions. */
struct mcp_sessions *mcp_sessions_new(void);
/* Free the table and its sessions; NULL is fine. */
void mcp_sessions_free(struct mcp_sessions *s);

/*
 * Open a session for req's key that speaks protocol version (copied):
 * 0 and ret_id filled, or -T2S_ERR_UNAVAILABLE (the table is full of other
 * keys' sessions) / -T2S_ERR_NOMEM with err's message.
 */
T2S_MUST_CHECK
int mcp_session_open(struct http_request *req, const char *version, char ret_id[MCP_SESSION_ID_SIZE],
		     struct t2s_error *err);

/*
 * Use session id for req: 0 (the session's idle clock restarts; its protocol
 * version copied into ret_version when not NULL) or -T2S_ERR_NOT_FOUND when
 * no such session is open for req's key (never issued, ended, expired).
 */
T2S_MUST_CHECK
int mcp_session_use(struct http_request *req, const char *id, char ret_version[MCP_PROTOCOL_VERSION_SIZE]);

/* End session id of req's key: 0, or -T2S_ERR_NOT_FOUND as mcp_session_use. */
T2S_MUST_CHECK
int mcp_session_close(struct http_request *req, const char *id);

#endif
