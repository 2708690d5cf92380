/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the web process (`leasekeeper web`). */
/* webtail.h: the dashboard's tail of a run in progress, fetched from its worker. */
#ifndef WEBTAIL_H
#define WEBTAIL_H

#include <stddef.h>

#include <jansson.h>

struct event_base;
struct evhttp_request;
struct http;
struct webtail;

/* How the dashboard answers (its headers on every reply). */
typedef void (*webtail_reply_fn)(void *arg, struct evhttp_request *, int code, const char *reason,
                                 const char *type, const char *body, size_t len);

struct webtail *webtail_new(struct event_base *, struct http *, webtail_reply_fn, void *);
void webtail_update(struct webtail *, json_t *view);
void webtail_serve(struct webtail *, struct evhttp_request *);
void webtail_free(struct webtail *);

#endif
