/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * runjournal.c: the journal of open runs, <state_dir>/open-runs/<run id>, one small JSON file
 * per run this worker asked its supervisor to start and whose record has not landed in
 * ZooKeeper yet. Written before the start is sent, rewritten with the record when the run's
 * end is recorded, removed when the record lands (or cannot be written).
 *
 * A tick's claim has an entry of its own, +claim.<SHA-1 of node and job>.<pid>, from the claim's
 * request until the run's entry replaces it (or the claim is lost or the tick given back):
 * a claim that landed, whose process died before it heard or started the run, is given back
 * by the next process (worker-node.c), which knows from this entry that no run of it began.
 *
 * Why: a main process killed (SIGKILL, a crash) between a tick's claim and its record
 * leaves a tick that ZooKeeper says is claimed, that no record names, and whose run (if it
 * had started) its supervisor killed when main was gone: neither run nor recorded missed
 * (torture, finding 16). The worker's next process reads what is left here at its start and,
 * once registered (its predecessor's session is over, so no run of it is alive), records
 * each run that has no record yet (jobrec-settle.c): with the record the dead process sent,
 * if it got that far, else as killed when its main process died.
 *
 * A write that fails (a full disk) is warned of, once until one succeeds, and the run goes
 * on: the journal serves the records, never the runs. What a machine's crash loses is not
 * here either (no fsync): the page cache survives only the process.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "runjournal.h"
#include "sha1.h"
#include "xmalloc.h"
#include "znode.h"

struct runjournal {
	int dirfd;  /* -1: no journal (it could not be made) */
	int loaded; /* what an earlier process left is read (runjournal_load) */
	int chains; /* a chain claim's entry was written: a run's begin removes one */
	char *dir;
	char *node;
	struct runjournal_left *left;
	int nleft;
	struct log_limit lim;
};

#define RUNJOURNAL_CLAIM "+claim." /* a claim's entry: no run id starts with '+' */
#define RUNJOURNAL_CHAIN "+chain." /* a chained job's claim of a generation */

/* Whether name is a run id this worker could have made, or a claim's name. */
static int
runjournal_name_ok(const char *name)
{
	size_t i, n = strlen(name);

	if (strncmp(name, RUNJOURNAL_CLAIM, strlen(RUNJOURNAL_CLAIM)) == 0)
		name += strlen(RUNJOURNAL_CLAIM), n -= strlen(RUNJOURNAL_CLAIM);
	else if (strncmp(name, RUNJOURNAL_CHAIN, strlen(RUNJOURNAL_CHAIN)) == 0)
		name += strlen(RUNJOURNAL_CHAIN), n -= strlen(RUNJOURNAL_CHAIN);
	if (n == 0 || n > 200 || name[0] == '.')
		return 0;
	for (i = 0; i < n; i++) {
		if (strchr("._-", name[i]) == NULL && !(name[i] >= 'a' && name[i] <= 'z') &&
		    !(name[i] >= 'A' && name[i] <= 'Z') && !(name[i] >= '0' && name[i] <= '9'))
			return 0;
	}
	return 1;
}

/* Write o as the entry named run_id: a temporary file renamed over it, so that it is whole. */
static void
runjournal_write(struct runjournal *rj, const char *run_id, const json_t *o)
{
	char tmp[256], *text;
	size_t len, off = 0;
	ssize_t n;
	int fd;

	if (rj == NULL || rj->dirfd < 0 || !runjournal_name_ok(run_id))
		return;
	snprintf(tmp, sizeof tmp, ".%s.tmp", run_id);
	text = json_dumps(o, JSON_COMPACT);
	len = strlen(text);
	fd = openat(rj->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	while (fd >= 0 && off < len) {
		if ((n = write(fd, text + off, len - off)) < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	free(text);
	if (fd < 0 || off < len || close(fd) != 0 ||
	    renameat(rj->dirfd, tmp, rj->dirfd, run_id) != 0) {
		if (fd >= 0 && off < len)
			close(fd);
		log_warn_limited(&rj->lim,
		                 "cannot write %s/%s (the run goes on; if this process dies, "
		                 "its next start cannot record the run)",
		                 rj->dir, run_id);
		unlinkat(rj->dirfd, tmp, 0);
		return;
	}
	log_limit_flush(&rj->lim);
}

/* An integer member of o, or dflt. */
static int64_t
runjournal_int(const json_t *o, const char *key, int64_t dflt)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/*
 * A chained run's parents as its entry keeps them (untrusted), rebuilt for its record: at most
 * 16 (a job's parents), each a job, run id and outcome of bounded length; else NULL.
 */
static json_t *
runjournal_after(const json_t *after)
{
	const json_t *p;
	json_t *out;
	size_t i;

	if (!json_is_array(after) || json_array_size(after) == 0 || json_array_size(after) > 16)
		return NULL;
	out = json_array();
	json_array_foreach(after, i, p) {
		const json_t *job = json_object_get(p, "job"), *id = json_object_get(p, "run_id"),
		             *oc = json_object_get(p, "outcome");

		if (!json_is_string(job) || !json_is_string(id) || !json_is_string(oc) ||
		    json_string_length(job) > 256 || json_string_length(id) > 160 ||
		    json_string_length(oc) > 23) {
			json_decref(out);
			return NULL;
		}
		json_array_append_new(
		    out, json_pack("{s:O, s:O, s:O}", "job", job, "run_id", id, "outcome", oc));
	}
	return out;
}

/*
 * Read the entry name (untrusted: bounded, validated) into l: 0; 1 another node's (left to
 * it); -1 not an entry (dropped); -2 not readable now (left as it is).
 */
static int
runjournal_read(struct runjournal *rj, const char *name, struct runjournal_left *l)
{
	json_t *o, *job, *node, *rec, *after, *gen, *before;
	struct stat st;
	char *buf;
	ssize_t n;
	int fd, rc = -1, chain;

	if ((fd = openat(rj->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
		return errno == ELOOP ? -1 : -2;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > RUNJOURNAL_MAX_SIZE) {
		close(fd);
		return -1;
	}
	buf = xmalloc((size_t)st.st_size);
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	o = n == st.st_size ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
	free(buf);
	if (o == NULL)
		return -1;
	job = json_object_get(o, "job");
	node = json_object_get(o, "node");
	rec = json_object_get(o, "record");
	after = json_object_get(o, "after");
	gen = json_object_get(o, "gen");
	before = json_object_get(o, "before");
	chain = strncmp(name, RUNJOURNAL_CHAIN, strlen(RUNJOURNAL_CHAIN)) == 0;
	if (json_is_string(node) && strcmp(json_string_value(node), rj->node) != 0) {
		json_decref(o);
		return 1; /* another worker's, sharing the state directory: left to it */
	}
	if (!json_is_string(node)) {
		json_decref(o);
		return -1; /* nobody's: not an entry */
	}
	if (json_is_string(job) && json_string_length(job) > 0 &&
	    (rec == NULL || json_is_object(rec)) &&
	    (!chain || (json_is_array(gen) && json_is_string(before))) &&
	    (strncmp(name, RUNJOURNAL_CLAIM, strlen(RUNJOURNAL_CLAIM)) == 0 || chain ||
	     (json_is_string(json_object_get(o, "run_id")) &&
	      strcmp(json_string_value(json_object_get(o, "run_id")), name) == 0))) {
		l->rj = rj;
		l->claim = chain || strncmp(name, RUNJOURNAL_CLAIM, strlen(RUNJOURNAL_CLAIM)) == 0;
		l->chain = chain;
		l->claimed = chain ? json_pack("{s:O, s:O}", "gen", gen, "before", before) : NULL;
		l->run_id = xstrdup(name);
		l->job = xstrdup(json_string_value(job));
		l->tick = runjournal_int(o, "tick", -1);
		l->fence = runjournal_int(o, "fence", -1);
		l->asked_ms = (uint64_t)runjournal_int(o, "asked_ms", 0);
		l->record = rec != NULL ? json_incref(rec) : NULL;
		l->after = runjournal_after(after);
		rc = 0;
	}
	json_decref(o);
	return rc;
}

/*
 * Open (making it) the journal of node's runs under state_dir, and read what an earlier
 * process left in it. Without a journal (it cannot be made) runs go on, unjournaled.
 */
struct runjournal *
runjournal_open(const char *state_dir, const char *node)
{
	struct runjournal *rj = xcalloc(1, sizeof *rj);

	rj->dir = znode_join(state_dir, RUNJOURNAL_DIR);
	rj->node = xstrdup(node);
	rj->lim.burst = 1;
	if (mkdir(rj->dir, 0700) != 0 && errno != EEXIST)
		log_warn("cannot make %s", rj->dir);
	rj->dirfd = open(rj->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rj->dirfd < 0) {
		log_warn("cannot open %s: a run this process leaves unrecorded if it dies will not "
		         "be recorded by its next start",
		         rj->dir);
		return rj;
	}
	return rj;
}

/*
 * Read what an earlier process of this node left in the journal, once: when it is known
 * dead (its pid gone from this host, or its session over: we are registered), not at our
 * start, when it may still be alive and changing the journal (a duplicate started by
 * mistake waits to register).
 */
void
runjournal_load(struct runjournal *rj)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (rj == NULL || rj->loaded || rj->dirfd < 0)
		return;
	rj->loaded = 1;
	if ((fd = dup(rj->dirfd)) < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rj->left = xcalloc(RUNJOURNAL_MAX_LEFT, sizeof *rj->left);
	while ((de = readdir(d)) != NULL && rj->nleft < RUNJOURNAL_MAX_LEFT) {
		int rc;

		if (de->d_name[0] == '.') {
			if (strstr(de->d_name, ".tmp") != NULL)
				unlinkat(rj->dirfd, de->d_name, 0); /* a write cut short */
			continue;
		}
		if (!runjournal_name_ok(de->d_name) ||
		    (rc = runjournal_read(rj, de->d_name, &rj->left[rj->nleft])) == -1) {
			log_warnx("%s/%s is not an entry of this worker's journal: removed",
			          rj->dir, de->d_name);
			unlinkat(rj->dirfd, de->d_name, 0);
			continue;
		}
		if (rc == 0)
			rj->nleft++;
	}
	closedir(d);
	if (rj->nleft > 0)
		log_info("%d claim(s) and run(s) of this worker's previous process have no record "
		         "yet: settling them",
		         rj->nleft);
}

/* Free the journal (the files stay). */
void
runjournal_free(struct runjournal *rj)
{
	int i;

	if (rj == NULL)
		return;
	for (i = 0; i < rj->nleft; i++) {
		free(rj->left[i].run_id);
		free(rj->left[i].job);
		if (rj->left[i].record != NULL)
			json_decref(rj->left[i].record);
		if (rj->left[i].after != NULL)
			json_decref(rj->left[i].after);
		if (rj->left[i].claimed != NULL)
			json_decref(rj->left[i].claimed);
	}
	free(rj->left);
	if (rj->dirfd >= 0)
		close(rj->dirfd);
	free(rj->dir);
	free(rj->node);
	free(rj);
}

/*
 * The name of node's claim entry for job in this process: a SHA-1 of both (a job's name may
 * hold any character but '/'; another node may share the state directory), and our pid.
 */
static void
runjournal_claim_name(const char *prefix, const char *node, const char *job, char *out, size_t size)
{
	unsigned char d[SHA1_LEN];
	size_t i, n;
	char *both;

	xasprintf(&both, "%s\n%s", node, job);
	sha1(both, strlen(both), d);
	free(both);
	n = (size_t)snprintf(out, size, "%s", prefix);
	for (i = 0; i < SHA1_LEN && n + 2 < size; i++, n += 2)
		snprintf(out + n, size - n, "%02x", d[i]);
	/* This process's: a predecessor's entry for the job, being settled, is another file. */
	snprintf(out + n, size - n, ".%ld", (long)getpid());
}

/* job claims tick: until its run begins (or the claim ends here), its entry says so. */
void
runjournal_claim(struct runjournal *rj, const char *job, int64_t tick)
{
	char name[96];
	json_t *o;

	if (rj == NULL || rj->dirfd < 0)
		return;
	runjournal_claim_name(RUNJOURNAL_CLAIM, rj->node, job, name, sizeof name);
	o = json_pack("{s:s, s:s, s:I}", "node", rj->node, "job", job, "tick", (json_int_t)tick);
	runjournal_write(rj, name, o);
	json_decref(o);
}

/* The claim entry (prefix: a tick's or a chain's) of job in this process goes. */
static void
runjournal_unclaim_as(struct runjournal *rj, const char *prefix, const char *job)
{
	char name[96];

	if (rj == NULL)
		return;
	runjournal_claim_name(prefix, rj->node, job, name, sizeof name);
	runjournal_end(rj, name);
}

/* job's claim ended here: its run began, the tick was taken by others or given back. */
void
runjournal_unclaim(struct runjournal *rj, const char *job)
{
	runjournal_unclaim_as(rj, RUNJOURNAL_CLAIM, job);
}

/*
 * A chained job claims a generation (gen: its parents' runs as job_chain_disown reads them
 * back; before: the chain state before the claim, which a give-back writes again; tick: the
 * generation's time, as its run's entry has it): until its run begins, or the claim ends
 * here, its entry says so. gen is taken.
 */
void
runjournal_chain_claim(struct runjournal *rj, const char *job, int64_t tick, json_t *gen,
                       const char *before)
{
	char name[96];
	json_t *o;

	if (rj == NULL || rj->dirfd < 0) {
		json_decref(gen);
		return;
	}
	runjournal_claim_name(RUNJOURNAL_CHAIN, rj->node, job, name, sizeof name);
	rj->chains = 1;
	o = json_pack("{s:s, s:s, s:I, s:o, s:s}", "node", rj->node, "job", job, "tick",
	              (json_int_t)tick, "gen", gen, "before", before);
	runjournal_write(rj, name, o);
	json_decref(o);
}

/* job's chain claim ended here: its run began, it was taken by others or given back. */
void
runjournal_chain_unclaim(struct runjournal *rj, const char *job)
{
	runjournal_unclaim_as(rj, RUNJOURNAL_CHAIN, job);
}

/*
 * The run run_id of job (its tick, or -1; its fence; after: a chained run's parent runs, as
 * its record says them, or NULL) is about to be started.
 */
void
runjournal_begin(struct runjournal *rj, const char *job, const char *run_id, int64_t tick,
                 int64_t fence, const json_t *after)
{
	json_t *o;

	if (rj == NULL)
		return;
	o = json_pack("{s:s, s:s, s:s, s:I, s:I}", "node", rj->node, "job", job, "run_id", run_id,
	              "fence", (json_int_t)fence, "asked_ms", (json_int_t)clock_wall_ms());
	if (tick >= 0)
		json_object_set_new(o, "tick", json_integer(tick));
	if (after != NULL)
		json_object_set_new(o, "after", json_deep_copy(after));
	runjournal_write(rj, run_id, o);
	json_decref(o);
	runjournal_unclaim(rj, job); /* the run's entry answers for the tick now */
	if (rj->chains)              /* no unlink per run where no job is chained */
		runjournal_chain_unclaim(rj, job);
}

/* The run's record is being written: keep it, so that a next process can write it. */
void
runjournal_record(struct runjournal *rj, const char *job, const char *run_id, const json_t *record)
{
	json_t *o;

	if (rj == NULL || rj->dirfd < 0)
		return;
	o = json_pack("{s:s, s:s, s:s, s:O}", "node", rj->node, "job", job, "run_id", run_id,
	              "record", record);
	if (json_is_integer(json_object_get(record, "tick")))
		json_object_set(o, "tick", json_object_get(record, "tick"));
	runjournal_write(rj, run_id, o);
	json_decref(o);
}

/* The run's record landed, or cannot be written: nothing is left to do for it. */
void
runjournal_end(struct runjournal *rj, const char *run_id)
{
	if (rj == NULL || rj->dirfd < 0 || !runjournal_name_ok(run_id))
		return;
	if (unlinkat(rj->dirfd, run_id, 0) != 0 && errno != ENOENT)
		log_warn("cannot remove %s/%s", rj->dir, run_id);
}

/* The i-th of them; its run_id NULL once settled. */
struct runjournal_left *
runjournal_left(struct runjournal *rj, int i)
{
	return i >= 0 && i < rj->nleft ? &rj->left[i] : NULL;
}

/* One of them is recorded (or given up): its file goes. */
void
runjournal_settled(struct runjournal *rj, struct runjournal_left *l)
{
	runjournal_end(rj, l->run_id);
	free(l->run_id);
	free(l->job);
	if (l->record != NULL)
		json_decref(l->record);
	if (l->after != NULL)
		json_decref(l->after);
	if (l->claimed != NULL)
		json_decref(l->claimed);
	memset(l, 0, sizeof *l);
	l->rj = rj;
}
