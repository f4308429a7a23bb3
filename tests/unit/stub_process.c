/*
 * stub_process.c - see stub_process.h.
 */
#include "tests/unit/stub_process.h"

#include <curl/curl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define STUB_MAX_ARGS 16

static const char *stub_path(char *buf, size_t n)
{
	const char *p = getenv("T2S_STUB"), *root = getenv("T2S_SOURCE_ROOT");
	if (p && *p)
		return p;
	if (root && *root) {
		snprintf(buf, n, "%s/tests/stub/model_stub.py", root);
		return buf;
	}
	return "tests/stub/model_stub.py";
}

int stub_process_start(struct stub_process *sp, const char *const *extra_args)
{
	char pathbuf[4096], line[128];
	const char *argv[STUB_MAX_ARGS + 6];
	size_t argc = 0, len = 0;
	int fds[2];
	sp->pid = -1;
	sp->port = 0;
	argv[argc++] = "python3";
	argv[argc++] = stub_path(pathbuf, sizeof(pathbuf));
	argv[argc++] = "--port";
	argv[argc++] = "0";
	for (size_t i = 0; extra_args && extra_args[i] && i < STUB_MAX_ARGS; i++)
		argv[argc++] = extra_args[i];
	argv[argc] = NULL;
	if (pipe(fds) != 0)
		return -1;
	sp->pid = fork();
	if (sp->pid < 0)
		return -1;
	if (sp->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive a crashed test */
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp("python3", (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	while (len < sizeof(line) - 1) { /* the stub's first line: "LISTENING <port>" */
		struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
		if (poll(&pfd, 1, 15000) <= 0 || read(fds[0], line + len, 1) <= 0)
			break;
		if (line[len++] == '\n')
			break;
	}
	line[len] = '\0';
	close(fds[0]);
	if (strncmp(line, "LISTENING ", 10) != 0)
		return -1;
	sp->port = (int)strtol(line + 10, NULL, 10);
	snprintf(sp->base_url, sizeof(sp->base_url), "http://127.0.0.1:%d/v1", sp->port);
	return sp->port > 0 ? 0 : -1;
}

void stub_process_stop(struct stub_process *sp)
{
	if (sp->pid > 0) {
		kill(sp->pid, SIGTERM);
		waitpid(sp->pid, NULL, 0);
		sp->pid = -1;
	}
}

static size_t collect(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	char **buf = userdata;
	size_t old = *buf ? strlen(*buf) : 0, n = size * nmemb;
	char *p = realloc(*buf, old + n + 1);
	if (!p)
		return 0;
	memcpy(p + old, ptr, n);
	p[old + n] = '\0';
	*buf = p;
	return n;
}

json_t *stub_process_call(const struct stub_process *sp, const char *path, const char *body)
{
	char url[128], *out = NULL;
	CURL *h = curl_easy_init();
	json_t *answer = NULL;
	if (!h)
		return NULL;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", sp->port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(h) == CURLE_OK && out)
		answer = json_loads(out, 0, NULL);
	curl_easy_cleanup(h);
	free(out);
	return answer;
}
