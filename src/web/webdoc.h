/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the web process (`leasekeeper web`). */
/* webdoc.h: Host headers, listen addresses and bounded strings of the dashboard (pure). */
#ifndef WEBDOC_H
#define WEBDOC_H

#include <stddef.h>

#include <jansson.h>

#define WEBDOC_COOKIE "lk_dashboard" /* the cookie that carries the token */

int webdoc_loopback(const char *listen);
int webdoc_token_ok(const char *uri, const char *cookie, const char *authorization,
                    const char *token);
void webdoc_trim(json_t *, size_t max);

#endif
