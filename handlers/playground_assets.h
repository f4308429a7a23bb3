/*
 * playground_assets.h - the files of the playground page, embedded in the
 * binary at build time by scripts/embed_playground.py: our own index.html,
 * style.css and app.js (playground/), and the chart renderer (Vega, Vega-Lite,
 * vega-embed, vega-interpreter, with their licences) from the npm packages
 * pinned in playground/vendor.json.
 */
#ifndef T2S_PLAYGROUND_ASSETS_H
#define T2S_PLAYGROUND_ASSETS_H

#include <stddef.h>

struct playground_asset {
	const char *name;          /* file name: "index.html", "app.js", "vega.min.js", ... */
	const char *content_type;
	const unsigned char *data; /* static, NUL-terminated past len */
	size_t len;
};

/* Terminated by an entry whose name is NULL. */
extern const struct playground_asset playground_assets[];
/* "vega 6.4.0, vega-lite 6.5.0, vega-embed 7.3.0, vega-interpreter 2.3.2" */
extern const char playground_vendor_versions[];

#endif
