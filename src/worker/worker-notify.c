/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* worker-notify.c: what the worker tells systemd: READY=1, STATUS= kept up to date, the watchdog. */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "aclcheck.h"
#include "ctlrec.h"
#include "cgroup.h"
#include "clock.h"
#include "compat.h"
#include "config.h"
#include "endpoints.h"
#include "job.h"
#include "layout.h"
#include "leasekeeper.h"
#include "log.h"
#include "members.h"
#include "nodedata.h"
#include "runspec.h"
#include "sdnotify.h"
#include "svlink.h"
#include "worker.h"
#include "worker-int.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

/* Tell systemd (Type=notify) how we are, if it is listening. */
void
worker_notify(const char *message)
{
	(void)sdnotify(message);
}

/*
 * What the worker does, in one line for `systemctl status` (STATUS=): its jobs, the
 * leases it holds, its runs, and its session.
 */
static void
worker_notify_line(struct worker *w, char *buf, size_t len)
{
	struct worker_job *wj;
	struct job_stats st;
	enum job_state js;
	int jobs = 0, held = 0, running = 0;
	uint64_t deadline, now;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (wj->done)
			continue;
		jobs++;
		job_stats(wj->job, &st);
		held += st.lease_held != 0;
		js = job_state(wj->job);
		running += js == JOB_STARTING || js == JOB_RUNNING || js == JOB_STOPPING;
	}
	switch (w->state) {
	case WORKER_CONNECTING:
		snprintf(buf, len, "connecting to ZooKeeper %s", w->cfg->hosts);
		return;
	case WORKER_REGISTERING:
		snprintf(buf, len, "registering as %s", w->path);
		return;
	case WORKER_DUPLICATE:
		snprintf(buf, len, "waiting for another session's %s to go", w->path);
		return;
	case WORKER_STOPPING:
		snprintf(buf, len, "stopping: %d run%s left, %d lease%s held", running,
		         running == 1 ? "" : "s", held, held == 1 ? "" : "s");
		return;
	case WORKER_READY:
		break;
	}
	if (zk_state(w->zk) == ZK_STATE_CONNECTED) {
		snprintf(buf, len,
		         "%d job%s, %d lease%s held, %d running; connected to ZooKeeper %s "
		         "as session 0x%llx",
		         jobs, jobs == 1 ? "" : "s", held, held == 1 ? "" : "s", running,
		         w->cfg->hosts, (unsigned long long)zk_session_id(w->zk));
		return;
	}
	deadline = zk_deadline_ns(w->zk);
	now = clock_now_ns();
	snprintf(buf, len,
	         "%d job%s, %d lease%s held, %d running; disconnected from ZooKeeper %s, "
	         "lease deadline in %llu ms",
	         jobs, jobs == 1 ? "" : "s", held, held == 1 ? "" : "s", running, w->cfg->hosts,
	         (unsigned long long)(deadline > now ? (deadline - now) / CLOCK_NS_PER_MS : 0));
}

/*
 * Send what (READY=1, ...; NULL: nothing) with the status line, or the status line alone
 * when it changed since the last one sent.
 */
void
worker_notify_status(struct worker *w, const char *what)
{
	char line[sizeof w->status_sent], msg[sizeof line + 128];

	if (!sdnotify_listening())
		return;
	worker_notify_line(w, line, sizeof line);
	if (what == NULL && strcmp(line, w->status_sent) == 0)
		return;
	snprintf(msg, sizeof msg, "%s%sSTATUS=%s", what != NULL ? what : "",
	         what != NULL ? "\n" : "", line);
	if (sdnotify(msg) > 0)
		snprintf(w->status_sent, sizeof w->status_sent, "%s", line);
}

/* Every WORKER_STATUS_MS: STATUS= if it changed. */
static void
worker_notify_timer_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	worker_notify_status(arg, NULL);
}

/*
 * The watchdog: from the main loop, so that a loop that is wedged (or a process that is
 * stopped) misses its pings and systemd restarts the service. The supervisor kills the
 * jobs at the lease deadline either way.
 */
static void
worker_notify_watchdog_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	worker_notify("WATCHDOG=1");
}

/*
 * When systemd listens: STATUS= kept up to date, and WATCHDOG=1 at half the interval it
 * asks for (WATCHDOG_USEC, for us if WATCHDOG_PID says so), from the start.
 */
void
worker_notify_start(struct worker *w)
{
	uint64_t usec;
	struct timeval tv;

	if (!sdnotify_listening())
		return;
	tv.tv_sec = WORKER_STATUS_MS / 1000;
	tv.tv_usec = (WORKER_STATUS_MS % 1000) * 1000;
	w->status_timer = event_new(w->base, -1, EV_PERSIST, worker_notify_timer_cb, w);
	event_add(w->status_timer, &tv);
	worker_notify_status(w, NULL);
	usec = sdnotify_watchdog_usec(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid());
	if (usec == 0)
		return;
	usec /= 2;
	tv.tv_sec = (time_t)(usec / 1000000);
	tv.tv_usec = (suseconds_t)(usec % 1000000);
	w->watchdog_timer = event_new(w->base, -1, EV_PERSIST, worker_notify_watchdog_cb, w);
	event_add(w->watchdog_timer, &tv);
	worker_notify("WATCHDOG=1");
	log_info("systemd watchdog: WATCHDOG=1 every %llu ms",
	         (unsigned long long)(usec + 999) / 1000);
}
