/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * zk-heartbeat.c: the session's heartbeat: the cheapest request the server must answer,
 * every T/3, so that the lease deadline keeps moving while the connection is healthy. It
 * jumps the request queue (zk-request.c). Its delay, from when its timer was due to its
 * answer, is kept in a histogram: it is how late main was (a busy loop fires the timer
 * late) plus how long the server took, and it is what eats into the lease deadline.
 */

#include <sys/socket.h>

#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "zk-int.h"

/* The delay histogram's upper bounds, in seconds. */
static const double zk_heartbeat_bounds[ZK_HB_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1,
                                                          0.25,  0.5,  1,     2.5};

/* Count one heartbeat's delay. */
static void
zk_heartbeat_count(struct zk *zk, uint64_t now)
{
	double s;
	int i;

	if (zk->hb_due_ns == 0 || now < zk->hb_due_ns)
		return;
	s = (double)(now - zk->hb_due_ns) / 1e9;
	for (i = 0; i < ZK_HB_BUCKETS; i++) {
		if (s <= zk_heartbeat_bounds[i])
			zk->hb_buckets[i]++;
	}
	zk->hb_count++;
	zk->hb_sum += s;
	zk->hb_due_ns = 0;
}

/* A heartbeat came back: the server is alive. */
static void
zk_heartbeat_cb(const struct zk_reply *reply, void *arg)
{
	struct zk *zk = arg;

	if (!zk_answered(reply->rc)) {
		log_debug("zookeeper: heartbeat failed: %s", zerror(reply->rc));
		return;
	}
	if (zk->hb_sent_ns != 0 && reply->sent_ns >= zk->hb_sent_ns) {
		zk->hb_sent_ns = 0;
		evtimer_del(zk->stall);
	}
	zk_heartbeat_count(zk, clock_now_ns());
}

/* Send one heartbeat, ahead of every queued request. */
void
zk_heartbeat_send(struct zk *zk)
{
	struct timeval tv;
	int stall_ms = zk_timeout_ms(zk) / 6;

	if (zk->state != ZK_STATE_CONNECTED || zk->closing)
		return;
	if (zk->hb_sent_ns == 0) {
		zk->hb_sent_ns = clock_now_ns();
		tv.tv_sec = stall_ms / 1000;
		tv.tv_usec = (stall_ms % 1000) * 1000;
		evtimer_add(zk->stall, &tv);
	}
	zk_request(zk, ZK_OP_EXISTS, "/", NULL, 0, 0, NULL, zk_heartbeat_cb, zk, 1);
}

/*
 * A heartbeat got no answer within T/6, while a healthy server answers in milliseconds.
 * The client library would give up on this server only after 2/3 T of silence, later
 * than the lease deadline lets jobs live (SIGTERM comes at T - safety_margin - kill_grace).
 * With other servers to try, drop the connection now: the library moves to the next
 * server and resumes the same session, and requests in flight are retried as after any
 * connection loss.
 */
void
zk_heartbeat_stall_cb(int fd, short what, void *arg)
{
	struct zk *zk = arg;

	(void)fd;
	(void)what;
	if (zk->state != ZK_STATE_CONNECTED || zk->closing || zk->hb_sent_ns == 0 || zk->fd < 0 ||
	    strchr(zk->hosts, ',') == NULL)
		return;
	log_warnx_limited(&zk->lim_stall,
	                  "zookeeper: the server did not answer a heartbeat within %d ms; "
	                  "moving to another server",
	                  zk_timeout_ms(zk) / 6);
	zk->hb_sent_ns = 0;
	shutdown(zk->fd, SHUT_RDWR);
	zk_kick(zk);
}

/*
 * Say so when main's own loop was too busy to send a heartbeat on time (more than T/6
 * late): the supervisor kills the jobs at the lease deadline whatever kept main, and this
 * is the line that tells the busy loop from a silent server (docs/safety.md, Liveness).
 */
static void
zk_heartbeat_late(struct zk *zk, uint64_t now)
{
	uint64_t late, deadline = zk_deadline_ns(zk);

	if (zk->hb_next_ns == 0 || now <= zk->hb_next_ns)
		return;
	late = (now - zk->hb_next_ns) / CLOCK_NS_PER_MS;
	if (late <= (uint64_t)zk_timeout_ms(zk) / 6)
		return;
	log_warnx_limited(
	    &zk->lim_late,
	    "main's loop was busy: the heartbeat went out %llu ms late, %lld ms %s "
	    "the lease deadline (jobs are killed when main stays busy past it; see "
	    "docs/safety.md, Liveness)",
	    (unsigned long long)late,
	    (long long)((deadline > now ? deadline - now : now - deadline) / CLOCK_NS_PER_MS),
	    deadline > now ? "before" : "after");
}

/* The heartbeat timer: a request every T/3, and a word while we cannot connect. */
void
zk_heartbeat_timer_cb(int fd, short what, void *arg)
{
	struct zk *zk = arg;
	struct timeval tv;
	int timeout = zk_timeout_ms(zk);
	uint64_t now = clock_now_ns();
	uint64_t period = (uint64_t)(timeout / 3) * CLOCK_NS_PER_MS;

	(void)fd;
	(void)what;
	zk_heartbeat_late(zk, now);
	if (zk->state == ZK_STATE_CONNECTED) {
		/* Due a period after the last one was due (or sent): lateness counts. */
		if (zk->hb_due_ns == 0)
			zk->hb_due_ns =
			    zk->hb_next_ns != 0 && zk->hb_next_ns <= now ? zk->hb_next_ns : now;
		zk_heartbeat_send(zk);
	} else if (zk->state == ZK_STATE_CONNECTING &&
	           now - zk->connecting_logged_ns > 10ULL * 1000 * CLOCK_NS_PER_MS &&
	           now - zk->state_since_ns > 2ULL * 1000 * CLOCK_NS_PER_MS) {
		log_warnx("zookeeper: not connected to %s for %llu s; still trying", zk->hosts,
		          (unsigned long long)((now - zk->state_since_ns) / 1000000000ULL));
		zk->connecting_logged_ns = now;
	}
	zk->hb_next_ns = now + period;
	tv.tv_sec = timeout / 3 / 1000;
	tv.tv_usec = (timeout / 3 % 1000) * 1000;
	evtimer_add(zk->heartbeat, &tv);
}

/* The heartbeat delay histogram, for /metrics: cumulative counts by bound, count and sum. */
void
zk_heartbeat_stats(const struct zk *zk, struct zk_heartbeat_stats *st)
{
	memcpy(st->buckets, zk->hb_buckets, sizeof st->buckets);
	st->bounds = zk_heartbeat_bounds;
	st->count = zk->hb_count;
	st->sum = zk->hb_sum;
}
