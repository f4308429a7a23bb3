/*
 * fuzz_config.c - libFuzzer target: a configuration file's text as the
 * loader reads it (config/config.h, config_load_string).  An accepted
 * config is released; a refused one must say why.  The environment
 * overrides (TEXT2SQLD_*) are cleared first so that every input is judged
 * on its own text.
 */
#include "config/config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	unsetenv("TEXT2SQLD_LISTEN_HOST");
	unsetenv("TEXT2SQLD_LISTEN_PORT");
	unsetenv("TEXT2SQLD_REDIS_URL");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = strndup((const char *)data, size); /* the text up to the first NUL */
	if (!text)
		return 0;
	struct config cfg;
	struct t2s_error err = {0};
	if (config_load_string(text, "/tmp/fuzz/text2sqld.json", &cfg, &err) == 0)
		config_release(&cfg);
	else if (!err.message[0])
		abort();
	free(text);
	return 0;
}
