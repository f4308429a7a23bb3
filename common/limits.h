/*
 * limits.h - limits that cross layers: the same bound is enforced by the
 * HTTP handlers, the pipeline stages and the durable state, and documented
 * in openapi/openapi.json.  Defined once here so they cannot disagree.
 */
#ifndef T2S_LIMITS_H
#define T2S_LIMITS_H

/* Bytes of a natural-language question (/link, /evidence, stored examples). */
#define T2S_QUESTION_MAX_BYTES 4000

/*
 * Defaults shared by a library's fallback (an option left 0) and the
 * config's default for the setting (config/ sees only common/).
 */
/* Redis connect and per-command timeout (embedding cache, state store, health). */
#define T2S_REDIS_TIMEOUT_DEFAULT_MS 500L
/* A model call's whole-request timeout per attempt, and its connect timeout. */
#define T2S_MODEL_TIMEOUT_DEFAULT_MS 60000L
#define T2S_MODEL_CONNECT_TIMEOUT_DEFAULT_MS 2000L

#endif
