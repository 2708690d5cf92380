/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process and `leasekeeper web`. */
/* http.h: a small bounded HTTP server on the loop, shared by the worker and the dashboard. */
#ifndef HTTP_H
#define HTTP_H

#include <stdint.h>

#define HTTP_MAX_CONNECTIONS 16   /* open at once; past that new ones wait in the backlog */
#define HTTP_MAX_LISTEN_FDS  1024 /* descriptors systemd may say it passed (LISTEN_FDS) */

struct event_base;
struct evbuffer;
struct evhttp_request;
struct http;

struct http *http_listen(struct event_base *, const char *listen);
void http_route(struct http *, const char *path, void (*)(struct evhttp_request *, void *), void *);
void http_respond(struct http *, struct evhttp_request *, int code, const char *reason,
                  struct evbuffer *);
void http_reply(struct http *, struct evhttp_request *, int code, const char *type,
                const char *body);
int http_defer(struct http *, struct evhttp_request *, void (*gone)(void *), void *);
void http_stream_start(struct http *, struct evhttp_request *, int code, const char *reason);
void http_stream_chunk(struct http *, struct evhttp_request *, struct evbuffer *,
                       void (*sent)(void *), void *);
void http_stream_end(struct http *, struct evhttp_request *);
uint64_t http_beat_age_ms(const struct http *);
int http_host_ok(const char *host, const char *own);
int http_systemd_passed(const char *pid, const char *fds, long own);
void http_any_host(struct http *);
void http_on_refuse(struct http *, void (*)(struct evhttp_request *, void *), void *);
int http_connections(const struct http *);
void http_free(struct http *);

#endif
