/*
 * docs_assets.h - the files of the /docs page, embedded in the binary at
 * build time by scripts/embed_docs.py: Swagger UI's bundle, stylesheet and
 * licence from the pinned npm package (openapi/docs/swagger-ui.json), and
 * our own index.html and init.js (openapi/docs/).
 */
#ifndef T2S_DOCS_ASSETS_H
#define T2S_DOCS_ASSETS_H

#include <stddef.h>

struct docs_asset {
	const char *name;          /* file name: "index.html", "swagger-ui-bundle.js", ... */
	const char *content_type;
	const unsigned char *data; /* static, NUL-terminated past len */
	size_t len;
};

/* Terminated by an entry whose name is NULL. */
extern const struct docs_asset docs_assets[];
/* "swagger-ui-dist 5.17.14" */
extern const char docs_ui_version[];

#endif
