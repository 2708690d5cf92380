/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * worker-reload.c: SIGHUP: the configuration reloaded, in slices that yield to the loop.
 *
 * A reload that changes thousands of jobs must not stall the loop: the heartbeat, /livez and
 * the supervisor's messages wait while it runs, and a lease deadline that is not moved in time
 * kills healthy jobs. So a reload is done in slices, WORKER_RELOAD_SLICE_US of work at most,
 * each slice a timer of its own so that everything else that is ready runs in between. First
 * the files are read in steps of config_loader_step() (the worker file, 256 lines of a job
 * file, one job's section resolved, ...), with the same errors as a load in one go. Then the
 * jobs are applied: the new jobs indexed by name, then the running jobs (an unchanged one takes
 * the new configuration's copy and nothing else; a changed or removed one stops), then the new
 * and changed jobs start. A slice also waits while ZooKeeper has more than
 * WORKER_RELOAD_PENDING requests queued or in flight, so that the jobs' requests never wait
 * behind a reload's thousands.
 *
 * SIGHUPs coalesce: while a reload runs, another SIGHUP marks one more as pending, which starts
 * as long after this one ended as this one's slices took (reading and applying: a storm of
 * reloads takes at most half of the loop's time), and reads the files as they are then; a
 * SIGHUP while that one waits to start is taken by it. The slices, the start and the reaping
 * run at the loop's lowest priority (WORKER_PRIORITY_BACKGROUND): only in a turn where
 * nothing else is ready, so that a request to /livez, read, answered and written over
 * several turns, does not wait a slice at each. And a
 * SIGHUP when no file the configuration was read from changed reads nothing: the worker file,
 * each job file, the auth file, /etc/passwd and /etc/group are compared by content and ACL (a
 * SHA-1), inode, owner and mode, and each folder by its times too (they move when a file comes
 * or goes), so a storm of SIGHUPs, even with the files touched, costs a few reads and hashes
 * each. After a refused reload the next one reads again whatever the files are.
 */

#include <sys/stat.h>
#include <sys/xattr.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "config.h"
#include "endpoints.h"
#include "job.h"
#include "log.h"
#include "sha1.h"
#include "sdnotify.h"
#include "svlink.h"
#include "worker-int.h"
#include "xmalloc.h"

#define WORKER_RELOAD_SLICE_US 3000 /* at most this much work per slice */
#define WORKER_RELOAD_PENDING  64   /* wait while more ZooKeeper requests than this wait */
#define WORKER_RELOAD_WAIT_US  5000 /* then look again after this long */
#define WORKER_REAP_SLICE      500  /* jobs freed per turn of the loop (a few ms) */

/* A reload being read, then applied. */
struct worker_reload {
	struct config_loader *loader; /* while the files are read, in steps */
	struct worker_fp *fp;         /* the files as they were before the read */
	uint64_t work_ns;             /* its slices' time, reading and applying (not the waits) */
	struct config *cfg;           /* the new configuration, once read */
	json_t *index;                /* job name -> its index in cfg->jobs_list */
	size_t indexed;               /* ... of the first this many */
	unsigned char *kept;          /* per job of cfg: a running job took it unchanged */
	struct worker_job **prev;     /* per job of cfg: the running copy it changed, stopping */
	struct worker_job **old;      /* the jobs when the reload began */
	size_t nold;
	size_t pos; /* in old (stopping), then in cfg->jobs_list (starting) */
	int starting;
	int ending;  /* every job applied: the end's steps, one slice each (1, 2, 3) */
	int swapped; /* cfg is the worker's, the old one retired */
	uint64_t began_ns;
	size_t unchanged, stopped, started;
};

static void worker_reload(struct worker *);
static void worker_reload_done(struct worker *);
static void worker_reload_swap(struct worker *, struct worker_reload *);
static void worker_reload_http(struct worker *, const char *);
static void worker_reload_read_slice(struct worker *, struct worker_reload *);
static size_t worker_reload_free_done(struct worker *, int, size_t);
static void worker_reload_begin(struct worker *, struct worker_reload *, struct config *);

#define WORKER_FP_MAX_BYTES (16 * 1024 * 1024) /* a larger file is judged by its times */

/*
 * One file the configuration was read from: what stat() says of it, and a regular file's
 * content and ACL (a SHA-1 of both) instead of its times, so that a file touched but not
 * changed is not read again. A folder keeps its times: they move when a file comes or goes.
 */
struct worker_fp_file {
	char *path;
	int err; /* errno of stat(), 0 if it worked */
	dev_t dev;
	ino_t ino;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	off_t size;
	struct timespec mtim, ctim; /* zero for a file whose sum is taken */
	unsigned char sum[SHA1_LEN];
};

/* The files a configuration was read from, as they were. */
struct worker_fp {
	struct worker_fp_file *f;
	size_t n;
};

/*
 * The SHA-1 of a regular file's content and its ACL (fd open on it, st its fstat); -1 when
 * it cannot be read whole (then its times stand for it).
 */
static int
worker_reload_fp_sum(int fd, const struct stat *st, unsigned char sum[SHA1_LEN])
{
	size_t size = (size_t)st->st_size, got = 0, acl = 4096;
	char *buf;
	ssize_t n;

	if (!S_ISREG(st->st_mode) || st->st_size > WORKER_FP_MAX_BYTES)
		return -1;
	buf = xmalloc(size + acl + 1);
	while (got <= size && (n = read(fd, buf + got, size + 1 - got)) > 0)
		got += (size_t)n;
	if (got != size) { /* it changed while read, or cannot be read: its times decide */
		free(buf);
		return -1;
	}
	n = fgetxattr(fd, "system.posix_acl_access", buf + got, acl);
	if (n > 0)
		got += (size_t)n;
	sha1(buf, got, sum);
	free(buf);
	return 0;
}

/* Add path to fp as it is now. */
static void
worker_reload_fp_add(struct worker_fp *fp, const char *path)
{
	struct worker_fp_file *f;
	struct stat st;
	int fd;

	fp->f = xreallocarray(fp->f, fp->n + 1, sizeof *fp->f);
	f = &fp->f[fp->n++];
	memset(f, 0, sizeof *f);
	f->path = xstrdup(path);
	/* O_NONBLOCK: a FIFO put in a file's place must not stop the loop */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1 || fstat(fd, &st) != 0) {
		f->err = errno != 0 ? errno : -1;
		if (fd != -1)
			close(fd);
		return;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->mode = st.st_mode;
	f->uid = st.st_uid;
	f->gid = st.st_gid;
	f->size = st.st_size;
	if (worker_reload_fp_sum(fd, &st, f->sum) != 0) {
		f->mtim = st.st_mtim;
		f->ctim = st.st_ctim;
	}
	close(fd);
}

/* Free a fingerprint. */
static void
worker_reload_fp_free(struct worker_fp *fp)
{
	size_t i;

	if (fp == NULL)
		return;
	for (i = 0; i < fp->n; i++)
		free(fp->f[i].path);
	free(fp->f);
	free(fp);
}

/*
 * The files cfg was read from, now; NULL when that cannot be known without reading them
 * (jobs is a glob: new folders may match).
 */
static struct worker_fp *
worker_reload_fp(const struct config *cfg)
{
	struct worker_fp *fp;
	char *copy, path[PATH_MAX];
	size_t i;

	if (strpbrk(cfg->jobs, "*?[") != NULL)
		return NULL;
	fp = xcalloc(1, sizeof *fp);
	worker_reload_fp_add(fp, cfg->file);
	if (cfg->auth_file != NULL)
		worker_reload_fp_add(fp, cfg->auth_file);
	worker_reload_fp_add(fp, "/etc/passwd"); /* user = NAME is looked up at each load */
	worker_reload_fp_add(fp, "/etc/group");
	if (cfg->jobs[0] == '/')
		snprintf(path, sizeof path, "%s", cfg->jobs);
	else
		snprintf(path, sizeof path, "%s/%s", cfg->dir, cfg->jobs);
	worker_reload_fp_add(fp, path); /* a folder: its mtime moves when a file comes or goes */
	for (i = 0; i < cfg->njob_files; i++) {
		worker_reload_fp_add(fp, cfg->job_files[i]);
		copy = xstrdup(cfg->job_files[i]);
		worker_reload_fp_add(fp, dirname(copy));
		free(copy);
	}
	return fp;
}

/* Whether two fingerprints are the same (NULL is never the same as anything). */
static int
worker_reload_fp_equal(const struct worker_fp *a, const struct worker_fp *b)
{
	const struct worker_fp_file *x, *y;
	size_t i;

	if (a == NULL || b == NULL || a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++) {
		x = &a->f[i];
		y = &b->f[i];
		if (strcmp(x->path, y->path) != 0 || x->err != y->err || x->dev != y->dev ||
		    x->ino != y->ino || x->mode != y->mode || x->uid != y->uid ||
		    x->gid != y->gid || x->size != y->size ||
		    memcmp(x->sum, y->sum, sizeof x->sum) != 0 ||
		    x->mtim.tv_sec != y->mtim.tv_sec || x->mtim.tv_nsec != y->mtim.tv_nsec ||
		    x->ctim.tv_sec != y->ctim.tv_sec || x->ctim.tv_nsec != y->ctim.tv_nsec)
			return 0;
	}
	return 1;
}

/* Schedule the next slice: at once (after what else is ready), or after a wait. */
static void
worker_reload_later(struct worker *w, int wait)
{
	struct timeval tv = {0, wait ? WORKER_RELOAD_WAIT_US : 0};

	evtimer_add(w->reload_ev, &tv);
}

/* The new configuration's copy of a running job, or NULL: it was removed. */
static struct config_job *
worker_reload_find(struct worker_reload *r, const char *name, size_t *index)
{
	json_t *i = json_object_get(r->index, name);

	if (i == NULL)
		return NULL;
	*index = (size_t)json_integer_value(i);
	return r->cfg->jobs_list[*index];
}

/* One running job: unchanged, it takes the new copy and nothing else; otherwise it stops. */
static void
worker_reload_old(struct worker_reload *r, struct worker_job *wj)
{
	struct config_job *cj;
	size_t i = 0;

	/* A copy already stopping (an earlier reload changed it) finishes, and is not present. */
	if (wj->done || job_stopping(wj->job))
		return;
	cj = worker_reload_find(r, job_name(wj->job), &i);
	if (cj != NULL && !worker_carries(r->cfg, cj, NULL, 0)) {
		log_info("reload: job %s no longer runs here (its constraint)", job_name(wj->job));
		job_stop(wj->job, 0);
		r->stopped++;
		return;
	}
	if (cj != NULL && config_job_equal(cj, job_config(wj->job))) {
		job_update(wj->job, cj);
		wj->cfg = r->cfg;
		r->kept[i] = 1;
		r->unchanged++;
		return;
	}
	log_info("reload: job %s %s", job_name(wj->job), cj == NULL ? "removed" : "changed");
	job_stop(wj->job, 0);
	if (cj != NULL)
		r->prev[i] = wj;
	r->stopped++;
}

/* One job of the new configuration: started unless a running job took it. */
static void
worker_reload_new(struct worker *w, struct worker_reload *r, size_t i)
{
	struct config_job *cj = r->cfg->jobs_list[i];
	struct worker_job *wj;

	if (r->kept[i] || !worker_carries(r->cfg, cj, NULL, 0))
		return;
	log_info("reload: job %s starts", cj->name);
	wj = worker_job_add(w, cj, r->cfg);
	r->started++;
	if (r->prev[i] != NULL && worker_job_hold(r->prev[i], wj))
		log_info("job %s: starts once its previous copy has stopped", cj->name);
	else if (w->state == WORKER_READY && worker_sv_ready(w))
		job_ready(wj->job);
}

/* Free the reload's state. */
static void
worker_reload_free(struct worker_reload *r)
{
	if (r->loader != NULL)
		config_loader_finish(r->loader, NULL, NULL); /* cut short: dropped */
	worker_reload_fp_free(r->fp);
	json_decref(r->index);
	free(r->kept);
	free(r->prev);
	free(r->old);
	free(r);
}

/*
 * The reload is over (or cut short by a stop): the new configuration is the worker's; the
 * old one is kept while jobs it describes still stop.
 */
static void
worker_reload_end(struct worker *w)
{
	struct worker_reload *r = w->reload;

	evtimer_del(w->reload_ev);
	worker_reload_swap(w, r);
	w->reload = NULL;
	event_active(w->reap, EV_TIMEOUT, 0); /* the old configuration may be unused already */
}

/* The new configuration becomes the worker's (once); the old one is retired. */
static void
worker_reload_swap(struct worker *w, struct worker_reload *r)
{
	struct worker_config *rc;

	if (r->swapped)
		return;
	r->swapped = 1;
	rc = xcalloc(1, sizeof *rc);
	rc->cfg = w->cfg;
	TAILQ_INSERT_TAIL(&w->retired, rc, entry);
	w->cfg = r->cfg;
}

/*
 * Every job applied: the end, a step per slice (the node's data alone is a few ms at 2,000
 * jobs): the configuration swapped, then the node rewritten, then the reload's state freed.
 */
static void
worker_reload_ending(struct worker *w, struct worker_reload *r, uint64_t start)
{
	switch (r->ending++) {
	case 1:
		worker_reload_swap(w, r);
		worker_log_excluded(w->cfg);
		worker_health_configure(w);
		break;
	case 2:
		worker_node_update(w);
		break;
	default:
		log_info("reloaded: %zu job(s) (%zu unchanged, %zu stopped, %zu started) in %llu "
		         "ms",
		         r->cfg->njobs, r->unchanged, r->stopped, r->started,
		         (unsigned long long)((clock_now_ns() - r->began_ns) / CLOCK_NS_PER_MS));
		worker_reload_end(w);
		/* Its own time, for the spacing of the next: a storm takes at most half the loop. */
		w->reload_ns = r->work_ns + (clock_now_ns() - start);
		worker_reload_free(r);
		worker_reload_done(w);
		return;
	}
	r->work_ns += clock_now_ns() - start;
	worker_reload_later(w, 0);
}

/* A slice of the reload: as many jobs as WORKER_RELOAD_SLICE_US allows. */
static void
worker_reload_slice_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	struct worker_reload *r = w->reload;
	uint64_t start = clock_now_ns(), limit = WORKER_RELOAD_SLICE_US * 1000ULL;
	unsigned n = 0;

	(void)fd;
	(void)what;
	if (r == NULL)
		return;
	if (r->loader != NULL) {
		worker_reload_read_slice(w, r);
		return;
	}
	if (r->ending > 0) {
		worker_reload_ending(w, r, start);
		return;
	}
	if (r->index == NULL) { /* read and accepted: applying begins */
		worker_reload_http(w, r->cfg->http_listen);
		worker_reload_begin(w, r, r->cfg);
		r->work_ns += clock_now_ns() - start;
		return;
	}
	for (;;) {
		if ((++n % 8 == 0 && clock_now_ns() - start > limit) ||
		    zk_pending_ops(w->zk) > WORKER_RELOAD_PENDING) {
			worker_reload_later(w, zk_pending_ops(w->zk) > WORKER_RELOAD_PENDING);
			r->work_ns += clock_now_ns() - start;
			return;
		}
		if (r->indexed < r->cfg->njobs) {
			json_object_set_new(r->index, r->cfg->jobs_list[r->indexed]->name,
			                    json_integer((json_int_t)r->indexed));
			r->indexed++;
		} else if (!r->starting && r->pos < r->nold)
			worker_reload_old(r, r->old[r->pos++]);
		else if (!r->starting) {
			r->starting = 1;
			r->pos = 0;
		} else if (r->pos < r->cfg->njobs)
			worker_reload_new(w, r, r->pos++);
		else
			break;
	}
	r->ending = 1; /* the end's steps from the next slice on */
	r->work_ns += clock_now_ns() - start;
	worker_reload_later(w, 0);
}

/* Begin applying cfg, a configuration that was read and accepted. */
static void
worker_reload_begin(struct worker *w, struct worker_reload *r, struct config *cfg)
{
	struct worker_job *wj;

	r->cfg = cfg;
	r->index = json_object(); /* filled in the slices, before any job is looked up */
	r->kept = xcalloc(cfg->njobs + 1, 1);
	r->prev = xcalloc(cfg->njobs + 1, sizeof *r->prev);
	TAILQ_FOREACH(wj, &w->jobs, entry)
		r->nold++;
	r->old = xcalloc(r->nold + 1, sizeof *r->old);
	r->nold = 0;
	TAILQ_FOREACH(wj, &w->jobs, entry)
		r->old[r->nold++] = wj;
	w->reload = r;
	worker_reload_later(w, 0);
}

/* The configuration read (l finished, and freed): a broken one changes nothing. NULL: refused. */
static struct config *
worker_reload_accept(struct worker *w, struct config_loader *l)
{
	struct config *cfg;
	struct config_errors errors = {NULL, 0};
	size_t i;

	if (config_loader_finish(l, &cfg, &errors) != 0) {
		for (i = 0; i < errors.n; i++)
			log_warnx("%s", errors.lines[i]);
		log_warnx("reload refused: %zu error(s); the running configuration stays",
		          errors.n);
		config_errors_free(&errors);
		return NULL;
	}
	config_errors_free(&errors);
	if (w->sv != NULL && svlink_containment(w->sv) >= 0 && worker_check_limits(w, cfg) != 0) {
		log_warnx("reload refused: with cgroups = required every limit must be enforced; "
		          "the running configuration stays");
		config_free(cfg);
		return NULL;
	}
	if (strcmp(cfg->hosts, w->cfg->hosts) != 0 || strcmp(cfg->root, w->cfg->root) != 0 ||
	    strcmp(cfg->node_id, w->cfg->node_id) != 0 ||
	    cfg->session_timeout_ms != w->cfg->session_timeout_ms ||
	    cfg->safety_margin_ms != w->cfg->safety_margin_ms ||
	    cfg->require_acl != w->cfg->require_acl ||
	    (cfg->auth == NULL) != (w->cfg->auth == NULL) ||
	    (cfg->auth != NULL && strcmp(cfg->auth, w->cfg->auth) != 0))
		log_warnx("reload: changes to [zookeeper], node_id or safety_margin take effect "
		          "only after a restart; job changes are applied now");
	return cfg;
}

/*
 * SIGHUP: a reload, started from the loop at the background priority (the files' hashes are
 * not taken in the signal's turn). One running, or one waiting to start (spaced after the
 * last), takes the SIGHUP: it reads the files as they are when it starts.
 */
void
worker_reload_request(struct worker *w)
{
	if (w->reload != NULL) {
		if (!w->reload_pending)
			log_debug("reload: one is running; another follows it");
		w->reload_pending = 1;
		return;
	}
	if (evtimer_pending(w->reload_next, NULL))
		return; /* one is due already: it reads the files as they are then */
	event_active(w->reload_next, EV_TIMEOUT, 1);
}

/*
 * The reload itself, between RELOADING=1 (with the CLOCK_MONOTONIC time it starts, after the
 * SIGHUP's, as Type=notify-reload wants) and READY=1, once systemd was told we are ready.
 */
static void
worker_reload(struct worker *w)
{
	char msg[128];
	struct worker_reload *r;
	struct worker_fp *fp;
	uint64_t began = clock_now_ns();

	if (w->notified_ready) {
		snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
		         (unsigned long long)sdnotify_monotonic_usec());
		worker_notify(msg);
	}
	fp = worker_reload_fp(w->cfg);
	if (worker_reload_fp_equal(fp, w->reload_fp)) {
		log_info("reload: no file of the configuration changed since it was read; nothing "
		         "to do");
		worker_reload_fp_free(fp);
		w->reload_ns = clock_now_ns() - began;
		worker_reload_done(w);
		return;
	}
	log_info("reloading %s", w->config_file);
	r = xcalloc(1, sizeof *r);
	r->began_ns = began;
	r->fp = fp; /* taken before the files are read: a change made meanwhile is read next */
	r->loader = config_loader_new(w->config_file, 0);
	r->work_ns = clock_now_ns() - began;
	w->reload = r;
	worker_reload_later(w, 0);
}

/*
 * A slice of the read: steps of the load (a file read, or a job's section resolved) for at
 * most WORKER_RELOAD_SLICE_US; once it is over, the configuration is refused or applied.
 */
static void
worker_reload_read_slice(struct worker *w, struct worker_reload *r)
{
	uint64_t start = clock_now_ns(), limit = WORKER_RELOAD_SLICE_US * 1000ULL;
	struct config_loader *l = r->loader;
	struct config *cfg;
	int over;

	while (!(over = config_loader_step(l)) && clock_now_ns() - start < limit)
		;
	r->work_ns += clock_now_ns() - start;
	if (!over) {
		worker_reload_later(w, 0);
		return;
	}
	r->loader = NULL;
	start = clock_now_ns();
	cfg = worker_reload_accept(w, l);
	if (cfg == NULL) {
		w->reload_ns = r->work_ns; /* its own time, for the spacing of the next */
		/* Refused: the next SIGHUP reads the files, whatever they are then. */
		worker_reload_fp_free(w->reload_fp);
		w->reload_fp = NULL;
		w->reload = NULL;
		worker_reload_free(r);
		worker_reload_done(w);
		return;
	}
	worker_reload_fp_free(w->reload_fp);
	w->reload_fp = r->fp;
	r->fp = NULL;
	log_debug("reload: read %zu job(s) in %llu ms of work over %llu ms", cfg->njobs,
	          (unsigned long long)(r->work_ns / CLOCK_NS_PER_MS),
	          (unsigned long long)((clock_now_ns() - r->began_ns) / CLOCK_NS_PER_MS));
	r->cfg = cfg; /* applied from the next slice on (worker_reload_begin) */
	r->work_ns += clock_now_ns() - start;
	worker_reload_later(w, 0);
}

/* A reload is over: READY=1, and the pending one, if any, from the loop. */
static void
worker_reload_done(struct worker *w)
{
	if (w->notified_ready)
		worker_notify_status(w, "READY=1");
	struct timeval tv;
	uint64_t wait_us = w->reload_ns / 1000;

	if (w->reload_pending && w->state != WORKER_STOPPING) {
		w->reload_pending = 0;
		/* As long as the last one's slices took: reloads take at most half the loop. */
		tv.tv_sec = (time_t)(wait_us / 1000000);
		tv.tv_usec = (suseconds_t)(wait_us % 1000000);
		evtimer_add(w->reload_next, &tv);
	}
}

/* The pending reload starts. */
static void
worker_reload_next_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;

	(void)fd;
	(void)what;
	if (w->state != WORKER_STOPPING && w->reload == NULL)
		worker_reload(w);
}

/* The worker stops: a reload in progress ends here, starting no job; none is pending. */
void
worker_reload_abort(struct worker *w)
{
	struct worker_reload *r = w->reload;

	w->reload_pending = 0;
	if (w->reload_next != NULL)
		evtimer_del(w->reload_next);
	if (r == NULL)
		return;
	log_info("reload: cut short by the stop");
	if (r->loader != NULL || r->index == NULL) {
		w->reload = NULL; /* not applied yet: the running configuration stays */
		evtimer_del(w->reload_ev);
		config_free(r->cfg);
		r->cfg = NULL;
	} else
		worker_reload_end(w);
	worker_reload_free(r);
}

/* The events of reloads. */
void
worker_reload_init(struct worker *w)
{
	w->reload_ev = evtimer_new(w->base, worker_reload_slice_cb, w);
	w->reload_next = evtimer_new(w->base, worker_reload_next_cb, w);
	event_priority_set(w->reload_ev, WORKER_PRIORITY_BACKGROUND);
	event_priority_set(w->reload_next, WORKER_PRIORITY_BACKGROUND);
}

/* Free them, and a reload's state. */
void
worker_reload_fini(struct worker *w)
{
	worker_reload_abort(w);
	event_free(w->reload_ev);
	event_free(w->reload_next);
	worker_reload_fp_free(w->reload_fp);
}

/*
 * [http] listen changed at a reload: listen on the new address, then close the old one;
 * an address that cannot be bound keeps the old listener, and says so.
 */
static void
worker_reload_http(struct worker *w, const char *listen)
{
	struct endpoints *h;

	if ((listen == NULL && w->http_listen == NULL) ||
	    (listen != NULL && w->http_listen != NULL && strcmp(listen, w->http_listen) == 0))
		return;
	if (listen == NULL) {
		log_info("reload: [http] listen is empty: the status page is off");
		endpoints_free(w->http);
		w->http = NULL;
	} else if ((h = endpoints_start(w->base, listen, w->http_cb, w, 0)) == NULL) {
		log_warnx("reload: [http] listen = %s cannot be served (see above): %s%s", listen,
		          w->http_listen != NULL ? "still listening on "
		                                 : "the status page stays off",
		          w->http_listen != NULL ? w->http_listen : "");
		return;
	} else {
		endpoints_free(w->http);
		w->http = h;
	}
	free(w->http_listen);
	w->http_listen = listen != NULL ? xstrdup(listen) : NULL;
}

/* Free the jobs that are done stopping; the others are freed at exit. */
void
worker_reload_free_jobs(struct worker *w, int all)
{
	worker_reload_free_done(w, all, SIZE_MAX);
}

/* Free at most n jobs (all: any, else those done stopping); how many of n are left. */
static size_t
worker_reload_free_done(struct worker *w, int all, size_t n)
{
	struct worker_job *wj, *next;

	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (n == 0)
			break;
		if (all || wj->done) {
			TAILQ_REMOVE(&w->jobs, wj, entry);
			job_free(wj->job);
			free(wj);
			n--;
		}
	}
	return n;
}

/* Whether any job still points into a retired configuration. */
static int
worker_reload_config_in_use(struct worker *w, const struct config *cfg)
{
	struct worker_job *wj;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (wj->cfg == cfg)
			return 1;
	}
	return 0;
}

/*
 * Free finished jobs, and the retired configurations no job uses any more: at most
 * WORKER_REAP_SLICE jobs (of either) and one configuration per turn of the loop, then again
 * from a timer.
 */
void
worker_reload_reap_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	struct worker_config *rc, *next;
	struct timeval now = {0, 0};
	size_t n;

	(void)fd;
	(void)what;
	if (w->reload != NULL || w->http_holds > 0)
		return; /* they walk the jobs: their ends reap */
	if ((n = worker_reload_free_done(w, 0, WORKER_REAP_SLICE)) == 0)
		goto later;
	TAILQ_FOREACH_SAFE(rc, &w->retired, entry, next) {
		if (rc->cfg != w->initial_cfg && !worker_reload_config_in_use(w, rc->cfg)) {
			if (!config_free_jobs(rc->cfg, n))
				goto later;
			TAILQ_REMOVE(&w->retired, rc, entry);
			config_free(rc->cfg);
			free(rc);
			goto later; /* one configuration per turn; the next looks for more */
		}
	}
	return;
later:
	event_add(w->reap, &now);
}
