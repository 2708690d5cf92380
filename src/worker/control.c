/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * control.c: whether this worker honours control records (run requests, pauses, drains).
 *
 * A control record changes what runs where, so a worker honours them only when nobody but
 * the holders of the cluster's credentials can write them: it has credentials and the
 * start-up ACL check found every folder closed (aclcheck.c), or the operator said
 * `[worker] allow_open_control = true`. Decided once per process, before any job contends
 * (the ACL check runs once). A record ignored is logged once (per job and node, within a
 * bounded memory) and counted, for /metrics; so is a run request a worker refused.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "log.h"
#include "utf8.h"
#include "xmalloc.h"

#define CONTROL_SEEN    64  /* ignored records remembered, so each is logged once */
#define CONTROL_REFUSED 256 /* refused requests remembered, so each is logged once */

static const char *control_kind_names[CONTROL_NKINDS] = {"run_request", "pause", "drain", "stop"};

static struct {
	int decided;
	int honoured;
	const char *why; /* why not, when not */
	uint64_t ignored[CONTROL_NKINDS];
	uint64_t refused;
	uint32_t seen[CONTROL_SEEN]; /* hashes of (kind, job, node) logged already */
	size_t nseen;
	uint32_t refused_seen[CONTROL_REFUSED]; /* ... of (job, node) refused */
	size_t nrefused_seen;
} control;

/* Whether h is in set (of n entries so far, size max); if not, it is added. */
static int
control_seen(uint32_t *set, size_t *n, size_t max, uint32_t h)
{
	size_t i;

	for (i = 0; i < *n && i < max; i++) {
		if (set[i] == h)
			return 1;
	}
	set[(*n)++ % max] = h;
	return 0;
}

/* The name of a kind, for logs and the metric's label. */
const char *
control_kind_name(enum control_kind kind)
{
	return control_kind_names[kind];
}

/* Decide (once) whether control records are honoured; acl_closed: the ACL check said so. */
void
control_decide(const struct config *cfg, int acl_closed)
{
	if (control.decided)
		return;
	control.decided = 1;
	if (cfg->allow_open_control) {
		control.honoured = 1;
		if (cfg->auth == NULL || !acl_closed)
			log_warnx("[worker] allow_open_control = true: run requests, pauses and "
			          "drains are honoured although %s: any client of the ensemble can "
			          "run this worker's jobs (see docs/security.md)",
			          cfg->auth == NULL ? "there are no credentials"
			                            : "others may write under the root");
		return;
	}
	control.honoured = cfg->auth != NULL && acl_closed;
	if (cfg->auth == NULL)
		control.why =
		    "no [zookeeper] auth_file: any client of the ensemble could write them";
	else if (!acl_closed)
		control.why = "the ACL check found folders others may write (above)";
	if (!control.honoured)
		log_warnx(
		    "ignoring run requests, pauses and drains: %s; give the workers "
		    "credentials (leasekeeper init-auth) or set [worker] allow_open_control = "
		    "true (see docs/security.md)",
		    control.why);
}

/* Whether control records are honoured (0 until decided). */
int
control_honoured(void)
{
	return control.honoured;
}

/* FNV-1a over the parts, for the set of records logged already. */
static uint32_t
control_hash(enum control_kind kind, const char *job, const char *node)
{
	uint32_t h = 2166136261u ^ (uint32_t)kind;
	const char *parts[2] = {job != NULL ? job : "", node != NULL ? node : ""};
	const unsigned char *p;
	int i;

	for (i = 0; i < 2; i++) {
		for (p = (const unsigned char *)parts[i]; *p != '\0'; p++)
			h = (h ^ *p) * 16777619u;
		h = (h ^ 0xff) * 16777619u;
	}
	return h;
}

/*
 * Whether a control record of kind (job's, node named; either may be NULL) may be acted on;
 * if not, it is logged and counted the first time it is seen.
 */
int
control_allow(enum control_kind kind, const char *job, const char *node)
{
	char *qjob, *qnode;

	if (control.honoured)
		return 1;
	if (control_seen(control.seen, &control.nseen, CONTROL_SEEN, control_hash(kind, job, node)))
		return 0;
	control.ignored[kind]++;
	qjob = utf8_quote_str(job != NULL ? job : "");
	qnode = utf8_quote_str(node != NULL ? node : "");
	log_warnx("ignoring a %s (job %s, node %s): %s", control_kind_names[kind], qjob, qnode,
	          control.why != NULL ? control.why : "control is not decided yet");
	free(qjob);
	free(qnode);
	return 0;
}

/* Control records of kind ignored since start. */
uint64_t
control_ignored_total(enum control_kind kind)
{
	return control.ignored[kind];
}

/*
 * A run request refused (invalid, over a limit): log it, its names quoted, and count it,
 * once (a listing may read it again before its delete lands).
 */
void
control_refused(const char *job, const char *node, const char *why)
{
	char *qjob, *qnode;

	if (control_seen(control.refused_seen, &control.nrefused_seen, CONTROL_REFUSED,
	                 control_hash(CONTROL_NKINDS, job, node)))
		return;
	qjob = utf8_quote_str(job);
	qnode = utf8_quote_str(node);
	control.refused++;
	log_warnx("job %s: refusing run-now request %s: %s", qjob, qnode, why);
	free(qjob);
	free(qnode);
}

/* Run requests refused since start. */
uint64_t
control_refused_total(void)
{
	return control.refused;
}
