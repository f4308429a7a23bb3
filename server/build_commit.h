/*
 * build_commit.h - the source commit the binary was built from: the short
 * hash git gave at build time (meson's vcs_tag fills server/build_commit.c.in),
 * "unknown" when built outside a git checkout.
 */
#ifndef T2S_BUILD_COMMIT_H
#define T2S_BUILD_COMMIT_H

extern const char build_commit[];

/* The version of text2sqld (metrics, logs, the MCP server's serverInfo). */
#define T2S_VERSION "0.1.0"

#endif
