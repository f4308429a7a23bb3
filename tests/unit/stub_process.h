/*
 * stub_process.h - the model-server stub (tests/stub/model_stub.py) as a
 * child process of a C unit test: started on a free port, its control
 * routes called over HTTP, stopped at the end (and, through
 * PR_SET_PDEATHSIG, never outliving a crashed test).
 */
#ifndef T2S_STUB_PROCESS_H
#define T2S_STUB_PROCESS_H

#include <jansson.h>
#include <sys/types.h>

struct stub_process {
	pid_t pid;         /* -1 when not running */
	int port;
	char base_url[64]; /* "http://127.0.0.1:PORT/v1" */
};

/*
 * Start the stub with extra command-line arguments (NULL-terminated, may be
 * NULL).  The script is $T2S_STUB, else $T2S_SOURCE_ROOT/tests/stub/...,
 * else the path relative to the current directory.  0 once the port is known.
 */
int stub_process_start(struct stub_process *sp, const char *const *extra_args);
void stub_process_stop(struct stub_process *sp);

/* GET (body NULL) or POST a control route ("/_stub/rules"); the answer as JSON (new reference) or NULL. */
json_t *stub_process_call(const struct stub_process *sp, const char *path, const char *body);

#endif
