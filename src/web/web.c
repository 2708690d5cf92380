/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the web process (`leasekeeper web`), never in a worker. */
/*
 * web.c: `leasekeeper web`, the read-only dashboard of the whole cluster.
 *
 * A process of its own with its own ZooKeeper session, so that the process holding leases
 * stays small and a slow browser or a huge cluster never touches a worker's loop. Every
 * WEB_REFRESH_MS, one read of the cluster runs on that session (view_start, the same
 * read as `leasekeeper status --json`), at most one at a time whatever the number of
 * clients: its result becomes one JSON document, bounded to WEB_MAX_DOCUMENT bytes, that
 * every GET /api/cluster is served until the next one. GET / is one page (HTML with its
 * CSS and script inline, from src/web/page/, embedded at build time) that polls the
 * document and builds its DOM from it with textContent only. GET /api/runs/<job>/<run id>/
 * output is the tail of a run in progress, fetched from its worker (webtail.c).
 *
 * The listener is the worker's bounded one (http.c). The page has no authentication of its
 * own and shows everything the cluster records, so it listens on loopback unless told
 * otherwise (--allow-remote), and refuses a Host header naming anything but an address or
 * localhost: a page elsewhere that points a name of its own at 127.0.0.1 (DNS rebinding)
 * must not read the cluster through the browser. Every reply carries a strict
 * Content-Security-Policy (scripts and styles only by the hash of ours), nosniff and
 * no-store.
 */

#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "leasekeeper.h"
#include "usage.h"
#include "target.h"
#include "view.h"
#include "clock.h"
#include "config.h"
#include "http.h"
#include "log.h"
#include "web.h"
#include "webdoc.h"
#include "webpage.h"
#include "webtail.h"
#include "xmalloc.h"
#include "zk.h"

#define WEB_DEFAULT_LISTEN "127.0.0.1:9188"
#define WEB_STOP_MAX_S     10 /* from SIGTERM to the exit, at most (web_stop_stuck) */

/* How far the shutdown got, for web_stop_stuck's line. */
static volatile sig_atomic_t web_stop_phase;

/*
 * SIGALRM, WEB_STOP_MAX_S after SIGINT or SIGTERM: the shutdown is stuck (seen once in a
 * while under ASan on a loaded machine, not yet explained: the line says at which step).
 * The dashboard holds nothing to save: say so and exit.
 */
static void
web_stop_stuck(int sig)
{
	char msg[] = "leasekeeper web: the shutdown took over 10 s (stuck at step 0 of 5: "
	             "1 tail, 2 listener, 3 session, 4 events, 5 exit): exiting now\n";
	char *digit = strstr(msg, "step 0") + 5;

	(void)sig;
	*digit = (char)('0' + web_stop_phase);
	(void)!write(STDERR_FILENO, msg, sizeof msg - 1);
	_exit(0);
}
#define WEB_REFRESH_MS   3000
#define WEB_SESSION_MS   10000
#define WEB_RUNS         50        /* newest run records read per job */
#define WEB_MAX_LIST     500       /* entries read of any other listing */
#define WEB_MAX_DOCUMENT (4 << 20) /* bytes of /api/cluster */
#define WEB_TRIM_STRING  256       /* bytes kept of each string when it is larger */
#define WEB_TOKEN_MIN    16        /* characters of a token from --token-file, at least */
#define WEB_TOKEN_MAX    128       /* ... at most */
#define WEB_TOKEN_RANDOM 24        /* random bytes of a token made at the start */

struct web {
	struct event_base *base;
	struct zk *zk;
	struct http *http;
	struct event *refresh;
	struct event *sigint;
	struct event *sigterm;
	struct view_opts view;
	const char *listen;
	int remote;                    /* --allow-remote: any Host header */
	const char *token_file;        /* --token-file, or NULL: a token made at the start */
	char token[WEB_TOKEN_MAX + 1]; /* every request must carry it (webdoc_token_ok) */
	int reading;                   /* a read of the cluster is in progress */
	int closing;
	char *doc;            /* the last document, or NULL before the first read */
	struct webtail *tail; /* GET /api/runs/<job>/<run id>/output (webtail.c) */
	uint64_t reads;
};

static struct log_limit web_lim_errors;

/* The headers of every reply: what the page may load, and that nothing is cached. */
static void
web_headers(struct evhttp_request *req, const char *type)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", type);
	evhttp_add_header(h, "Content-Security-Policy", webpage_csp);
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "Referrer-Policy", "no-referrer");
	evhttp_add_header(h, "X-Frame-Options", "DENY");
	evhttp_add_header(h, "Cross-Origin-Resource-Policy", "same-origin");
}

/* Reply with a body of len bytes. */
static void
web_reply(struct web *w, struct evhttp_request *req, int code, const char *reason, const char *type,
          const char *body, size_t len)
{
	struct evbuffer *buf = evbuffer_new();

	evbuffer_add(buf, body, len);
	web_headers(req, type);
	http_respond(w->http, req, code, reason, buf);
	evbuffer_free(buf);
}

/* web_reply for webtail.c. */
static void
web_tail_reply(void *arg, struct evhttp_request *req, int code, const char *reason,
               const char *type, const char *body, size_t len)
{
	web_reply(arg, req, code, reason, type, body, len);
}

/* A Host header that is a name (DNS rebinding; http.c judges it): 403, with our headers. */
static void
web_refused_cb(struct evhttp_request *req, void *arg)
{
	struct web *w = arg;
	static const char msg[] = "this dashboard answers to an address or localhost only "
	                          "(see --allow-remote)\n";

	web_reply(w, req, 403, "Forbidden", "text/plain; charset=utf-8", msg, sizeof msg - 1);
}

/*
 * Whether the request carries the token (in ?token=, the cookie, or Authorization: Bearer);
 * if not, answer 401 and return 0. A token in the query sets the cookie, so that the page's
 * own requests carry it.
 */
static int
web_authorized(struct web *w, struct evhttp_request *req)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	static const char msg[] = "this dashboard needs its token: open the address it printed "
	                          "at its start (http://HOST:PORT/?token=...), or the one made "
	                          "of its --token-file\n";
	char *cookie;
	int ok = webdoc_token_ok(evhttp_request_get_uri(req), evhttp_find_header(in, "Cookie"),
	                         evhttp_find_header(in, "Authorization"), w->token);

	if (ok == 0) {
		web_reply(w, req, 401, "Unauthorized", "text/plain; charset=utf-8", msg,
		          sizeof msg - 1);
		return 0;
	}
	if (ok == 2) {
		xasprintf(&cookie, "%s=%s; HttpOnly; SameSite=Strict; Path=/", WEBDOC_COOKIE,
		          w->token);
		evhttp_add_header(evhttp_request_get_output_headers(req), "Set-Cookie", cookie);
		free(cookie);
	}
	return 1;
}

/* GET / */
static void
web_page_cb(struct evhttp_request *req, void *arg)
{
	struct web *w = arg;

	if (!web_authorized(w, req))
		return;
	web_reply(w, req, 200, "OK", "text/html; charset=utf-8", webpage_html, webpage_html_len);
}

/* GET /api/cluster: the last document, or 503 before the first read. */
static void
web_api_cb(struct evhttp_request *req, void *arg)
{
	struct web *w = arg;
	static const char none[] = "{\"error\": \"no view of the cluster yet: waiting for "
	                           "ZooKeeper\"}\n";

	if (!web_authorized(w, req))
		return;
	if (w->doc == NULL)
		web_reply(w, req, 503, "Service Unavailable", "application/json", none,
		          sizeof none - 1);
	else
		web_reply(w, req, 200, "OK", "application/json", w->doc, strlen(w->doc));
}

/* Any other path: GET /api/runs/<job>/<run id>/output?from=N (webtail.c), or 404. */
static void
web_notfound_cb(struct evhttp_request *req, void *arg)
{
	struct web *w = arg;

	if (strncmp(evhttp_request_get_uri(req), "/api/runs/", 10) == 0) {
		if (web_authorized(w, req))
			webtail_serve(w->tail, req);
		return;
	}
	web_reply(w, req, 404, "Not Found", "text/plain; charset=utf-8", "not found\n", 10);
}

/*
 * The document of a view: the view and when it was read. Past WEB_MAX_DOCUMENT bytes its
 * long strings are cut (node data is anyone's to write, 64 KiB each); past it still, the
 * document says only that, and how large the view was.
 */
static char *
web_document(json_t *view)
{
	char when[40], *doc;
	size_t len;

	clock_iso8601(clock_wall_ms(), when, sizeof when);
	json_object_set_new(view, "generated", json_string(when));
	json_object_set_new(view, "refresh_ms", json_integer(WEB_REFRESH_MS));
	json_object_set_new(view, "version", json_string(LEASEKEEPER_VERSION));
	doc = json_dumps(view, JSON_COMPACT);
	if (doc != NULL && strlen(doc) <= WEB_MAX_DOCUMENT)
		return doc;
	len = doc != NULL ? strlen(doc) : 0;
	free(doc);
	webdoc_trim(view, WEB_TRIM_STRING);
	json_object_set_new(view, "trimmed", json_integer((json_int_t)len));
	doc = json_dumps(view, JSON_COMPACT);
	if (doc != NULL && strlen(doc) <= WEB_MAX_DOCUMENT)
		return doc;
	free(doc);
	view = json_pack("{s:s, s:s, s:I}", "generated", when, "error",
	                 "the cluster's view is too large for this page: use leasekeeper status",
	                 "size", (json_int_t)len);
	doc = json_dumps(view, JSON_COMPACT);
	json_decref(view);
	return doc;
}

/* A read of the cluster is in: it becomes the document served. */
static void
web_view_done(json_t *view, void *arg)
{
	struct web *w = arg;
	json_t *errors = json_object_get(view, "errors");
	char *doc;

	w->reading = 0;
	json_object_del(view, "_no_cluster"); /* status' --root check; the page shows the lists */
	if (w->closing) {
		json_decref(view);
		return;
	}
	webtail_update(w->tail, view); /* takes the workers' output tokens out of it */
	if (json_array_size(errors) > 0)
		log_warnx_limited(&web_lim_errors,
		                  "web: %zu read%s of the cluster failed, first: %s",
		                  json_array_size(errors), json_array_size(errors) == 1 ? "" : "s",
		                  json_string_value(json_array_get(errors, 0)));
	doc = web_document(view);
	json_decref(view);
	if (doc == NULL)
		return;
	free(w->doc);
	w->doc = doc;
	if (w->reads++ == 0)
		log_info("web: first view of the cluster read (%zu bytes)", strlen(doc));
}

/* Start a read of the cluster unless one runs or the session is not connected. */
static void
web_read(struct web *w)
{
	if (w->reading || w->closing || zk_state(w->zk) != ZK_STATE_CONNECTED)
		return;
	w->reading = 1;
	view_start(w->zk, &w->view, web_view_done, w);
}

static void
web_refresh_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	web_read(arg);
}

/* The session: read at once when it is (back) up. */
static void
web_zk_cb(struct zk *zk, enum zk_event event, void *arg)
{
	struct web *w = arg;

	(void)zk;
	if (event == ZK_EVENT_SESSION_NEW || event == ZK_EVENT_RECONNECTED)
		web_read(w);
}

/* SIGINT, SIGTERM: close the session and leave the loop. */
static void
web_signal_cb(int sig, short what, void *arg)
{
	struct web *w = arg;

	(void)what;
	log_info("web: %s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
	signal(SIGALRM, web_stop_stuck);
	alarm(WEB_STOP_MAX_S);
	w->closing = 1;
	event_base_loopbreak(w->base);
}

/* Serve the dashboard until SIGINT or SIGTERM; an exit status. */
static int
web_serve(struct web *w, const struct target *t)
{
	struct timeval tv = {WEB_REFRESH_MS / 1000, (WEB_REFRESH_MS % 1000) * 1000};

	signal(SIGPIPE, SIG_IGN);
	if ((w->base = event_base_new()) == NULL)
		fatalx("event_base_new");
	if ((w->http = http_listen(w->base, w->listen)) == NULL) {
		event_base_free(w->base);
		return EXIT_UNAVAILABLE;
	}
	if (w->remote)
		http_any_host(w->http); /* else http.c refuses a Host header that is a name */
	http_on_refuse(w->http, web_refused_cb, w);
	w->tail = webtail_new(w->base, w->http, web_tail_reply, w);
	http_route(w->http, "/", web_page_cb, w);
	http_route(w->http, "/index.html", web_page_cb, w);
	http_route(w->http, "/api/cluster", web_api_cb, w);
	http_route(w->http, NULL, web_notfound_cb, w);
	w->sigint = evsignal_new(w->base, SIGINT, web_signal_cb, w);
	w->sigterm = evsignal_new(w->base, SIGTERM, web_signal_cb, w);
	evsignal_add(w->sigint, NULL);
	evsignal_add(w->sigterm, NULL);
	w->refresh = event_new(w->base, -1, EV_PERSIST, web_refresh_cb, w);
	evtimer_add(w->refresh, &tv);
	w->zk = zk_create(w->base, t->hosts, WEB_SESSION_MS, 0,
	                  t->auth != NULL  ? t->auth
	                  : t->cfg != NULL ? t->cfg->auth
	                                   : NULL,
	                  web_zk_cb, w);
	if (w->token_file == NULL)
		log_info("web: the dashboard of %s at http://%s/?token=%s", t->hosts, w->listen,
		         w->token);
	else
		log_info("web: the dashboard of %s at http://%s/?token=<the first line of %s>",
		         t->hosts, w->listen, w->token_file);
	event_base_dispatch(w->base);
	w->closing = 1;
	web_stop_phase = 1;
	webtail_free(w->tail);
	web_stop_phase = 2;
	http_free(w->http);
	web_stop_phase = 3;
	zk_free(w->zk); /* completes a read in progress: web_view_done drops it */
	web_stop_phase = 4;
	event_free(w->refresh);
	event_free(w->sigint);
	event_free(w->sigterm);
	event_base_free(w->base);
	free(w->doc);
	web_stop_phase = 5;
	return 0;
}

/* Whether c may be in a token: URL-safe characters that need no escaping. */
static int
web_token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '~';
}

/*
 * The token every request must carry: the first line of --token-file (a regular file, no
 * link followed, owned by us with no permission for others), or WEB_TOKEN_RANDOM random
 * bytes in base64url. 0, or -1 after saying why.
 */
static int
web_token(struct web *w)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char r[WEB_TOKEN_RANDOM];
	struct stat st;
	ssize_t n;
	size_t i, o = 0;
	int fd;

	if (w->token_file == NULL) {
		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
			fatal("getrandom");
		for (i = 0; i + 2 < sizeof r; i += 3) {
			uint32_t v = (uint32_t)r[i] << 16 | (uint32_t)r[i + 1] << 8 | r[i + 2];

			w->token[o++] = b64[v >> 18 & 63];
			w->token[o++] = b64[v >> 12 & 63];
			w->token[o++] = b64[v >> 6 & 63];
			w->token[o++] = b64[v & 63];
		}
		w->token[o] = '\0';
		return 0;
	}
	fd = open(w->token_file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		fprintf(stderr,
		        "leasekeeper web: --token-file %s: %s: it must be a regular file, not a "
		        "link, owned by the user running the dashboard, mode 0600 or 0400\n",
		        w->token_file, fd < 0 ? strerror(errno) : "refused");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = read(fd, w->token, WEB_TOKEN_MAX + 1);
	close(fd);
	w->token[n > 0 ? (size_t)n : 0] = '\0';
	w->token[strcspn(w->token, "\n")] = '\0';
	for (i = 0; w->token[i] != '\0' && web_token_char(w->token[i]); i++)
		;
	if (n <= 0 || w->token[i] != '\0' || i < WEB_TOKEN_MIN || i > WEB_TOKEN_MAX) {
		fprintf(
		    stderr,
		    "leasekeeper web: --token-file %s: its first line must be %d to %d letters, "
		    "digits, '-', '_', '.' or '~'\n",
		    w->token_file, WEB_TOKEN_MIN, WEB_TOKEN_MAX);
		return -1;
	}
	return 0;
}

/* `web`. */
int
web_main(int argc, char **argv)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"zk", required_argument, NULL, 'z'},
	                                         {"root", required_argument, NULL, 'r'},
	                                         {"auth-file", required_argument, NULL, 'A'},
	                                         {"listen", required_argument, NULL, 'l'},
	                                         {"allow-remote", no_argument, NULL, 'R'},
	                                         {"token-file", required_argument, NULL, 'T'},
	                                         {"verbose", no_argument, NULL, 'v'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	static const char usage[] =
	    "usage: leasekeeper web [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
	    "                       [--listen HOST:PORT] [--allow-remote] [--token-file FILE] "
	    "[-v]\n"
	    "\n"
	    "Serve the read-only dashboard of the cluster, on a ZooKeeper session of its own.\n"
	    "\n"
	    "  -l, --listen HOST:PORT  where to listen (default " WEB_DEFAULT_LISTEN ")\n"
	    "  -R, --allow-remote      allow a listen address that is not loopback\n"
	    "  -T, --token-file FILE   the token every request must carry (first line, mode\n"
	    "                          0600); default: a random one, printed at the start\n"
	    "  -v, --verbose           log debug lines too\n" TARGET_OPTIONS_HELP;
	struct target_opts o = {NULL, NULL, NULL, NULL};
	struct target t;
	struct web w;
	int ch, rc, verbose = 0;

	memset(&w, 0, sizeof w);
	w.listen = WEB_DEFAULT_LISTEN;
	while ((ch = getopt_long(argc, argv, "c:z:r:A:l:RT:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.file = optarg;
			break;
		case 'z':
			o.hosts = optarg;
			break;
		case 'r':
			o.root = optarg;
			break;
		case 'A':
			o.auth_file = optarg;
			break;
		case 'l':
			w.listen = optarg;
			break;
		case 'R':
			w.remote = 1;
			break;
		case 'T':
			w.token_file = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return usage_hint("web");
		}
	}
	if (optind != argc) {
		fprintf(stderr, "leasekeeper web: unexpected argument \"%s\"\n", argv[optind]);
		return usage_hint("web");
	}
	if (!webdoc_loopback(w.listen) && !w.remote) {
		fprintf(
		    stderr,
		    "leasekeeper web: --listen %s is not a loopback address: the dashboard's "
		    "only authentication is its token, sent in clear, and it shows the whole "
		    "cluster, captured output included; listen on 127.0.0.1 and "
		    "reach it through an SSH tunnel or a reverse proxy that authenticates, or "
		    "pass --allow-remote if every host that can reach it may read the cluster\n",
		    w.listen);
		return EXIT_USAGE;
	}
	log_init(verbose, "web");
	if (web_token(&w) != 0)
		return EXIT_CONFIG;
	if ((rc = target_resolve(&o, "web", &t)) != 0)
		return rc;
	w.view.root = t.root;
	w.view.cfg = t.cfg;
	w.view.runs = WEB_RUNS;
	w.view.max_list = WEB_MAX_LIST;
	w.view.output_tokens = 1; /* for webtail.c, which takes them out of every view */
	rc = web_serve(&w, &t);
	if (t.auth != NULL)
		explicit_bzero(t.auth, strlen(t.auth));
	free(t.auth);
	config_free(t.cfg);
	return rc;
}
