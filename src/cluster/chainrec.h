/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/* chainrec.h: chained jobs' records: a parent's run as a child reads it, the chain claim. */
#ifndef CHAINREC_H
#define CHAINREC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define CHAINREC_MAX_SIZE    65536 /* bytes of a chain state or a run record parsed */
#define CHAINREC_MAX_PARENTS 16    /* parents of one job (config-after.c's limit) */
#define CHAINREC_MAX_ID      160   /* bytes of a run id kept (job_run_name's are shorter) */
#define CHAINREC_MAX_JOB     256   /* bytes of a parent's name kept */

/* What a child needs of a parent's run record (bounded, validated). */
struct chainrec_run {
	int64_t seq;                      /* of its node, run-<seq> */
	int64_t ctime_ms;                 /* when it was recorded, by the servers' clock */
	int ok;                           /* outcome "ok" */
	char outcome[24];                 /* [a-z_] only */
	char run_id[CHAINREC_MAX_ID + 1]; /* printable ASCII only */
};

/* One generation of a child: the parents' runs one chained run answers. */
struct chainrec_gen {
	int n;
	struct {
		const char *job;
		struct chainrec_run run;
	} p[CHAINREC_MAX_PARENTS];
};

enum chainrec_verdict {
	CHAINREC_TAKEN, /* some parent's run is handled already (run, missed or paused) */
	CHAINREC_CLAIM, /* ours: the state now holds the claim, to be written */
	CHAINREC_OURS,  /* claimed already by node with this generation (an earlier write) */
};

int chainrec_parse_run(const char *data, size_t len, int64_t seq, int64_t ctime_ms,
                       struct chainrec_run *);
json_t *chainrec_parse_state(const char *data, size_t len);
int64_t chainrec_done(const json_t *state, const char *parent);
int chainrec_handled_id(const json_t *state, const char *parent, const char *run_id);
enum chainrec_verdict chainrec_claim(json_t *state, const struct chainrec_gen *, const char *node,
                                     const char *how);
char *chainrec_dump(const json_t *state);
char *chainrec_ids(const struct chainrec_gen *);
json_t *chainrec_gen_json(const struct chainrec_gen *);

#endif
