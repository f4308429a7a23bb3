/*
 * test_embed_cache.c - the two-layer embedding cache against a real Redis.
 *
 * Starts a private redis-server (daemonized, loopback, a free port, a temp
 * dir, no persistence), kills it with SIGKILL, freezes it with SIGSTOP, and
 * restarts it on the same port (also while 8 threads hammer the cache) to
 * exercise the circuit breaker and the reconnection.  Two cache objects in one process stand in for two service
 * replicas sharing that Redis.  Without redis-server installed, the Redis
 * checks are skipped and the in-process checks still run.  Prints TAP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "common/clock.h"
#include "common/metrics.h"
#include "pipeline/models/embed_cache.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/tap.h"

#define PREFIX "t2s:test:emb:"

static int redis_port;
static char redis_dir[64] = "";
static char redis_url[64];

/* ---- helpers: Redis process ---- */

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return ntohs(a.sin_port);
}

static int port_accepts(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Wait until the port accepts (want=1) or refuses (want=0) connections; 1 when it did. */
static int wait_port(int port, int want, long max_ms)
{
	for (long t = 0; t < max_ms; t += 20) {
		if (port_accepts(port) == want)
			return 1;
		sleep_ms(20);
	}
	return 0;
}

static int start_redis(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "redis-server --bind 127.0.0.1 --port %d --dir %s --save '' --appendonly no "
		 "--daemonize yes --pidfile %s/redis.pid --logfile %s/redis.log",
		 redis_port, redis_dir, redis_dir, redis_dir);
	if (system(cmd) != 0)
		return -1;
	return wait_port(redis_port, 1, 5000) ? 0 : -1;
}

static pid_t redis_pid(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/redis.pid", redis_dir);
	FILE *f = fopen(path, "r");
	long pid = 0;
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return (pid_t)pid;
}

static int kill_redis(void)
{
	pid_t pid = redis_pid();
	if (pid <= 0 || kill(pid, SIGKILL) != 0)
		return -1;
	return wait_port(redis_port, 0, 5000) ? 0 : -1;
}

static void stop_redis(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "redis-cli -p %d shutdown nosave >/dev/null 2>&1", redis_port);
	if (system(cmd) != 0 || !wait_port(redis_port, 0, 5000)) {
		pid_t pid = redis_pid();
		if (pid > 0)
			kill(pid, SIGKILL);
	}
}

/* Run redis-cli with args; its stdout into out (NUL-terminated). */
static int redis_cli(const char *args, char *out, size_t size)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "redis-cli -p %d --raw %s 2>/dev/null", redis_port, args);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = fread(out, 1, size - 1, p);
	out[n] = '\0';
	return pclose(p) == 0 ? 0 : -1;
}

/* ---- helpers: values and metrics ---- */

/* A deterministic blob for key number i, with NUL bytes and varying length. */
static size_t make_value(unsigned i, unsigned char *buf, size_t max)
{
	size_t len = 1 + (i * 37u) % 1500u;
	if (len > max)
		len = max;
	for (size_t j = 0; j < len; j++)
		buf[j] = (unsigned char)((i * 7u + j * 13u) & 0xff);
	if (len > 2)
		buf[1] = 0;
	return len;
}

static int value_matches(unsigned i, const struct embed_cache_blob *b)
{
	unsigned char want[2048];
	size_t len = make_value(i, want, sizeof(want));
	return b->data && b->len == len && memcmp(b->data, want, len) == 0;
}

static void free_blobs(struct embed_cache_blob *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(b[i].data);
}

/* The value of one exposition line starting with series (name and labels); -1 when absent. */
static double metric_value(const char *series)
{
	size_t len;
	char *text = metrics_render(&len);
	double v = -1;
	size_t sl = strlen(series);
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (strncmp(line, series, sl) == 0 && line[sl] == ' ') {
			v = strtod(line + sl + 1, NULL);
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	return v;
}

static double redis_errors(void)
{
	double v = metric_value("text2sqld_embed_cache_redis_errors_total");
	return v < 0 ? 0 : v;
}

static struct embed_cache *new_cache(const char *url, size_t mem_max, long retry_after_ms, int pool)
{
	struct embed_cache_options o = {
		.redis_url = url,
		.redis_timeout_ms = 300,
		.redis_pool_size = pool,
		.memory_max_bytes = mem_max,
		.key_prefix = PREFIX,
		.retry_after_ms = retry_after_ms,
	};
	struct embed_cache *c = NULL;
	struct t2s_error err;
	if (embed_cache_new(&o, &c, &err) < 0) {
		printf("# embed_cache_new: %s\n", err.message);
		return NULL;
	}
	return c;
}

static int put_one(struct embed_cache *c, const char *key, const void *data, size_t len,
		   struct embed_cache_stats *st)
{
	const char *keys[1] = {key};
	struct embed_cache_blob b = {(void *)data, len};
	return embed_cache_put_many(c, keys, &b, 1, st);
}

/* ---- in-process checks ---- */

static void test_no_redis_in_process_only(void)
{
	struct embed_cache *c = new_cache(NULL, 1 << 20, 1000, 2);
	TAP_OK(c != NULL, "no_redis_cache_creates");
	if (!c)
		return;
	const char *keys[2] = {"a", "b"};
	struct embed_cache_blob got[2];
	struct embed_cache_stats st;
	int rc = embed_cache_get_many(c, keys, 2, got, &st);
	TAP_OK(rc == 0 && !got[0].data && !got[1].data && st.misses == 2 && st.memory_hits == 0,
	       "no_redis_get_before_put_misses");
	TAP_OK(!st.redis_failed, "no_redis_miss_is_not_a_redis_failure");
	TAP_INT_EQ(put_one(c, "a", "vec-a", 5, &st), 0, "no_redis_put_succeeds");
	rc = embed_cache_get_many(c, keys, 2, got, &st);
	TAP_OK(rc == 0 && got[0].data && got[0].len == 5 && memcmp(got[0].data, "vec-a", 5) == 0 && !got[1].data,
	       "no_redis_get_after_put_hits_memory");
	TAP_OK(st.memory_hits == 1 && st.redis_hits == 0 && st.misses == 1, "no_redis_stats_count_one_memory_hit");
	free_blobs(got, 2);
	TAP_OK(!embed_cache_redis_healthy(c), "no_redis_reports_redis_unhealthy");

	/* Replacing a key keeps only the new value. */
	put_one(c, "a", "v2", 2, NULL);
	rc = embed_cache_get_many(c, keys, 1, got, NULL);
	TAP_OK(rc == 0 && got[0].len == 2 && memcmp(got[0].data, "v2", 2) == 0, "put_replaces_existing_value");
	TAP_INT_EQ(embed_cache_memory_bytes(c), 1 + 2, "replaced_value_counted_once");
	free_blobs(got, 1);

	/* Empty blob is a hit with len 0 and non-NULL data. */
	put_one(c, "empty", NULL, 0, NULL);
	const char *ek[1] = {"empty"};
	rc = embed_cache_get_many(c, ek, 1, got, &st);
	TAP_OK(rc == 0 && got[0].data && got[0].len == 0 && st.memory_hits == 1, "empty_blob_is_a_hit");
	free_blobs(got, 1);
	embed_cache_free(c);
	embed_cache_free(NULL);
}

static void test_limits(void)
{
	struct embed_cache *c = new_cache(NULL, 1 << 20, 1000, 2);
	if (!c)
		return;
	static unsigned char big[EMBED_CACHE_BLOB_MAX + 1];
	memset(big, 0xab, sizeof(big));
	TAP_INT_EQ(put_one(c, "big", big, sizeof(big), NULL), -T2S_ERR_INVALID, "blob_over_64k_rejected");
	TAP_INT_EQ(put_one(c, "max", big, EMBED_CACHE_BLOB_MAX, NULL), 0, "blob_of_exactly_64k_accepted");
	const char *keys[3] = {"big", "max", NULL};
	struct embed_cache_blob got[3];
	struct embed_cache_stats st;
	int rc = embed_cache_get_many(c, keys, 3, got, &st);
	TAP_OK(rc == 0 && !got[0].data && got[1].len == EMBED_CACHE_BLOB_MAX && !got[2].data && st.misses == 2,
	       "rejected_blob_absent_and_null_key_is_a_miss");
	free_blobs(got, 3);

	/* A batch with one bad entry stores nothing. */
	const char *pk[2] = {"ok1", "ok2"};
	struct embed_cache_blob pb[2] = {{"x", 1}, {big, sizeof(big)}};
	TAP_INT_EQ(embed_cache_put_many(c, pk, pb, 2, NULL), -T2S_ERR_INVALID, "batch_with_oversize_blob_rejected");
	rc = embed_cache_get_many(c, pk, 1, got, NULL);
	TAP_OK(rc == 0 && !got[0].data, "rejected_batch_stored_nothing");
	free_blobs(got, 1);

	char longkey[EMBED_CACHE_KEY_MAX + 2];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	TAP_INT_EQ(put_one(c, longkey, "x", 1, NULL), -T2S_ERR_INVALID, "over_long_key_rejected");
	embed_cache_free(c);
}

static void test_memory_bound(void)
{
	const size_t bound = 16 * 1024;
	struct embed_cache *c = new_cache(NULL, bound, 1000, 2);
	if (!c)
		return;
	unsigned char val[100];
	char key[32];
	size_t max_seen = 0, inserted = 0;
	unsigned n = 0;
	while (inserted < 10 * bound) {
		int kl = snprintf(key, sizeof(key), "key-%05u", n);
		memset(val, (int)(n & 0xff), sizeof(val));
		put_one(c, key, val, sizeof(val), NULL);
		inserted += (size_t)kl + sizeof(val);
		size_t b = embed_cache_memory_bytes(c);
		if (b > max_seen)
			max_seen = b;
		n++;
	}
	TAP_OK(max_seen <= bound, "memory_bytes_never_exceed_bound_after_10x_inserts");
	TAP_OK(embed_cache_memory_bytes(c) > bound / 2, "memory_layer_stays_filled_near_bound");
	double gauge = metric_value("text2sqld_embed_cache_memory_bytes");
	TAP_INT_EQ((long long)gauge, (long long)embed_cache_memory_bytes(c), "memory_gauge_matches_cache_bytes");

	/* The 20 most recent keys are present; the first is gone. */
	int recent_ok = 1;
	for (unsigned i = n - 20; i < n; i++) {
		snprintf(key, sizeof(key), "key-%05u", i);
		const char *k[1] = {key};
		struct embed_cache_blob got;
		if (embed_cache_get_many(c, k, 1, &got, NULL) != 0 || !got.data || got.len != 100 ||
		    ((unsigned char *)got.data)[0] != (i & 0xff))
			recent_ok = 0;
		free(got.data);
	}
	TAP_OK(recent_ok, "most_recent_keys_survive_eviction");
	const char *first[1] = {"key-00000"};
	struct embed_cache_blob got;
	TAP_SETUP(embed_cache_get_many(c, first, 1, &got, NULL));
	TAP_OK(!got.data, "oldest_key_evicted");

	/* LRU: touching an old key protects it from the next evictions. */
	snprintf(key, sizeof(key), "key-%05u", n - 100);
	const char *old[1] = {key};
	TAP_SETUP(embed_cache_get_many(c, old, 1, &got, NULL));
	int was_there = got.data != NULL;
	free(got.data);
	for (unsigned i = 0; i < 100; i++) {
		char k2[32];
		snprintf(k2, sizeof(k2), "new-%05u", i);
		put_one(c, k2, val, sizeof(val), NULL);
	}
	TAP_SETUP(embed_cache_get_many(c, old, 1, &got, NULL));
	TAP_OK(was_there && got.data, "recently_read_key_survives_later_inserts");
	free(got.data);
	snprintf(key, sizeof(key), "key-%05u", n - 99);
	TAP_SETUP(embed_cache_get_many(c, old, 1, &got, NULL));
	TAP_OK(!got.data, "unread_key_of_same_age_evicted");
	free(got.data);

	/* A value larger than the whole bound is not kept in memory. */
	static unsigned char huge[32 * 1024];
	TAP_INT_EQ(put_one(c, "huge", huge, sizeof(huge), NULL), 0, "blob_over_memory_bound_put_succeeds");
	TAP_OK(embed_cache_memory_bytes(c) <= bound, "blob_over_memory_bound_not_kept");
	embed_cache_free(c);
	TAP_INT_EQ((long long)metric_value("text2sqld_embed_cache_memory_bytes"), 0, "memory_gauge_zero_after_free");
}

/* ---- concurrency ---- */

static _Atomic int hammer_stop; /* when set, hammer threads end early */

struct hammer {
	struct embed_cache *c;
	int ops;
	unsigned seed;
	int bad;   /* wrong content or unexpected return code */
	size_t hits;
};

#define HAMMER_KEYS 400
#define HAMMER_OPS 600

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;
	char keybuf[20][24];
	const char *keys[20];
	unsigned idx[20];
	struct embed_cache_blob blobs[20];
	unsigned char vals[20][1600];
	for (int op = 0; op < h->ops && !hammer_stop; op++) {
		size_t n = 1 + (size_t)(rand_r(&h->seed) % 20);
		for (size_t j = 0; j < n; j++) {
			idx[j] = (unsigned)rand_r(&h->seed) % HAMMER_KEYS;
			snprintf(keybuf[j], sizeof(keybuf[j]), "h-%u", idx[j]);
			keys[j] = keybuf[j];
		}
		struct embed_cache_stats st;
		if (rand_r(&h->seed) % 3 == 0) {
			for (size_t j = 0; j < n; j++) {
				blobs[j].len = make_value(idx[j], vals[j], sizeof(vals[j]));
				blobs[j].data = vals[j];
			}
			if (embed_cache_put_many(h->c, keys, blobs, n, &st) != 0)
				h->bad++;
		} else {
			if (embed_cache_get_many(h->c, keys, n, blobs, &st) != 0) {
				h->bad++;
				continue;
			}
			for (size_t j = 0; j < n; j++) {
				if (blobs[j].data) {
					h->hits++;
					if (!value_matches(idx[j], &blobs[j]))
						h->bad++;
				}
			}
			if (st.memory_hits + st.redis_hits + st.misses != n)
				h->bad++;
			free_blobs(blobs, n);
		}
	}
	return NULL;
}

/*
 * 8 threads of random get/put batches on c; with disrupt, Redis is killed
 * and restarted while they run (they stop once it is back and has been
 * used again).
 */
static void hammer(struct embed_cache *c, const char *what, int disrupt)
{
	enum { THREADS = 8 };
	pthread_t t[THREADS];
	struct hammer h[THREADS];
	hammer_stop = 0;
	for (int i = 0; i < THREADS; i++) {
		h[i] = (struct hammer){.c = c, .ops = disrupt ? 1000000 : HAMMER_OPS, .seed = 1234u + (unsigned)i};
		pthread_create(&t[i], NULL, hammer_thread, &h[i]);
	}
	if (disrupt) {
		sleep_ms(150);
		int killed = kill_redis() == 0;
		sleep_ms(300);
		int restarted = start_redis() == 0;
		sleep_ms(900); /* past retry_after: threads reconnect */
		hammer_stop = 1;
		TAP_OK(killed && restarted, "redis_killed_and_restarted_under_load");
	}
	int bad = 0;
	size_t hits = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		bad += h[i].bad;
		hits += h[i].hits;
	}
	char name[128];
	snprintf(name, sizeof(name), "eight_threads_get_put_concurrently_without_errors_%s", what);
	TAP_INT_EQ(bad, 0, name);
	snprintf(name, sizeof(name), "eight_threads_see_hits_%s", what);
	TAP_OK(hits > 0, name);
}

/* ---- Redis checks ---- */

static void test_redis_shared_between_replicas(void)
{
	struct embed_cache *a = new_cache(redis_url, 1 << 20, 1000, 2);
	struct embed_cache *b = new_cache(redis_url, 1 << 20, 1000, 2);
	TAP_OK(a && b, "redis_caches_create");
	if (!a || !b)
		goto out;
	TAP_OK(embed_cache_redis_healthy(a), "redis_reachable_reports_healthy");

	const char *keys[2] = {"col:orders.id", "col:orders.total"};
	struct embed_cache_blob got[2];
	struct embed_cache_stats st;
	int rc = embed_cache_get_many(a, keys, 2, got, &st);
	TAP_OK(rc == 0 && !got[0].data && st.misses == 2 && !st.redis_failed, "redis_get_before_put_misses");

	const unsigned char v0[6] = {1, 0, 2, 0, 0, 3}; /* NUL bytes inside */
	const unsigned char v1[3] = {0, 0, 0};
	struct embed_cache_blob put[2] = {{(void *)v0, sizeof(v0)}, {(void *)v1, sizeof(v1)}};
	rc = embed_cache_put_many(a, keys, put, 2, &st);
	TAP_OK(rc == 0 && !st.redis_failed, "redis_put_succeeds");

	rc = embed_cache_get_many(a, keys, 2, got, &st);
	TAP_OK(rc == 0 && st.memory_hits == 2 && st.redis_hits == 0, "writer_replica_hits_memory");
	free_blobs(got, 2);

	double redis_hit_before = metric_value("text2sqld_embed_cache_lookups_total{layer=\"redis\",result=\"hit\"}");
	rc = embed_cache_get_many(b, keys, 2, got, &st);
	TAP_OK(rc == 0 && st.redis_hits == 2 && st.memory_hits == 0 && st.misses == 0,
	       "second_replica_gets_redis_hits_for_keys_first_stored");
	TAP_OK(got[0].len == sizeof(v0) && memcmp(got[0].data, v0, sizeof(v0)) == 0 && got[1].len == sizeof(v1) &&
		       memcmp(got[1].data, v1, sizeof(v1)) == 0,
	       "binary_blobs_with_nul_bytes_round_trip_through_redis");
	free_blobs(got, 2);
	double redis_hit_after = metric_value("text2sqld_embed_cache_lookups_total{layer=\"redis\",result=\"hit\"}");
	TAP_INT_EQ((long long)(redis_hit_after - (redis_hit_before < 0 ? 0 : redis_hit_before)), 2,
		   "redis_hit_metric_counts_two");

	rc = embed_cache_get_many(b, keys, 2, got, &st);
	TAP_OK(rc == 0 && st.memory_hits == 2 && st.redis_hits == 0, "redis_hits_copied_into_memory_layer");
	free_blobs(got, 2);

	char out[4096];
	rc = redis_cli("KEYS '" PREFIX "*'", out, sizeof(out));
	TAP_OK(rc == 0 && strstr(out, PREFIX "col:orders.id\n") && strstr(out, PREFIX "col:orders.total\n"),
	       "key_prefix_applied_in_redis");
	rc = redis_cli("KEYS 'col:*'", out, sizeof(out));
	TAP_OK(rc == 0 && strstr(out, "col:") == NULL, "no_unprefixed_keys_in_redis");
	rc = redis_cli("STRLEN '" PREFIX "col:orders.id'", out, sizeof(out));
	TAP_OK(rc == 0 && strcmp(out, "6\n") == 0, "redis_value_is_the_raw_blob");

out:
	embed_cache_free(a);
	embed_cache_free(b);
}

static void test_redis_large_batches(void)
{
	enum { N = 2500 }; /* > 2 x EMBED_CACHE_REDIS_BATCH */
	struct embed_cache *a = new_cache(redis_url, 64 << 20, 1000, 2);
	struct embed_cache *b = new_cache(redis_url, 64 << 20, 1000, 2);
	if (!a || !b)
		goto out;
	static char keybuf[N][24];
	static const char *keys[N];
	static struct embed_cache_blob blobs[N];
	static unsigned char vals[N][1600];
	for (unsigned i = 0; i < N; i++) {
		snprintf(keybuf[i], sizeof(keybuf[i]), "batch-%u", i);
		keys[i] = keybuf[i];
		blobs[i].len = make_value(i, vals[i], sizeof(vals[i]));
		blobs[i].data = vals[i];
	}
	struct embed_cache_stats st;
	int rc = embed_cache_put_many(a, keys, blobs, N, &st);
	TAP_OK(rc == 0 && !st.redis_failed, "put_of_2500_keys_succeeds");
	char out[64];
	redis_cli("DBSIZE", out, sizeof(out));
	TAP_OK(strtol(out, NULL, 10) >= N, "all_2500_keys_reach_redis");

	/* Replica b asks for them mixed with absent keys. */
	static char keybuf2[N + 10][24];
	static const char *keys2[N + 10];
	static struct embed_cache_blob got[N + 10];
	for (unsigned i = 0; i < N + 10; i++) {
		snprintf(keybuf2[i], sizeof(keybuf2[i]), i % 251 == 0 ? "absent-%u" : "batch-%u", i);
		keys2[i] = keybuf2[i];
	}
	rc = embed_cache_get_many(b, keys2, N + 10, got, &st);
	size_t want_hits = 0;
	int content_ok = 1;
	for (unsigned i = 0; i < N + 10; i++) {
		int present = i % 251 != 0 && i < N;
		want_hits += (size_t)present;
		if (present ? !value_matches(i, &got[i]) : got[i].data != NULL)
			content_ok = 0;
	}
	TAP_OK(rc == 0 && st.redis_hits == want_hits && st.misses == N + 10 - want_hits && !st.redis_failed,
	       "get_of_more_keys_than_mget_batch_counts_every_hit");
	TAP_OK(content_ok, "get_of_more_keys_than_mget_batch_returns_right_values_in_order");
	free_blobs(got, N + 10);
out:
	embed_cache_free(a);
	embed_cache_free(b);
}

static void test_redis_killed_and_restarted(void)
{
	const long retry_ms = 2000;
	struct embed_cache *a = new_cache(redis_url, 1 << 20, retry_ms, 3);
	struct embed_cache *b = new_cache(redis_url, 1 << 20, 300, 3);
	if (!a || !b)
		goto out;
	put_one(a, "k-mem", "in-a", 4, NULL);
	put_one(b, "k-redis", "in-b", 4, NULL);
	const char *both[2] = {"k-mem", "k-redis"};
	struct embed_cache_blob got[2];
	struct embed_cache_stats st;

	TAP_INT_EQ(kill_redis(), 0, "redis_killed");
	double err0 = redis_errors();
	double t0 = clock_now_ms();
	int rc = embed_cache_get_many(a, both, 2, got, &st);
	TAP_OK(rc == 0, "get_returns_0_with_redis_killed");
	TAP_OK(got[0].data && got[0].len == 4 && memcmp(got[0].data, "in-a", 4) == 0 && !got[1].data,
	       "redis_down_serves_memory_keys_and_misses_others");
	TAP_OK(st.memory_hits == 1 && st.misses == 1 && st.redis_failed, "redis_down_sets_redis_failed");
	free_blobs(got, 2);
	TAP_OK(!embed_cache_redis_healthy(a), "redis_down_reports_unhealthy");
	TAP_OK(redis_errors() > err0, "redis_failure_counted_in_metric");

	rc = put_one(a, "k-new", "new", 3, &st);
	TAP_OK(rc == 0 && st.redis_failed, "put_returns_0_with_redis_killed");
	const char *kn[1] = {"k-new"};
	rc = embed_cache_get_many(a, kn, 1, got, &st);
	TAP_OK(rc == 0 && got[0].data && st.memory_hits == 1, "put_while_redis_down_still_serves_from_memory");
	free_blobs(got, 1);

	/* Breaker open: no attempt at all (no new error) while Redis is down. */
	double err1 = redis_errors();
	const char *kr[1] = {"k-redis"};
	rc = embed_cache_get_many(a, kr, 1, got, &st);
	TAP_OK(rc == 0 && !got[0].data && st.redis_failed && redis_errors() == err1,
	       "breaker_open_skips_redis_without_trying");
	free_blobs(got, 1);

	/* Restart Redis (empty) and plant a key behind the cache's back. */
	TAP_INT_EQ(start_redis(), 0, "redis_restarted");
	char out[64];
	redis_cli("SET '" PREFIX "k-planted' planted", out, sizeof(out));
	const char *kp[1] = {"k-planted"};
	rc = embed_cache_get_many(a, kp, 1, got, &st);
	double elapsed = clock_now_ms() - t0;
	if (elapsed < (double)retry_ms - 100) {
		TAP_OK(rc == 0 && !got[0].data && st.redis_hits == 0 && st.redis_failed,
		       "breaker_skips_restarted_redis_until_retry_after");
		TAP_OK(!embed_cache_redis_healthy(a), "breaker_still_open_before_retry_after");
	} else {
		tap_skip("breaker_skips_restarted_redis_until_retry_after", "restart took longer than retry_after");
		tap_skip("breaker_still_open_before_retry_after", "restart took longer than retry_after");
	}
	free_blobs(got, 1);

	sleep_ms((long)((double)retry_ms - (clock_now_ms() - t0)) + 150);
	rc = embed_cache_get_many(a, kp, 1, got, &st);
	TAP_OK(rc == 0 && got[0].data && got[0].len == 7 && memcmp(got[0].data, "planted", 7) == 0 &&
		       st.redis_hits == 1 && !st.redis_failed,
	       "after_retry_after_cache_reconnects_and_reads");
	free_blobs(got, 1);
	TAP_OK(embed_cache_redis_healthy(a), "reconnected_reports_healthy");

	rc = put_one(a, "k-after", "stored", 6, &st);
	TAP_OK(rc == 0 && !st.redis_failed, "put_after_reconnect_succeeds");
	rc = redis_cli("GET '" PREFIX "k-after'", out, sizeof(out));
	TAP_OK(rc == 0 && strcmp(out, "stored\n") == 0, "put_after_reconnect_stores_in_redis");

	/* b still holds a dead context from before the kill and its breaker is
	 * closed: its first call fails (a miss, not an error) and trips the
	 * breaker; after b's retry_after it reconnects. */
	rc = embed_cache_get_many(b, kp, 1, got, &st);
	TAP_OK(rc == 0 && !got[0].data && st.redis_failed, "stale_connection_detected_as_miss_not_error");
	free_blobs(got, 1);
	sleep_ms(400);
	rc = embed_cache_get_many(b, kp, 1, got, &st);
	TAP_OK(rc == 0 && got[0].data && st.redis_hits == 1, "stale_connection_replaced_after_retry_after");
	free_blobs(got, 1);

out:
	embed_cache_free(a);
	embed_cache_free(b);
}

static void test_redis_hung(void)
{
	struct embed_cache *a = new_cache(redis_url, 1 << 20, 500, 2);
	if (!a)
		return;
	pid_t pid = redis_pid();
	put_one(a, "hung-a", "x", 1, NULL);
	kill(pid, SIGSTOP);
	const char *k[1] = {"hung-missing"};
	struct embed_cache_blob got;
	struct embed_cache_stats st;
	double t0 = clock_now_ms();
	int rc = embed_cache_get_many(a, k, 1, &got, &st);
	double took = clock_now_ms() - t0;
	kill(pid, SIGCONT);
	TAP_OK(rc == 0 && !got.data && st.redis_failed, "hung_redis_is_a_miss_with_redis_failed");
	TAP_OK(took < 2000, "hung_redis_bounded_by_timeout");
	free(got.data);
	sleep_ms(600);
	const char *ka[1] = {"hung-a"};
	TAP_SETUP(embed_cache_get_many(a, ka, 1, &got, &st));
	free(got.data);
	put_one(a, "hung-b", "y", 1, &st);
	TAP_OK(!st.redis_failed, "after_hang_cache_recovers");
	embed_cache_free(a);
}

static void test_bad_url(void)
{
	struct embed_cache_options o = {.redis_url = "http://nope", .key_prefix = PREFIX};
	struct embed_cache *c = NULL;
	struct t2s_error err;
	int rc = embed_cache_new(&o, &c, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && c == NULL, "malformed_redis_url_rejected");

	/* Nothing listening: creation succeeds, Redis is just unhealthy. */
	char url[64];
	int port = free_port();
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
	o.redis_url = url;
	rc = embed_cache_new(&o, &c, &err);
	TAP_OK(rc == 0 && c && !embed_cache_redis_healthy(c), "unreachable_redis_not_fatal_at_creation");
	if (rc == 0) {
		struct embed_cache_stats st;
		TAP_INT_EQ(put_one(c, "x", "y", 1, &st), 0, "unreachable_redis_put_returns_0");
		embed_cache_free(c);
	}
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* as server/main.c: writes to a dead Redis must not kill us */

	test_no_redis_in_process_only();
	test_limits();
	test_memory_bound();
	test_bad_url();
	{
		struct embed_cache *c = new_cache(NULL, 64 * 1024, 1000, 2);
		hammer(c, "in_process", 0);
		embed_cache_free(c);
	}

	int have = system("command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1") == 0;
	char tmpl[] = "/tmp/t2s-embed-cache-XXXXXX";
	if (have && mkdtemp(tmpl)) {
		snprintf(redis_dir, sizeof(redis_dir), "%s", tmpl);
		redis_port = free_port();
		snprintf(redis_url, sizeof(redis_url), "redis://127.0.0.1:%d/0", redis_port);
		have = start_redis() == 0;
		TAP_OK(have, "private_redis_started");
	} else {
		have = 0;
	}
	if (have) {
		test_redis_shared_between_replicas();
		test_redis_large_batches();
		{
			struct embed_cache *c = new_cache(redis_url, 64 * 1024, 1000, 3);
			hammer(c, "with_redis", 0);
			embed_cache_free(c);
		}
		{
			struct embed_cache *c = new_cache(redis_url, 64 * 1024, 500, 3);
			double err_before = redis_errors();
			hammer(c, "through_redis_restart", 1);
			TAP_OK(redis_errors() > err_before, "storm_threads_met_the_redis_failure");
			struct embed_cache_stats st;
			put_one(c, "after-storm", "z", 1, &st);
			TAP_OK(embed_cache_redis_healthy(c) && !st.redis_failed, "redis_healthy_again_after_storm");
			embed_cache_free(c);
		}
		test_redis_killed_and_restarted();
		test_redis_hung();
		stop_redis();
	} else {
		tap_skip("redis_checks", "redis-server not installed");
	}
	if (redis_dir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", redis_dir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", redis_dir);
	}
	metrics_shutdown();
	return tap_done();
}
