/*
 * limits.h - limits that cross layers: the same bound is enforced by the
 * HTTP handlers, the pipeline stages and the durable state, and documented
 * in openapi/openapi.json.  Defined once here so they cannot disagree.
 */
#ifndef T2S_LIMITS_H
#define T2S_LIMITS_H

/* Bytes of a natural-language question (/link, /evidence, stored examples). */
#define T2S_QUESTION_MAX_BYTES 4000

#endif
