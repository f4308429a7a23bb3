/*
 * tap.h - a minimal TAP producer for C unit tests.
 *
 * Each check prints "ok N - name" or "not ok N - name"; tap_done() prints the
 * plan and returns the process exit status (non-zero when any check failed).
 * scripts/test-summary.py counts these lines across every test program.
 *
 *   int main(void) {
 *       TAP_OK(1 + 1 == 2, "addition_works");
 *       TAP_STR_EQ(got, "x", "name_is_x");
 *       return tap_done();
 *   }
 */
#ifndef T2S_TAP_H
#define T2S_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_count;
static int tap_failed;

static inline int tap_ok(int cond, const char *name, const char *file, int line)
{
	tap_count++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tap_count, name);
	if (!cond) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

static inline void tap_skip(const char *name, const char *why)
{
	tap_count++;
	printf("ok %d - %s # SKIP %s\n", tap_count, name, why);
	fflush(stdout);
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#define TAP_OK(cond, name) tap_ok(!!(cond), (name), __FILE__, __LINE__)
#define TAP_STR_EQ(got, want, name)                                                      \
	do {                                                                             \
		const char *tap_g_ = (got), *tap_w_ = (want);                            \
		if (!tap_ok(tap_g_ && tap_w_ && strcmp(tap_g_, tap_w_) == 0, (name),     \
			    __FILE__, __LINE__))                                         \
			printf("#   got '%s', want '%s'\n", tap_g_ ? tap_g_ : "(null)",     \
			       tap_w_ ? tap_w_ : "(null)");                              \
	} while (0)
#define TAP_INT_EQ(got, want, name)                                                      \
	do {                                                                             \
		long long tap_g_ = (long long)(got), tap_w_ = (long long)(want);         \
		if (!tap_ok(tap_g_ == tap_w_, (name), __FILE__, __LINE__))               \
			printf("#   got %lld, want %lld\n", tap_g_, tap_w_);                 \
	} while (0)

/*
 * A fixture step that must work: call returns 0 (or more) on success and a
 * negative code on failure (functions marked T2S_MUST_CHECK, common/
 * contract.h).  Silent when it works; when it fails, a failed check naming
 * the call, so a broken fixture never lets later checks pass on stale data.
 */
#define TAP_SETUP(call)                                                                  \
	do {                                                                             \
		long long tap_r_ = (long long)(call);                                    \
		if (tap_r_ < 0) {                                                        \
			tap_ok(0, "setup: " #call, __FILE__, __LINE__);                  \
			printf("#   returned %lld\n", tap_r_);                             \
		}                                                                        \
	} while (0)
/* A step that must fail (the checks after it read what the failure left); silent when it does. */
#define TAP_EXPECT_FAIL(call)                                                            \
	do {                                                                             \
		if ((long long)(call) >= 0)                                              \
			tap_ok(0, "expected to fail: " #call, __FILE__, __LINE__);       \
	} while (0)

#endif
