/* SPDX-License-Identifier: Apache-2.0 */
/* lk-bench.c: latency of the lock recipes and of bare ZooKeeper calls, for scripts/bench. */

/*
 * lk-bench uncontended HOSTS PATH N [--warmup W]
 * lk-bench handoff HOSTS PATH N WHO [--hold-us H] [--read | --write]
 * lk-bench floor HOSTS PATH N WHO [--hold-us H] [--zk]
 *
 * Everything runs on one libevent loop in one thread. Timestamps are CLOCK_MONOTONIC in
 * nanoseconds, the clock of Java's System.nanoTime(), so that lines of different processes
 * (and of CuratorPeer's bench modes) can be merged. Every mode prints "ready" once its
 * session is up and its folders exist; handoff and floor then wait for a line "go" on stdin
 * so that the driver can start both peers before either begins. The last line starts with
 * "done". Any surprise (a lost connection, a failed request) ends the run with status 1:
 * the figures would not be comparable.
 *
 * uncontended: one session, W + N cycles, the first W not printed. One cycle is
 *	1. mutex_acquire -> acquired callback (ACQUIRE), then mutex_release followed by an
 *	   exists on the lock folder; the server answers a session's requests in order, so the
 *	   exists answer means the delete has landed (RELEASE; CYCLE is the sum, call to answer);
 *	2. one exists on the lock folder (EXISTS: a read round trip, the 1-RTT reference);
 *	3. bare requests on ephemeral sequential nodes in PATH-ref: a create (CREATE: a write
 *	   round trip), its delete (DELETE); a create with a listing of PATH-ref pipelined behind
 *	   it, to the listing's answer (CREATE_LIST: what the recipe's acquire sends); a create
 *	   and, once it is answered, a listing (CREATE_THEN_LIST: two round trips, the shape of
 *	   Curator's acquire); each node is deleted before the next step.
 *	"cycle I ACQUIRE RELEASE CYCLE EXISTS CREATE DELETE CREATE_LIST CREATE_THEN_LIST", then
 *	"shortcuts K" and "done".
 *
 * handoff: one of two processes contending for the mutex at PATH. N times: acquire; print
 *	"acquired WHO T shortcut=0|1" (T: in the acquired callback; shortcut: taken over
 *	without a listing); hold H us (default 2000) on a timer; take T; mutex_release; print
 *	"release WHO T"; acquire again at once (the release and the next create are pipelined).
 *	Two such peers alternate: the waiter's acquired T minus the holder's release T is one
 *	hand-over. With --read or --write the peer takes that side of the read-write lock at
 *	PATH (mutex.c's read-write sides) instead: a reader and a writer alternate as two writers do, each
 *	waiting for the other's release.
 *
 * floor: the same ping-pong without the recipe. Each peer keeps two ephemeral nodes,
 *	PATH/WHO-K and PATH/WHO-(K+1), K counting from 0; after "go" it lists PATH to learn the
 *	other peer's name. The peer whose name sorts first holds first; the other reads the
 *	holder's oldest node with a get-data watch. The holder, after H us, takes T and sends
 *	in one pipeline: the delete of its oldest node, the create of its next one, and a
 *	get-data with watch on the other peer's oldest node (K = how many of its releases we
 *	have seen); then it prints "release WHO T". The waiter prints "acquired WHO T HOW NODE"
 *	when the deleted event arrives (HOW "watch"), or when its get-data finds the node
 *	already gone ("gone"; "first" for the first holder's start). So each
 *	hand-over is exactly one delete seen by one watcher, the delete being the first request
 *	of the holder's pipeline. Names change with K so that a late get-data can never land on
 *	a node deleted and created again, and a peer keeps two so that the node watched next
 *	always exists already. By default the calls go straight to the ZooKeeper C client on a
 *	session of their own (completions and watchers act inside zookeeper_process); with --zk
 *	they go through leasekeeper's zk module, as the recipe's do, to tell the session
 *	layer's cost from the recipe's. Folders and the listing go through the zk module in
 *	both cases (set-up, not measured).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <zookeeper/zookeeper.h>

#include "log.h"
#include "mutex.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define BENCH_SESSION_MS 10000
#define BENCH_MARGIN_MS  1000

enum bench_mode { BENCH_UNCONTENDED, BENCH_HANDOFF, BENCH_FLOOR };

/* One uncontended cycle's figures, in nanoseconds. */
struct bench_sample {
	uint64_t acquire;
	uint64_t release;
	uint64_t cycle;
	uint64_t exists;
	uint64_t create;
	uint64_t delete;
	uint64_t create_list;      /* create with a listing pipelined, to the listing's answer */
	uint64_t create_then_list; /* create, then a listing after its answer */
};

struct bench {
	enum bench_mode mode;
	const char *hosts;
	const char *path;
	const char *who;
	long n;
	long warmup;
	uint64_t hold_ns;
	int via_zk; /* floor through the zk module */
	int rw;     /* handoff: 1 the read side, 2 the write side of a read-write lock */

	struct event_base *base;
	struct event *stdin_ev;
	struct event *hold_ev;
	struct zk *zk;
	struct mutex *m;
	int connected;
	int ready;
	int started;
	int setup_pending;
	int exit_code;

	/* uncontended */
	long cycle;
	int step;
	struct bench_sample *samples;
	struct bench_sample cur;
	uint64_t t0;
	char *ref_dir;
	char *ref_prefix; /* PATH-ref/n- */
	char *ref_node;

	/* handoff and floor */
	long acquired;
	uint64_t shortcuts;

	/* floor */
	zhandle_t *zh; /* bare client, without --zk */
	struct event *io;
	int raw_connected;
	int raw_pending;
	long own_next;    /* our nodes are PATH/WHO-K: the next K to create */
	long own_held;    /* the K of the oldest we have, deleted at the next release */
	char *other_base; /* PATH/<the other peer's name> */
	char *other;      /* the node of the other peer that we watch */
	long seen;        /* releases of the other peer seen */
	int waiting;
	int finishing;
};

static void bench_started(struct bench *);
static void floor_setup(struct bench *);

/* CLOCK_MONOTONIC in nanoseconds: the clock of System.nanoTime() and of lk-record. */
static uint64_t
bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void bench_say(const char *, ...) __attribute__((format(printf, 1, 2)));

/* Print one line at once: the driver reads the output while we run. */
static void
bench_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void
usage(void)
{
	fprintf(stderr,
	        "usage: lk-bench uncontended HOSTS PATH N [--warmup W]\n"
	        "       lk-bench handoff HOSTS PATH N WHO [--hold-us H] [--read | --write]\n"
	        "       lk-bench floor HOSTS PATH N WHO [--hold-us H] [--zk]\n");
	exit(2);
}

/* A positive (or, with zero_ok, non-negative) number, or the usage. */
static long
parse_number(const char *text, int zero_ok)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < 0 || (v == 0 && !zero_ok)) {
		fprintf(stderr, "lk-bench: not a %s number: %s\n",
		        zero_ok ? "non-negative" : "positive", text);
		exit(2);
	}
	return v;
}

/* Stop the loop; main closes the session. */
static void
bench_finish(struct bench *b, int code)
{
	b->exit_code = code;
	event_base_loopexit(b->base, NULL);
}

/* Arm the hold timer (a zero hold still returns to the loop first). */
static void
bench_hold(struct bench *b)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(b->hold_ns / 1000000000ULL);
	tv.tv_usec = (suseconds_t)(b->hold_ns % 1000000000ULL / 1000);
	evtimer_add(b->hold_ev, &tv);
}

/* ---------------------------------------------------------------------- set-up */

/* Set up: the two-peer modes now wait for "go"; uncontended starts at once. */
static void
bench_ready(struct bench *b)
{
	b->ready = 1;
	bench_say("ready");
	if (b->mode == BENCH_UNCONTENDED)
		bench_started(b);
}

/* A persistent folder was created, or existed. */
static void
bench_folder_cb(const struct zk_reply *reply, void *arg)
{
	struct bench *b = arg;

	if (reply->rc != ZOK && reply->rc != ZNODEEXISTS)
		fatalx("cannot create %s: %s", reply->path, zerror(reply->rc));
	if (--b->setup_pending > 0)
		return;
	if (b->mode == BENCH_FLOOR)
		floor_setup(b);
	else
		bench_ready(b);
}

/*
 * Create dir and its ancestors as persistent nodes, in one pipeline. Persistent, not
 * containers: the server reaps empty containers every minute, which would put a parent
 * create into one cycle now and then.
 */
static void
bench_folders(struct bench *b, const char *dir)
{
	char *path = xstrdup(dir), *slash;

	for (slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash != NULL)
			*slash = '\0';
		b->setup_pending++;
		zk_create_node(b->zk, path, NULL, -1, ZOO_PERSISTENT, bench_folder_cb, b);
		if (slash == NULL)
			break;
		*slash = '/';
	}
	free(path);
}

/* A line on stdin: "go" starts the two-peer modes; EOF means the driver is gone. */
static void
bench_stdin_cb(int fd, short what, void *arg)
{
	struct bench *b = arg;
	char buf[256];
	ssize_t n;

	(void)what;
	n = read(fd, buf, sizeof buf - 1);
	if (n <= 0) {
		event_del(b->stdin_ev);
		if (!b->started)
			bench_finish(b, 1);
		return;
	}
	buf[n] = '\0';
	if (strstr(buf, "go") != NULL && b->ready && !b->started)
		bench_started(b);
}

/* ---------------------------------------------------------------------- uncontended */

static void uncontended_cycle(struct bench *);
static void uncontended_step(struct bench *);

/* Print the measured cycles. */
static void
uncontended_report(struct bench *b)
{
	const struct bench_sample *s;
	long i;

	for (i = 0; i < b->n; i++) {
		s = &b->samples[i];
		printf("cycle %ld %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		       " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		       i, s->acquire, s->release, s->cycle, s->exists, s->create, s->delete,
		       s->create_list, s->create_then_list);
	}
	printf("shortcuts %" PRIu64 "\n", mutex_shortcuts(b->m));
	bench_say("done");
}

/* The step's last answer came: note the time since its start, go on. */
static void
uncontended_next(struct bench *b, uint64_t *slot)
{
	if (slot != NULL)
		*slot = bench_now() - b->t0;
	b->step++;
	b->t0 = bench_now();
	uncontended_step(b);
}

/* Any answer of a bare request: it must have succeeded. */
static void
uncontended_check(const struct zk_reply *reply)
{
	if (reply->rc != ZOK)
		fatalx("%s: %s", reply->path, zerror(reply->rc));
}

/* A bare create's answer: remember the node (deleted in a later step). */
static void
uncontended_created(struct bench *b, const struct zk_reply *reply)
{
	uncontended_check(reply);
	free(b->ref_node);
	b->ref_node = xstrdup(reply->created);
}

/* The answer that ends the current step. */
static void
uncontended_done_cb(const struct zk_reply *reply, void *arg)
{
	struct bench *b = arg;
	uint64_t *slot[] = {NULL,           &b->cur.release,          &b->cur.exists,
	                    &b->cur.create, &b->cur.delete,           &b->cur.create_list,
	                    NULL,           &b->cur.create_then_list, NULL};

	uncontended_check(reply);
	if (reply->created != NULL)
		uncontended_created(b, reply);
	uncontended_next(b, slot[b->step]);
}

/* A bare create's answer within a step that goes on (pipelined or not). */
static void
uncontended_create_cb(const struct zk_reply *reply, void *arg)
{
	struct bench *b = arg;

	uncontended_created(b, reply);
	if (b->step == 7)
		zk_children(b->zk, b->ref_dir, NULL, uncontended_done_cb, b);
}

/*
 * One step of a cycle: 0 acquire (ends in the acquired callback), 1 release with an exists
 * behind it, 2 exists, 3 create, 4 delete, 5 create with a listing pipelined, 6 delete,
 * 7 create then (after its answer) a listing, 8 delete.
 */
static void
uncontended_step(struct bench *b)
{
	const char *node = b->ref_prefix;

	switch (b->step) {
	case 0:
		mutex_acquire(b->m);
		break;
	case 1:
		mutex_release(b->m);
		zk_exists(b->zk, b->path, uncontended_done_cb, b);
		break;
	case 2:
		zk_exists(b->zk, b->path, uncontended_done_cb, b);
		break;
	case 3:
		zk_create_node(b->zk, node, NULL, -1, ZOO_EPHEMERAL_SEQUENTIAL, uncontended_done_cb,
		               b);
		break;
	case 5:
		zk_create_node(b->zk, node, NULL, -1, ZOO_EPHEMERAL_SEQUENTIAL,
		               uncontended_create_cb, b);
		zk_children(b->zk, b->ref_dir, NULL, uncontended_done_cb, b);
		break;
	case 7:
		zk_create_node(b->zk, node, NULL, -1, ZOO_EPHEMERAL_SEQUENTIAL,
		               uncontended_create_cb, b);
		break;
	case 4:
	case 6:
	case 8:
		zk_delete(b->zk, b->ref_node, -1, uncontended_done_cb, b);
		break;
	default:
		b->cur.cycle = b->cur.acquire + b->cur.release;
		if (b->cycle >= b->warmup)
			b->samples[b->cycle - b->warmup] = b->cur;
		if (++b->cycle == b->warmup + b->n) {
			uncontended_report(b);
			bench_finish(b, 0);
		} else
			uncontended_cycle(b);
		break;
	}
}

/* Held: the acquire step is over. */
static void
uncontended_acquired(struct bench *b)
{
	uncontended_next(b, &b->cur.acquire);
}

/* One cycle: acquire and release, then the bare references. */
static void
uncontended_cycle(struct bench *b)
{
	memset(&b->cur, 0, sizeof b->cur);
	b->step = 0;
	b->t0 = bench_now();
	uncontended_step(b);
}

/* ---------------------------------------------------------------------- handoff */

/* Contend for the handoff's lock: the mutex, or a side of the read-write lock. */
static void
handoff_acquire(struct bench *b)
{
	mutex_acquire(b->m);
}

/* How many times the handoff's lock was taken over without a listing. */
static uint64_t
handoff_shortcuts(struct bench *b)
{
	return mutex_shortcuts(b->m);
}

/* Held: say so, then hold. */
static void
handoff_acquired(struct bench *b)
{
	uint64_t t = bench_now();
	int shortcut = handoff_shortcuts(b) != b->shortcuts;

	b->shortcuts = handoff_shortcuts(b);
	bench_say("acquired %s %" PRIu64 " shortcut=%d", b->who, t, shortcut);
	b->acquired++;
	bench_hold(b);
}

/* The hold is over: release, and contend again unless this was the last cycle. */
static void
handoff_release(struct bench *b)
{
	uint64_t t = bench_now();

	mutex_release(b->m);
	bench_say("release %s %" PRIu64, b->who, t);
	if (b->acquired < b->n) {
		handoff_acquire(b);
		return;
	}
	bench_say("done %s shortcuts=%" PRIu64, b->who, handoff_shortcuts(b));
	bench_finish(b, 0);
}

/* ---------------------------------------------------------------------- mutex callbacks */

static void
bench_acquired_cb(void *arg)
{
	struct bench *b = arg;

	if (b->mode == BENCH_UNCONTENDED)
		uncontended_acquired(b);
	else
		handoff_acquired(b);
}

static void
bench_lost_cb(const char *why, void *arg)
{
	(void)arg;
	fatalx("lost the lock: %s", why);
}

static void
bench_failed_cb(const char *why, void *arg)
{
	(void)arg;
	fatalx("cannot acquire the lock: %s", why);
}

/* ---------------------------------------------------------------------- floor */

static void floor_raw_arm(struct bench *);

/* We hold: say so, then hold. */
static void
floor_acquired(struct bench *b, uint64_t t, const char *how)
{
	bench_say("acquired %s %" PRIu64 " %s %s", b->who, t, how,
	          b->other != NULL ? b->other : "-");
	b->acquired++;
	bench_hold(b);
}

/* Our last delete has landed. */
static void
floor_done(struct bench *b)
{
	bench_say("done %s", b->who);
	bench_finish(b, 0);
}

/* The other peer's node was deleted (or found gone): we hold. */
static void
floor_seen(struct bench *b, const char *path, uint64_t t, const char *how)
{
	if (!b->waiting || strcmp(path, b->other) != 0)
		return;
	b->waiting = 0;
	b->seen++;
	floor_acquired(b, t, how);
}

/* --zk: the watch on the other peer's node fired. */
static void
floor_zk_watch_cb(int type, const char *path, void *arg)
{
	uint64_t t = bench_now();

	if (type != ZOO_DELETED_EVENT)
		fatalx("floor: unexpected event %d on %s", type, path);
	floor_seen(arg, path, t, "watch");
}

/* --zk: the get-data that sets the watch. */
static void
floor_zk_get_cb(const struct zk_reply *reply, void *arg)
{
	if (reply->rc == ZNONODE)
		floor_seen(arg, reply->path, bench_now(), "gone");
	else if (reply->rc != ZOK)
		fatalx("floor: get %s: %s", reply->path, zerror(reply->rc));
}

/* --zk: a create or delete of our node. */
static void
floor_zk_own_cb(const struct zk_reply *reply, void *arg)
{
	struct bench *b = arg;

	if (reply->rc != ZOK)
		fatalx("floor: %s: %s", reply->path, zerror(reply->rc));
	if (!b->ready && --b->setup_pending == 0)
		bench_ready(b);
	else if (b->finishing)
		floor_done(b);
}

/* Bare client: the watcher of the other peer's node. */
static void
floor_raw_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	uint64_t t = bench_now();

	(void)zh;
	(void)state;
	if (type == ZOO_SESSION_EVENT)
		return;
	if (type != ZOO_DELETED_EVENT)
		fatalx("floor: unexpected event %d on %s", type, path);
	floor_seen(ctx, path, t, "watch");
}

/* Bare client: the get-data that sets the watch. */
static void
floor_raw_get_cb(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
	struct bench *b = (struct bench *)data;

	(void)value;
	(void)len;
	(void)stat;
	b->raw_pending--;
	if (rc == ZNONODE)
		floor_seen(b, b->other, bench_now(), "gone");
	else if (rc != ZOK)
		fatalx("floor: get %s: %s", b->other, zerror(rc));
}

/* Bare client: a delete of our node. */
static void
floor_raw_delete_cb(int rc, const void *data)
{
	struct bench *b = (struct bench *)data;

	b->raw_pending--;
	if (rc != ZOK)
		fatalx("floor: delete of our node: %s", zerror(rc));
	if (b->finishing && b->raw_pending == 0)
		floor_done(b);
}

/* Bare client: a create of our node. */
static void
floor_raw_create_cb(int rc, const char *created, const void *data)
{
	struct bench *b = (struct bench *)data;

	(void)created;
	b->raw_pending--;
	if (rc != ZOK)
		fatalx("floor: create of our node: %s", zerror(rc));
	if (!b->ready && --b->setup_pending == 0)
		bench_ready(b);
}

/* Bare client: count a request the library took, or give up. */
static void
floor_raw_sent(struct bench *b, int rc, const char *what)
{
	if (rc != ZOK)
		fatalx("floor: %s: %s", what, zerror(rc));
	b->raw_pending++;
}

/*
 * Watch, with a get-data watch, the node the other peer holds now: the one of its
 * incarnations that it has not deleted yet. Watching a name of its own per incarnation
 * means a late get can never land on the node the other peer has already re-created.
 */
static void
floor_watch_other(struct bench *b)
{
	free(b->other);
	xasprintf(&b->other, "%s-%ld", b->other_base, b->seen);
	b->waiting = 1;
	if (b->via_zk)
		zk_get(b->zk, b->other, floor_zk_watch_cb, floor_zk_get_cb, b);
	else
		floor_raw_sent(
		    b, zoo_awget(b->zh, b->other, floor_raw_watcher, b, floor_raw_get_cb, b),
		    "get");
}

/* Create our next node: ephemeral, no data. */
static void
floor_create_own(struct bench *b)
{
	char *path;

	xasprintf(&path, "%s/%s-%ld", b->path, b->who, b->own_next++);
	if (b->via_zk)
		zk_create_node(b->zk, path, NULL, -1, ZOO_EPHEMERAL, floor_zk_own_cb, b);
	else
		floor_raw_sent(b,
		               zoo_acreate(b->zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
		                           ZOO_EPHEMERAL, floor_raw_create_cb, b),
		               "create");
	free(path);
}

/*
 * At the start, our first two nodes. A peer always keeps two, so that the node the other
 * peer watches next was created a whole release earlier: were it created in the same
 * pipeline as the delete the other peer watched, a release process preempted between
 * its sends could let the other peer's get arrive first and find nothing.
 */
static void
floor_create_first(struct bench *b)
{
	b->setup_pending = 2;
	floor_create_own(b);
	floor_create_own(b);
}

/* The hold is over: one pipeline of delete, create the next, watch the other's node. */
static void
floor_release(struct bench *b)
{
	uint64_t t = bench_now();
	int last = b->acquired >= b->n;
	char *path;

	if (last)
		b->finishing = 1;
	xasprintf(&path, "%s/%s-%ld", b->path, b->who, b->own_held++);
	if (b->via_zk)
		zk_delete(b->zk, path, -1, floor_zk_own_cb, b);
	else
		floor_raw_sent(b, zoo_adelete(b->zh, path, -1, floor_raw_delete_cb, b), "delete");
	free(path);
	if (!last) {
		floor_create_own(b);
		floor_watch_other(b);
	}
	bench_say("release %s %" PRIu64, b->who, t);
	if (!b->via_zk)
		floor_raw_arm(b);
}

static void floor_list(struct bench *);

/* Look for the other peer's node again. */
static void
floor_relist_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	floor_list(arg);
}

/* After "go": find the other peer's node; the first name in order holds first. */
static void
floor_list_cb(const struct zk_reply *reply, void *arg)
{
	struct bench *b = arg;
	const char *dash;
	char *name = NULL;
	struct timeval tv = {0, 10000};
	int i;

	if (reply->rc != ZOK)
		fatalx("floor: list %s: %s", b->path, zerror(reply->rc));
	if (reply->nchildren > 4)
		fatalx("floor: %s holds %d nodes; use a fresh folder", b->path, reply->nchildren);
	for (i = 0; i < reply->nchildren && name == NULL; i++) {
		dash = strrchr(reply->children[i], '-');
		if (dash != NULL && ((size_t)(dash - reply->children[i]) != strlen(b->who) ||
		                     strncmp(reply->children[i], b->who, strlen(b->who)) != 0))
			name = xstrndup(reply->children[i], (size_t)(dash - reply->children[i]));
	}
	if (name == NULL) {
		event_base_once(b->base, -1, EV_TIMEOUT, floor_relist_cb, b, &tv);
		return;
	}
	b->other_base = znode_join(b->path, name);
	i = strcmp(b->who, name);
	free(name);
	if (i == 0)
		fatalx("floor: both peers are called %s", b->who);
	if (i < 0)
		floor_acquired(b, bench_now(), "first");
	else {
		floor_watch_other(b);
		if (!b->via_zk)
			floor_raw_arm(b);
	}
}

/* List the folder (through the zk session: set-up, not measured). */
static void
floor_list(struct bench *b)
{
	zk_children(b->zk, b->path, NULL, floor_list_cb, b);
}

/* Bare client: the socket is ready or the library's timeout passed. */
static void
floor_raw_io_cb(int fd, short what, void *arg)
{
	struct bench *b = arg;
	int events = 0;

	(void)fd;
	if (what & EV_READ)
		events |= ZOOKEEPER_READ;
	if (what & EV_WRITE)
		events |= ZOOKEEPER_WRITE;
	zookeeper_process(b->zh, events);
	floor_raw_arm(b);
}

/* Bare client: arm the io event with what the library wants now. */
static void
floor_raw_arm(struct bench *b)
{
	struct timeval tv = {0, 0};
	int fd = -1, interest = 0;
	short what = EV_TIMEOUT;

	if (b->zh == NULL)
		return;
	event_del(b->io);
	zookeeper_interest(b->zh, &fd, &interest, &tv);
	if (fd >= 0 && (interest & ZOOKEEPER_READ))
		what |= EV_READ;
	if (fd >= 0 && (interest & ZOOKEEPER_WRITE))
		what |= EV_WRITE;
	if (fd < 0)
		fd = -1;
	if (tv.tv_sec < 0 || tv.tv_usec < 0)
		tv.tv_sec = tv.tv_usec = 0;
	event_assign(b->io, b->base, fd, what, floor_raw_io_cb, b);
	event_add(b->io, &tv);
}

/* Bare client: session events. The run is void if the connection drops. */
static void
floor_raw_session_cb(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct bench *b = ctx;

	(void)zh;
	(void)path;
	if (type != ZOO_SESSION_EVENT)
		return;
	if (state == ZOO_CONNECTED_STATE && !b->raw_connected) {
		b->raw_connected = 1;
		floor_create_first(b);
	} else if (state != ZOO_CONNECTED_STATE)
		fatalx("floor: the bare session left CONNECTED (state %d): the run is void", state);
}

/* The folders exist: create our node, through a bare session unless --zk. */
static void
floor_setup(struct bench *b)
{
	if (b->via_zk) {
		floor_create_first(b);
		return;
	}
	zoo_set_debug_level((ZooLogLevel)0);
	b->zh = zookeeper_init(b->hosts, floor_raw_session_cb, BENCH_SESSION_MS, NULL, b, 0);
	if (b->zh == NULL)
		fatal("zookeeper_init %s", b->hosts);
	/*
	 * By default the client resolves the host list again in every zookeeper_interest()
	 * call (getaddrinfo with AI_ADDRCONFIG: two netlink round trips, about 20 us here). A
	 * floor should not pay for that: no routine re-resolution.
	 */
	zoo_set_servers_resolution_delay(b->zh, -1);
	b->io = event_new(b->base, -1, 0, floor_raw_io_cb, b);
	floor_raw_arm(b);
}

/* ---------------------------------------------------------------------- common */

/* The hold timer: release. */
static void
bench_hold_cb(int fd, short what, void *arg)
{
	struct bench *b = arg;

	(void)fd;
	(void)what;
	if (b->mode == BENCH_HANDOFF)
		handoff_release(b);
	else
		floor_release(b);
}

/* The measured loop begins. */
static void
bench_started(struct bench *b)
{
	b->started = 1;
	if (b->mode == BENCH_UNCONTENDED)
		uncontended_cycle(b);
	else if (b->mode == BENCH_HANDOFF)
		handoff_acquire(b);
	else
		floor_list(b);
}

/* Session events of the zk module. The run is void if the connection drops. */
static void
bench_zk_cb(struct zk *zk, enum zk_event event, void *arg)
{
	struct bench *b = arg;

	(void)zk;
	if (b->m != NULL)
		mutex_session(b->m, event);
	switch (event) {
	case ZK_EVENT_SESSION_NEW:
		if (b->connected)
			fatalx("a new session replaced ours: the run is void");
		b->connected = 1;
		bench_folders(b, b->path);
		if (b->ref_dir != NULL)
			bench_folders(b, b->ref_dir);
		break;
	case ZK_EVENT_DISCONNECTED:
	case ZK_EVENT_EXPIRED:
		if (!b->finishing)
			fatalx("session %s: the run is void", zk_event_name(event));
		break;
	default:
		break;
	}
}

static void
parse_args(int argc, char **argv, struct bench *b)
{
	const char *pos[5];
	int npos = 0, want, i;

	if (argc < 2)
		usage();
	if (strcmp(argv[1], "uncontended") == 0)
		b->mode = BENCH_UNCONTENDED;
	else if (strcmp(argv[1], "handoff") == 0)
		b->mode = BENCH_HANDOFF;
	else if (strcmp(argv[1], "floor") == 0)
		b->mode = BENCH_FLOOR;
	else
		usage();
	b->warmup = 200;
	b->hold_ns = 2000 * 1000ULL;
	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc &&
		    b->mode == BENCH_UNCONTENDED)
			b->warmup = parse_number(argv[++i], 1);
		else if (strcmp(argv[i], "--hold-us") == 0 && i + 1 < argc &&
		         b->mode != BENCH_UNCONTENDED)
			b->hold_ns = (uint64_t)parse_number(argv[++i], 1) * 1000ULL;
		else if (strcmp(argv[i], "--zk") == 0 && b->mode == BENCH_FLOOR)
			b->via_zk = 1;
		else if ((strcmp(argv[i], "--read") == 0 || strcmp(argv[i], "--write") == 0) &&
		         b->mode == BENCH_HANDOFF)
			b->rw = argv[i][2] == 'r' ? 1 : 2;
		else if (strncmp(argv[i], "--", 2) == 0 || npos == 4)
			usage();
		else
			pos[npos++] = argv[i];
	}
	want = b->mode == BENCH_UNCONTENDED ? 3 : 4;
	if (npos != want || pos[1][0] != '/' || strlen(pos[1]) < 2 ||
	    pos[1][strlen(pos[1]) - 1] == '/')
		usage();
	b->hosts = pos[0];
	b->path = pos[1];
	b->n = parse_number(pos[2], 0);
	if (want == 4) {
		b->who = pos[3];
		if (strchr(b->who, '/') != NULL || b->who[0] == '\0')
			usage();
	}
}

int
main(int argc, char **argv)
{
	static const struct mutex_cb mcb = {bench_acquired_cb, bench_lost_cb, bench_failed_cb,
	                                    NULL};
	struct bench b;
	struct event_config *cfg;

	memset(&b, 0, sizeof b);
	parse_args(argc, argv, &b);
	log_init(-1, "lk-bench");

	cfg = event_config_new();
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	if ((b.base = event_base_new_with_config(cfg)) == NULL)
		fatalx("event_base_new");
	event_config_free(cfg);
	b.hold_ev = evtimer_new(b.base, bench_hold_cb, &b);
	b.stdin_ev = event_new(b.base, STDIN_FILENO, EV_READ | EV_PERSIST, bench_stdin_cb, &b);
	if (b.mode != BENCH_UNCONTENDED)
		event_add(b.stdin_ev, NULL);
	if (b.mode == BENCH_UNCONTENDED) {
		b.samples = xcalloc((size_t)b.n, sizeof *b.samples);
		xasprintf(&b.ref_dir, "%s-ref", b.path);
		xasprintf(&b.ref_prefix, "%s/n-", b.ref_dir);
	}

	b.zk = zk_create(b.base, b.hosts, BENCH_SESSION_MS, BENCH_MARGIN_MS, NULL, bench_zk_cb, &b);
	if (b.rw != 0)
		b.m = mutex_new_side(b.zk, b.path, b.rw == 2 ? MUTEX_WRITE : MUTEX_READ, b.who,
		                     &mcb, &b);
	else if (b.mode != BENCH_FLOOR)
		b.m = mutex_new(b.zk, b.path, b.who != NULL ? b.who : "lk-bench", &mcb, &b);

	event_base_dispatch(b.base);

	b.finishing = 1;
	if (b.zh != NULL) {
		event_del(b.io);
		zookeeper_close(b.zh);
		event_free(b.io);
	}
	mutex_free(b.m);
	zk_free(b.zk);
	event_free(b.hold_ev);
	event_free(b.stdin_ev);
	event_base_free(b.base);
	free(b.samples);
	free(b.ref_dir);
	free(b.ref_prefix);
	free(b.ref_node);
	free(b.other_base);
	free(b.other);
	return b.exit_code;
}
