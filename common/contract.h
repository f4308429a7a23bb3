/*
 * contract.h - contracts written in code rather than prose, in the style of
 * SQLite's sqliteInt.h.
 *
 * T2S_MUST_CHECK on the line before a declaration in a header:
 *
 *     T2S_MUST_CHECK
 *     int thing_open(const char *name, struct thing **ret, struct t2s_error *err);
 *
 * the compiler warns (an error under -Werror) when a caller drops the
 * result.  It marks the functions whose result says whether they did their
 * job: those returning 0 or a negative -T2S_ERR_* code, and those filling a
 * struct t2s_error.  Not marked: t2s_error_set and the config reader's
 * conf_bad, which only build an error their callers return, and strbuf's
 * appends (a failed append leaves the buffer as it was; their callers are
 * yet to be reviewed).  A caller that has good reason to go on after a
 * failure says so where it calls: gcc does not accept a (void) cast as
 * "checked", so write
 *
 *     if (thing_store(..., &e) < 0) {
 *             ... a comment: why going on is right here ...
 *     }
 *
 * ALWAYS(x) and NEVER(x) guard a condition the code believes can never be
 * false (ALWAYS) or never be true (NEVER), yet handles anyway because a
 * mistake there would be costly:
 *
 *     if (NEVER(i >= n))
 *             return -T2S_ERR_INTERNAL;
 *
 * Where NDEBUG is not defined the condition is asserted, so a test that
 * breaks the belief stops at once; with NDEBUG (meson -Db_ndebug=true, or
 * if-release in a release build) the macro is just the condition's value and
 * the defensive branch runs.  meson's b_ndebug is false by default, so every
 * build the project makes now (build/, the sanitizer builds, the Docker
 * release build) asserts.  Use assert() for an invariant the code does not
 * defend; use ALWAYS/NEVER when it does.  The condition is evaluated once in
 * either case.
 */
#ifndef T2S_CONTRACT_H
#define T2S_CONTRACT_H

#include <assert.h>

#if defined(__GNUC__) || defined(__clang__)
#define T2S_MUST_CHECK __attribute__((warn_unused_result))
#else
#define T2S_MUST_CHECK
#endif

/*
 * T2S_TSAN_UNWATCHED on a function: ThreadSanitizer does not instrument its
 * memory accesses.  Only for single-threaded work on memory no other thread
 * can see yet, whose result is published through a synchronising hand-off
 * (a loader parsing files into a structure it then returns), where watching
 * every byte costs the sanitizer build seconds and can find no race.
 */
#if defined(__GNUC__) || defined(__clang__)
#define T2S_TSAN_UNWATCHED __attribute__((no_sanitize("thread")))
#else
#define T2S_TSAN_UNWATCHED
#endif

#ifdef NDEBUG
#define ALWAYS(x) (x)
#define NEVER(x) (x)
#else
#define ALWAYS(x) ((x) ? 1 : (assert(0 && "ALWAYS(" #x ")"), 0))
#define NEVER(x) ((x) ? (assert(0 && "NEVER(" #x ")"), 1) : 0)
#endif

#endif
