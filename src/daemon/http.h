/* Runs in: the main process. */
/* http.h: the worker's HTTP status endpoint. */
#ifndef HTTP_H
#define HTTP_H

struct event_base;
struct http;
struct worker;

struct http *http_start(struct event_base *, const char *listen, struct worker *);
void http_free(struct http *);

#endif
