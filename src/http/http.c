/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process and `leasekeeper web`. */
/*
 * http.c: a small HTTP server on the loop, for clients that are not trusted. The worker's
 * endpoints (src/worker/endpoints.c) and the dashboard (src/web/web.c) are built on it.
 *
 * The listener shares the loop that keeps the ZooKeeper heartbeat, and its clients are not
 * trusted, so everything a client can make it hold is bounded: a request (from the
 * connection's start or the previous reply to the end of the reply) gets HTTP_TIMEOUT_S,
 * headers HTTP_MAX_HEADERS bytes, a body none, and at most HTTP_MAX_CONNECTIONS
 * connections are open; past that the listener stops accepting and the kernel's backlog
 * holds the rest, and each reply closes its connection, so a client that keeps sending
 * requests cannot keep its slot from those waiting. A connection reads at most
 * HTTP_MAX_INPUT bytes ahead of the request being answered: requests pipelined behind a
 * reply the client does not read wait in the kernel, not in our memory. Running out of
 * file descriptors pauses accepting for
 * HTTP_ACCEPT_PAUSE_MS, with one warning per interval, instead of failing accept() in a
 * loop.
 *
 * A reply that takes many turns of the loop to write (the worker's /metrics with thousands
 * of jobs) is deferred (http_defer) and may be streamed in chunks (http_stream_*), each
 * written only once the client took the previous one, each chunk getting HTTP_TIMEOUT_S
 * anew, and the whole reply HTTP_DEFER_MAX_S (a client reading a byte now and then keeps
 * no reply, and no scrape slot, longer); if the connection closes first, its owner is told
 * (and the request, if libevent left it to us, is freed here).
 *
 * libevent 2.1 has no connection cap and no hook when a server connection opens, so we
 * make each connection's bufferevent ourselves (evhttp_set_bevcb), then, once the accept
 * callback has returned, find the connection evhttp built around it and ask to hear of
 * its close.
 */

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "clock.h"
#include "http.h"
#include "log.h"
#include "xmalloc.h"

#define HTTP_TIMEOUT_S       10
#define HTTP_DEFER_MAX_S     60 /* a deferred (streamed) reply's whole time, at most */
#define HTTP_MAX_HEADERS     8192
#define HTTP_MAX_BODY        0
#define HTTP_MAX_INPUT       (2 * HTTP_MAX_HEADERS)
#define HTTP_ACCEPT_PAUSE_MS 1000
#define HTTP_BEAT_MS         1000 /* the loop's heartbeat timer, for /livez */
#define HTTP_MAX_ROUTES      16
#define HTTP_HOST_MAX        256

/* A path's handler, called once the Host header is judged. */
struct http_route {
	struct http *h;
	void (*fn)(struct evhttp_request *, void *);
	void *arg;
};

/* One open connection: a slot is taken when evhttp asks for a bufferevent. */
struct http_conn {
	struct http *h;
	int used;
	struct bufferevent *bev;         /* until adopted: ours, with a reference held */
	struct evhttp_connection *evcon; /* once adopted */
	struct event *deadline;          /* the request in progress must be done by then */
	/* A reply deferred (http_defer): its owner is told if the connection goes first. */
	struct evhttp_request *deferred;
	void (*gone)(void *);
	void *gone_arg;
	void (*sent)(void *); /* a streamed chunk was written: the next may come */
	void *sent_arg;
	uint64_t deferred_ns; /* when it was deferred (clock_now_ns) */
};

struct http {
	struct event_base *base;
	struct evhttp *evh;
	struct evconnlistener *lev;
	struct event *adopt;  /* finds the connections evhttp built on new bufferevents */
	struct event *resume; /* accepting again after running out of descriptors */
	struct event *beat;   /* the loop's heartbeat, once a second */
	uint64_t beat_ns;     /* its last run */
	int listening;
	int out_of_fds;
	int closing;
	int nconn;
	struct http_conn conns[HTTP_MAX_CONNECTIONS];
	int any_host;                 /* answer whatever the Host header says */
	struct http_route refuse;     /* how a foreign Host is answered, if not the default */
	char own_name[HTTP_HOST_MAX]; /* gethostname(): a Host header may name it */
	struct http_route routes[HTTP_MAX_ROUTES];
	size_t nroutes;
};

static struct log_limit http_lim_accept, http_lim_full;

/* The one listener of the process: libevent hands its accept errors evhttp's argument. */
static struct http *http_self;

/* Accept while there is room and descriptors; otherwise leave clients in the backlog. */
static void
http_listen_update(struct http *h)
{
	int want = !h->closing && !h->out_of_fds && h->nconn < HTTP_MAX_CONNECTIONS;

	if (h->lev == NULL || want == h->listening)
		return;
	if (want)
		evconnlistener_enable(h->lev);
	else
		evconnlistener_disable(h->lev);
	h->listening = want;
	if (!want && !h->out_of_fds && !h->closing)
		log_warnx_limited(&http_lim_full,
		                  "http: %d connections open, the most allowed: new ones wait",
		                  HTTP_MAX_CONNECTIONS);
}

/*
 * A deferred reply's connection goes: its owner stops. libevent frees the request with the
 * connection unless it detached it (a client gone before the reply was done): then it is
 * ours to free, which only a reply (or its end) does.
 */
static void
http_conn_forget(struct http_conn *c, int req_alive)
{
	struct evhttp_request *req = c->deferred;
	void (*gone)(void *) = c->gone;

	if (req == NULL)
		return;
	c->deferred = NULL;
	c->gone = NULL;
	c->sent = NULL;
	if (req_alive && evhttp_request_get_connection(req) == NULL)
		evhttp_send_reply_end(req); /* with no connection: frees it */
	gone(c->gone_arg);
}

/* Give a connection's slot back. */
static void
http_conn_release(struct http_conn *c)
{
	http_conn_forget(c, 0);
	evtimer_del(c->deadline);
	c->used = 0;
	c->deferred = 0;
	c->bev = NULL;
	c->evcon = NULL;
	c->h->nconn--;
	http_listen_update(c->h);
}

/* A connection the server (or its client) closed. */
static void
http_conn_close_cb(struct evhttp_connection *evcon, void *arg)
{
	struct http_conn *c = arg;

	evhttp_connection_set_closecb(evcon, NULL, NULL);
	if (c->used && c->evcon == evcon) {
		http_conn_forget(c, 1); /* before evhttp frees what it still holds */
		http_conn_release(c);
	}
}

static void http_conn_rearm(struct http_conn *);

/* The request in progress took too long: drop the connection. */
static void
http_conn_deadline_cb(int fd, short what, void *arg)
{
	struct http_conn *c = arg;
	struct evhttp_connection *evcon = c->evcon;

	(void)fd;
	(void)what;
	if (evcon == NULL)
		return;
	/* A deferred answer comes within its own bound (closing would free it), up to a point. */
	if (c->deferred &&
	    clock_now_ns() - c->deferred_ns < (uint64_t)HTTP_DEFER_MAX_S * 1000000000u) {
		http_conn_rearm(c);
		return;
	}
	log_debug("http: a request took more than %d s: closing its connection", HTTP_TIMEOUT_S);
	evhttp_connection_free(evcon);
	if (c->used && c->evcon == evcon)
		http_conn_release(c);
}

/* Give the connection a request's time again: from now to the end of its next reply. */
static void
http_conn_rearm(struct http_conn *c)
{
	struct timeval tv = {HTTP_TIMEOUT_S, 0};

	evtimer_add(c->deadline, &tv);
}

/* evhttp wants a bufferevent for an accepted connection: take a slot for it. */
static struct bufferevent *
http_bev_cb(struct event_base *base, void *arg)
{
	struct http *h = arg;
	struct http_conn *c = NULL;
	size_t i;

	for (i = 0; i < HTTP_MAX_CONNECTIONS && c == NULL; i++) {
		if (!h->conns[i].used)
			c = &h->conns[i];
	}
	if (c == NULL)
		return NULL; /* not reached: the listener stops at the cap */
	c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL)
		return NULL;
	bufferevent_incref(c->bev); /* alive until adopted, whatever evhttp does meanwhile */
	/*
	 * Stop reading once this much waits unparsed: evhttp answers one request at a time,
	 * and would otherwise read everything a client pipelines behind a reply it does not
	 * read. Room for a whole request, so a request never waits on itself.
	 */
	bufferevent_setwatermark(c->bev, EV_READ, 0, HTTP_MAX_INPUT);
	c->used = 1;
	h->nconn++;
	http_conn_rearm(c);
	event_active(h->adopt, EV_TIMEOUT, 1);
	http_listen_update(h);
	return c->bev;
}

/* After the accept callback: find the connection evhttp built on each new bufferevent. */
static void
http_adopt_cb(int fd, short what, void *arg)
{
	struct http *h = arg;
	struct http_conn *c;
	bufferevent_event_cb eventcb;
	void *cbarg;
	size_t i;

	(void)fd;
	(void)what;
	for (i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
		struct bufferevent *bev;

		c = &h->conns[i];
		if (!c->used || c->evcon != NULL)
			continue;
		bev = c->bev;
		bufferevent_getcb(bev, NULL, NULL, &eventcb, &cbarg);
		if (eventcb != NULL && cbarg != NULL &&
		    evhttp_connection_get_bufferevent(cbarg) == bev) {
			c->evcon = cbarg;
			evhttp_connection_set_closecb(c->evcon, http_conn_close_cb, c);
		} else
			http_conn_release(c); /* evhttp let it go already */
		bufferevent_decref(bev);
	}
}

/* The slot of the connection a request came on, or NULL. */
static struct http_conn *
http_conn_find(struct http *h, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	size_t i;

	for (i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
		if (h->conns[i].used && h->conns[i].evcon == evcon)
			return &h->conns[i];
	}
	return NULL;
}

/*
 * Send a reply; the connection's next request gets its own time from now. With every slot
 * taken the reply closes the connection: a client sending a request every few seconds
 * would otherwise hold its slot for ever, and clients in the backlog wait at most until
 * each holder's next request or HTTP_TIMEOUT_S.
 */
static void
http_send(struct http *h, struct evhttp_request *req, int code, const char *reason,
          struct evbuffer *buf)
{
	struct http_conn *c =
	    evhttp_request_get_connection(req) != NULL ? http_conn_find(h, req) : NULL;

	if (c != NULL) {
		http_conn_rearm(c);
		if (c->deferred == req)
			c->deferred = NULL;
	}
	if (h->nconn >= HTTP_MAX_CONNECTIONS)
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	evhttp_send_reply(req, code, reason, buf);
}

/* accept() failed: out of descriptors (or worse). Pause rather than fail in a loop. */
static void
http_accept_error_cb(struct evconnlistener *lev, void *arg)
{
	struct http *h = http_self;
	struct timeval tv = {HTTP_ACCEPT_PAUSE_MS / 1000, (HTTP_ACCEPT_PAUSE_MS % 1000) * 1000};

	(void)lev;
	(void)arg;
	if (h == NULL)
		return;
	log_warn_limited(&http_lim_accept,
	                 "http: cannot accept a connection; not accepting for %d ms",
	                 HTTP_ACCEPT_PAUSE_MS);
	h->out_of_fds = 1;
	http_listen_update(h);
	evtimer_add(h->resume, &tv);
}

/* The pause after a failed accept() is over. */
static void
http_resume_cb(int fd, short what, void *arg)
{
	struct http *h = arg;

	(void)fd;
	(void)what;
	h->out_of_fds = 0;
	http_listen_update(h);
}

/* Reply with a body and a content type. */
void
http_reply(struct http *h, struct evhttp_request *req, int code, const char *type, const char *body)
{
	struct evbuffer *buf = evbuffer_new();
	const char *reason = code == 200   ? "OK"
	                     : code == 403 ? "Forbidden"
	                     : code == 404 ? "Not Found"
	                                   : "Service Unavailable";

	evbuffer_add(buf, body, strlen(body));
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
	http_send(h, req, code, reason, buf);
	evbuffer_free(buf);
}

/* The loop's heartbeat: /livez reads when it last ran. */
static void
http_beat_cb(int fd, short what, void *arg)
{
	struct http *h = arg;

	(void)fd;
	(void)what;
	h->beat_ns = clock_now_ns();
}

/*
 * libevent's own warnings, through our log: a listener out of file descriptors fails
 * every accept() and would otherwise print a line per attempt.
 */
static void
http_libevent_log_cb(int severity, const char *msg)
{
	static struct log_limit lim;

	if (severity >= EVENT_LOG_WARN)
		log_warnx_limited(&lim, "libevent: %s", msg);
	else
		log_debug("libevent: %s", msg);
}

/* A decimal number of digits only (no sign, space or suffix) up to max into *v; else -1. */
static int
http_decimal(const char *s, long max, long *v)
{
	long n = 0;

	if (s == NULL || *s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || n > (max - (*s - '0')) / 10)
			return -1;
		n = n * 10 + (*s - '0');
	}
	*v = n;
	return 0;
}

/*
 * Whether systemd's socket-activation variables (LISTEN_PID, LISTEN_FDS, as given) say it
 * passed this process (pid) at least one descriptor: each a plain decimal number, the pid
 * ours, the count 1 to HTTP_MAX_LISTEN_FDS. Anything else (unset, garbage, another
 * process's) is no socket.
 */
int
http_systemd_passed(const char *pid, const char *fds, long own)
{
	long p, n;

	return own > 0 && http_decimal(pid, LONG_MAX, &p) == 0 && p == own &&
	       http_decimal(fds, HTTP_MAX_LISTEN_FDS, &n) == 0 && n >= 1;
}

/*
 * Whether a passed socket's address ss is the configured host's: a numeric host must be
 * the same address (a socket on every interface is not one on loopback); a name is taken
 * as the operator's word, as a bind to it would be.
 */
static int
http_systemd_same_host(const char *host, const struct sockaddr_storage *ss)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, host, &a4) == 1)
		return ss->ss_family == AF_INET &&
		       ((const struct sockaddr_in *)ss)->sin_addr.s_addr == a4.s_addr;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return ss->ss_family == AF_INET6 &&
		       memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, &a6, sizeof a6) == 0;
	return 1;
}

/*
 * Socket activation: the listening socket systemd passed as descriptor 3 (LISTEN_PID is
 * ours, LISTEN_FDS at least 1), taken once per process, so that no local user can bind the
 * port before we start; -1 if there is none, or it is not a listening TCP socket on host:port.
 */
static int
http_systemd_fd(const char *host, long port)
{
	static int taken;
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss, olen;
	int type = 0, acc = 0, got;

	if (taken || !http_systemd_passed(pid, fds, (long)getpid()))
		return -1;
	taken = 1;
	unsetenv("LISTEN_PID"); /* not for what we start */
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	olen = sizeof type;
	got = getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &olen) == 0 && type == SOCK_STREAM;
	olen = sizeof acc;
	got = got && getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &acc, &olen) == 0 && acc;
	got = got && getsockname(3, (struct sockaddr *)&ss, &len) == 0 &&
	      (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
	if (got && ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                                         : ((struct sockaddr_in6 *)&ss)->sin6_port) != port)
		got = 0;
	if (got && !http_systemd_same_host(host, &ss))
		got = 0;
	if (!got) {
		log_warnx("http: LISTEN_FDS: descriptor 3 is not a listening TCP socket on %s:%ld "
		          "([http] listen): binding it ourselves; make the socket unit's "
		          "ListenStream= the same address",
		          host, port);
		return -1;
	}
	if (fcntl(3, F_SETFD, FD_CLOEXEC) != 0 || evutil_make_socket_nonblocking(3) != 0) {
		log_warn("http: LISTEN_FDS: descriptor 3");
		return -1;
	}
	return 3;
}
/*
 * A listener on HOST:PORT with every bound above and no paths yet (http_route); NULL after
 * logging why. The worker's endpoint and `leasekeeper web` are both built on it.
 */
struct http *
http_listen(struct event_base *base, const char *listen)
{
	struct http *h = xcalloc(1, sizeof *h);
	char *host = xstrdup(listen), *colon = strrchr(host, ':');
	struct evhttp_bound_socket *bound;
	struct timeval tv = {HTTP_TIMEOUT_S, 0};
	long port;
	size_t i;
	int fd;

	h->base = base;
	if (gethostname(h->own_name, sizeof h->own_name - 1) != 0)
		h->own_name[0] = '\0';
	event_set_log_callback(http_libevent_log_cb);
	h->evh = evhttp_new(base);
	if (colon == NULL || (port = strtol(colon + 1, NULL, 10)) <= 0 || port > 65535) {
		log_warnx("http: bad listen address \"%s\"", listen);
		goto fail;
	}
	*colon = '\0';
	if ((fd = http_systemd_fd(host, port)) >= 0) {
		if ((bound = evhttp_accept_socket_with_handle(h->evh, fd)) == NULL) {
			log_warnx("http: cannot accept on the socket systemd passed");
			goto fail;
		}
	} else if ((bound = evhttp_bind_socket_with_handle(h->evh, host, (unsigned short)port)) ==
	           NULL) {
		log_warn("http: cannot listen on %s", listen);
		goto fail;
	}
	for (i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
		h->conns[i].h = h;
		h->conns[i].deadline = evtimer_new(base, http_conn_deadline_cb, &h->conns[i]);
	}
	h->adopt = event_new(base, -1, 0, http_adopt_cb, h);
	h->resume = evtimer_new(base, http_resume_cb, h);
	h->beat = event_new(base, -1, EV_PERSIST, http_beat_cb, h);
	h->beat_ns = clock_now_ns();
	{
		struct timeval beat = {HTTP_BEAT_MS / 1000, (HTTP_BEAT_MS % 1000) * 1000};

		event_add(h->beat, &beat);
	}
	h->lev = evhttp_bound_socket_get_listener(bound);
	h->listening = 1;
	/* The listener's callbacks get evhttp's argument: the error callback finds us here. */
	http_self = h;
	evconnlistener_set_error_cb(h->lev, http_accept_error_cb);
	evhttp_set_bevcb(h->evh, http_bev_cb, h);
	evhttp_set_timeout_tv(h->evh, &tv);
	evhttp_set_max_headers_size(h->evh, HTTP_MAX_HEADERS);
	evhttp_set_max_body_size(h->evh, HTTP_MAX_BODY);
	evhttp_set_allowed_methods(h->evh, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	log_info("http: listening on %s%s", listen,
	         fd >= 0 ? " (the socket systemd passed, LISTEN_FDS)" : "");
	free(host);
	return h;

fail:
	free(host);
	evhttp_free(h->evh);
	free(h);
	return NULL;
}

/*
 * Whether a Host header names a listener the way a browser on this host (or a scraper
 * given the host's name) would: an IP address, localhost, or own (the host's name, if not
 * NULL), with a port or not. Any other name is what DNS rebinding uses: a page on another
 * site points a name of its own at our address and reads our answers as same-origin.
 */
int
http_host_ok(const char *host, const char *own)
{
	char name[HTTP_HOST_MAX];
	const char *end;
	unsigned char addr[16];
	size_t n;

	if (host == NULL)
		return 1; /* HTTP/1.0: no name at all to rebind */
	if (host[0] == '[') {
		if ((end = strchr(host, ']')) == NULL)
			return 0;
		n = (size_t)(end - host - 1);
		host++;
	} else {
		end = strchr(host, ':');
		n = end != NULL ? (size_t)(end - host) : strlen(host);
	}
	if (n == 0 || n >= sizeof name)
		return 0;
	memcpy(name, host, n);
	name[n] = '\0';
	return strcasecmp(name, "localhost") == 0 || inet_pton(AF_INET, name, addr) == 1 ||
	       inet_pton(AF_INET6, name, addr) == 1 ||
	       (own != NULL && own[0] != '\0' && strcasecmp(name, own) == 0);
}

/* Answer any Host header (the dashboard's --allow-remote). */
void
http_any_host(struct http *h)
{
	h->any_host = 1;
}

/* Answer a refused Host header with fn(req, arg) instead of a plain 403 (its own headers). */
void
http_on_refuse(struct http *h, void (*fn)(struct evhttp_request *, void *), void *arg)
{
	h->refuse.h = h;
	h->refuse.fn = fn;
	h->refuse.arg = arg;
}

/* A request for a route: refuse a Host header that is a foreign name, else answer it. */
static void
http_route_cb(struct evhttp_request *req, void *arg)
{
	struct http_route *r = arg;
	const char *host;
	static const char msg[] = "this listener answers to an address, localhost or the "
	                          "host's own name only (DNS rebinding)\n";

	if (!r->h->any_host) {
		host = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
		if (!http_host_ok(host, r->h->own_name)) {
			if (r->h->refuse.fn != NULL)
				r->h->refuse.fn(req, r->h->refuse.arg);
			else
				http_reply(r->h, req, 403, "text/plain; charset=utf-8", msg);
			return;
		}
	}
	r->fn(req, r->arg);
}

/* Answer GET path with fn(req, arg); a NULL path: every path without its own. */
void
http_route(struct http *h, const char *path, void (*fn)(struct evhttp_request *, void *), void *arg)
{
	struct http_route *r;

	if (h->nroutes == HTTP_MAX_ROUTES)
		fatalx("http: more than %d routes", HTTP_MAX_ROUTES);
	r = &h->routes[h->nroutes++];
	r->h = h;
	r->fn = fn;
	r->arg = arg;
	if (path == NULL)
		evhttp_set_gencb(h->evh, http_route_cb, r);
	else
		evhttp_set_cb(h->evh, path, http_route_cb, r);
}

/* Send a reply within the listener's bounds (see http_send). */
void
http_respond(struct http *h, struct evhttp_request *req, int code, const char *reason,
             struct evbuffer *buf)
{
	http_send(h, req, code, reason, buf);
}

/*
 * The reply to req comes later, from the loop (http_respond, or http_stream_*): gone(arg) is
 * called if its connection closes first, and req must not be used after that. -1: req's
 * connection is not known (answer it at once).
 */
int
http_defer(struct http *h, struct evhttp_request *req, void (*gone)(void *), void *arg)
{
	struct http_conn *c = http_conn_find(h, req);

	if (c == NULL || c->deferred != NULL)
		return -1;
	c->deferred = req;
	c->deferred_ns = clock_now_ns();
	c->gone = gone;
	c->gone_arg = arg;
	return 0;
}

/* Start a deferred reply sent in chunks (HTTP/1.1 chunked encoding; 1.0: until the close). */
void
http_stream_start(struct http *h, struct evhttp_request *req, int code, const char *reason)
{
	struct http_conn *c = http_conn_find(h, req);

	if (c != NULL)
		http_conn_rearm(c);
	if (h->nconn >= HTTP_MAX_CONNECTIONS)
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	evhttp_send_reply_start(req, code, reason);
}

/* libevent wrote a chunk out: the owner may send the next. */
static void
http_stream_sent_cb(struct evhttp_connection *evcon, void *arg)
{
	struct http_conn *c = arg;
	void (*sent)(void *) = c->sent;

	(void)evcon;
	c->sent = NULL;
	if (sent != NULL && c->deferred != NULL)
		sent(c->sent_arg);
}

/*
 * One chunk of a streamed reply (buf is drained; not empty); sent(arg) once it is written
 * out, so that a reader slower than its writer holds one chunk of ours, not the whole reply.
 * Each chunk gives the connection HTTP_TIMEOUT_S again: a reply goes on while it moves.
 */
void
http_stream_chunk(struct http *h, struct evhttp_request *req, struct evbuffer *buf,
                  void (*sent)(void *), void *arg)
{
	struct http_conn *c = http_conn_find(h, req);

	if (c == NULL || c->deferred != req)
		return;
	http_conn_rearm(c);
	c->sent = sent;
	c->sent_arg = arg;
	evhttp_send_reply_chunk_with_cb(req, buf, http_stream_sent_cb, c);
}

/* The streamed reply is complete: req is libevent's again. */
void
http_stream_end(struct http *h, struct evhttp_request *req)
{
	struct http_conn *c = http_conn_find(h, req);

	if (c != NULL && c->deferred == req) {
		c->deferred = NULL;
		c->sent = NULL;
	}
	evhttp_send_reply_end(req);
}

/* Milliseconds since the loop last ran the listener's once-a-second timer (for /livez). */
uint64_t
http_beat_age_ms(const struct http *h)
{
	return (clock_now_ns() - h->beat_ns) / CLOCK_NS_PER_MS;
}

/* Connections open now. */
int
http_connections(const struct http *h)
{
	return h->nconn;
}

/* Stop listening and close every connection. */
void
http_free(struct http *h)
{
	size_t i;

	if (h == NULL)
		return;
	h->closing = 1;
	h->lev = NULL; /* evhttp_free frees it, then closes the connections */
	evhttp_free(h->evh);
	for (i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
		if (h->conns[i].used && h->conns[i].evcon == NULL)
			bufferevent_decref(h->conns[i].bev);
		event_free(h->conns[i].deadline);
	}
	event_free(h->adopt);
	event_free(h->resume);
	event_free(h->beat);
	if (http_self == h)
		http_self = NULL;
	free(h);
}
