/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobhook.c: a job's hooks (on_success, on_failure, on_missed): run through the supervisor,
 * one at a time per job, after a record this worker made, as its outcome asks (jobfsm_hook).
 *
 * With credentials a hook also gets a one-run token (LEASEKEEPER_HOOK_TOKEN, a digest
 * credential lkhook:RANDOM): before it starts we create an ephemeral copy of its run record,
 * <root>/jobs/<job>/hooks/run-N, whose ACL gives that credential READ and nothing else; we
 * delete it when the hook ends (or with our session). So the token reads that one record,
 * output included, while the hook runs, and nothing else ever.
 */

#include <sys/random.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "jobpriv.h"
#include "jobrec.h"
#include "runjournal.h"
#include "layout.h"
#include "sha1.h"
#include "svlink.h"
#include "xmalloc.h"
#include "znode.h"

/* Free a hook's spec and token. */
void
job_hook_free(struct job_hook *h)
{
	proto_spec_free(&h->spec);
	free(h->node);
	free(h->data);
	free(h->token);
	h->node = h->data = h->token = NULL;
}

/* Start the hook taken from the queue (its token's node made, or not). */
static void
job_hook_launch(struct job *job)
{
	struct proto_spec spec = job->hook.spec;

	job->hook.spec = (struct proto_spec){NULL, 0};
	job->hook_start_ns = clock_now_ns();
	job->hook_run = job->cb->next_run(job->cb_arg);
	/* A refusal comes back at once (job_start_failed), and starts the next. */
	svlink_job_start(job_supervisor(job), job->hook_run, zk_epoch(job->zk), &spec);
	proto_spec_free(&spec);
}

/* The token's node is made (or not: the hook runs anyway, its token reads nothing). */
static void
job_hook_made_cb(const struct zk_reply *reply, void *arg)
{
	struct job *job = arg;

	if (reply->rc != ZOK)
		log_warnx_limited(&job->lim_hook,
		                  "job %s: its %s's token reads nothing: creating %s: %s",
		                  job->name, job->hook_key, reply->path, zerror(reply->rc));
	if (job->hook_busy && job->hook_run == 0)
		job_hook_launch(job);
}

/* Start the first hook waiting, if any: one hook of a job at a time, in order. */
static void
job_hook_next(struct job *job)
{
	struct ACL entries[2] = {{ZOO_PERM_ALL, {(char *)"auth", (char *)""}}};
	struct ACL_vector acl = {2, entries};
	char parent[1024];

	job->hook_busy = job->nhookq > 0;
	if (job->nhookq == 0)
		return;
	job->hook = job->hookq[0];
	job->hook_key = job->hook.key;
	memmove(&job->hookq[0], &job->hookq[1], (size_t)(job->nhookq - 1) * sizeof job->hookq[0]);
	job->nhookq--;
	if (job->hook.node == NULL || job->zk == NULL) {
		job_hook_launch(job);
		return;
	}
	entries[1] = (struct ACL){ZOO_PERM_READ, {(char *)"digest", job->hook.token}};
	if (znode_parent(job->hook.node, parent, sizeof parent) == 0)
		zk_create_node(job->zk, parent, NULL, -1, ZOO_PERSISTENT, NULL, NULL);
	zk_create_node_acl(job->zk, job->hook.node, job->hook.data, (int)strlen(job->hook.data),
	                   ZOO_EPHEMERAL, &acl, job_hook_made_cb, job);
}

/*
 * With credentials: a one-run token for a hook of the record at created, in facts
 * (LEASEKEEPER_HOOK_TOKEN, LEASEKEEPER_HOOK_NODE, LEASEKEEPER_ZK); h gets the node to
 * make and the token's digest id. Returns the facts added.
 */
static size_t
job_hook_token(struct job *job, json_t *rec, const char *created, struct job_hook *h, char **facts)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const struct config *cfg = job_main_config(job);
	unsigned char raw[24];
	char cred[64], *dir;
	size_t i, n = 0;

	if (cfg == NULL || cfg->auth == NULL || created == NULL ||
	    getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return 0;
	memcpy(cred, "lkhook:", 7);
	for (i = 0; i < sizeof raw; i += 3, n += 4) { /* base64url: 3 bytes, 4 characters */
		cred[7 + n] = b64[raw[i] >> 2];
		cred[8 + n] = b64[((raw[i] & 3) << 4) | (raw[i + 1] >> 4)];
		cred[9 + n] = b64[((raw[i + 1] & 15) << 2) | (raw[i + 2] >> 6)];
		cred[10 + n] = b64[raw[i + 2] & 63];
	}
	n = 0;
	cred[39] = '\0';
	h->token = sha1_zk_digest_id(cred);
	dir = layout_job_hooks(cfg->root, job->name);
	h->node = znode_join(dir, znode_basename(created));
	free(dir);
	h->data = json_dumps(rec, JSON_COMPACT);
	xasprintf(&facts[n++], "LEASEKEEPER_HOOK_TOKEN=%s", cred);
	xasprintf(&facts[n++], "LEASEKEEPER_HOOK_NODE=%s", h->node);
	xasprintf(&facts[n++], "LEASEKEEPER_ZK=%s", cfg->hosts);
	explicit_bzero(cred, sizeof cred);
	explicit_bzero(raw, sizeof raw);
	return n;
}

/*
 * A record this worker made is written (or will not be): run the hook its outcome asks
 * for, through the supervisor as a run outside any lease, as the job's user, with the
 * record's facts in LEASEKEEPER_* and the run record's number once it has one. One hook
 * of a job at a time: others wait their turn, up to JOB_MAX_HOOKS_QUEUED (more are dropped
 * and counted).
 */
void
job_recorded_cb(struct jobrec *jr, json_t *rec, const char *created, void *arg)
{
	struct job *job = arg;
	const struct config_job *cj = job->cfg;
	const char *outcome = json_string_value(json_object_get(rec, "outcome")), *cmd, *key;
	char *argv[4], *facts[16];
	struct job_hook h = {NULL, {NULL, 0}, NULL, NULL, NULL};
	struct proto_spec spec = {NULL, 0};
	struct runspec rs;
	json_t *v;
	int64_t seq;
	size_t n = 0, i;

	(void)jr;
	if (json_is_string(v = json_object_get(rec, "run_id"))) /* landed, or never will */
		runjournal_end(job->cb->journal(job->cb_arg), json_string_value(v));
	/*
	 * By the outcome, not the reason: a run-now's reason is "manual" whatever its end, and a
	 * paused tick is no failure. A stopped run and a paused tick run no hook.
	 */
	switch (jobfsm_hook(outcome)) {
	case JOBFSM_HOOK_NONE:
		return;
	case JOBFSM_HOOK_SUCCESS:
		key = "on_success", cmd = cj->hooks.on_success;
		break;
	case JOBFSM_HOOK_MISSED:
		key = "on_missed", cmd = cj->hooks.on_missed;
		break;
	default: /* failed, timeout, oom, killed, start_failed */
		key = "on_failure", cmd = cj->hooks.on_failure;
		break;
	}
	if (cmd == NULL)
		return;
	if (job->hook_busy && job->nhookq == JOB_MAX_HOOKS_QUEUED) {
		job->hook_failures++;
		log_warnx_limited(&job->lim_hook,
		                  "job %s: %s not run: %d hooks of the job are waiting already",
		                  job->name, key, JOB_MAX_HOOKS_QUEUED);
		return;
	}
	xasprintf(&facts[n++], "LEASEKEEPER_HOOK=%s", key);
	xasprintf(&facts[n++], "LEASEKEEPER_OUTCOME=%s", outcome);
	if (json_is_integer(v = json_object_get(rec, "status")))
		xasprintf(&facts[n++], "LEASEKEEPER_EXIT_STATUS=%lld",
		          (long long)json_integer_value(v));
	if (json_is_integer(v = json_object_get(rec, "signal")))
		xasprintf(&facts[n++], "LEASEKEEPER_SIGNAL=%lld", (long long)json_integer_value(v));
	if (json_is_integer(v = json_object_get(rec, "duration_ms")))
		xasprintf(&facts[n++], "LEASEKEEPER_DURATION_MS=%lld",
		          (long long)json_integer_value(v));
	if (json_is_integer(v = json_object_get(rec, "fence")))
		xasprintf(&facts[n++], "LEASEKEEPER_FENCE=%lld", (long long)json_integer_value(v));
	/* The run's one id, as its log lines and record have it; the record's name apart. */
	if (json_is_string(v = json_object_get(rec, "run_id")))
		xasprintf(&facts[n++], "LEASEKEEPER_RUN_ID=%s", json_string_value(v));
	if (created != NULL && znode_sequence(znode_basename(created), "run-", &seq) == 0)
		xasprintf(&facts[n++], "LEASEKEEPER_RUN_RECORD=%lld", (long long)seq);
	xasprintf(&facts[n++], "LEASEKEEPER_LOG=%s", cj->log_file);
	n += job_hook_token(job, rec, created, &h, facts + n);
	facts[n] = NULL;
	argv[0] = (char *)"/bin/sh";
	argv[1] = (char *)"-c";
	argv[2] = (char *)cmd;
	argv[3] = NULL;
	v = json_object_get(rec, "tick");
	rs = job_runspec(job, argv);
	rs.tick = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
	rs.hook_ms = cj->hooks.timeout_ms;
	rs.facts = facts;
	runspec_build(&rs, &spec);
	for (i = 0; i < n; i++) {
		explicit_bzero(facts[i], strlen(facts[i])); /* the token: never left in memory */
		free(facts[i]);
	}
	log_info("job %s: %s its %s (%s %s)", job->name, job->hook_busy ? "queueing" : "running",
	         key, outcome, created != NULL ? znode_basename(created) : "not recorded");
	h.key = key;
	h.spec = spec;
	job->hookq[job->nhookq++] = h;
	if (!job->hook_busy)
		job_hook_next(job);
}

/* A hook ended (or could not start): logged, and counted when it failed. */
void
job_hook_end(struct job *job, int failed, const char *how)
{
	uint64_t ms = (clock_now_ns() - job->hook_start_ns) / CLOCK_NS_PER_MS;

	job->hook_run = 0;
	if (job->hook.node != NULL) /* the token reads nothing from now on */
		zk_delete_guaranteed(job->zk, job->hook.node); /* retried past a reconnect */
	job_hook_free(&job->hook);
	if (failed) {
		job->hook_failures++;
		log_warnx_limited(&job->lim_hook,
		                  "job %s: its %s failed after %llu ms: %s (not "
		                  "retried)",
		                  job->name, job->hook_key, (unsigned long long)ms, how);
	} else
		log_info("job %s: its %s ended after %llu ms", job->name, job->hook_key,
		         (unsigned long long)ms);
	job_hook_next(job);
}
