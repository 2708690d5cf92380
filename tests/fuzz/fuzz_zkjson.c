/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_zkjson.c: the JSON read back from ZooKeeper, which anyone with write access can forge.
 * The first byte chooses the reader: 0 the job record (its lease count, its locks, its pause), a
 * worker's drain node and a run-now request (ctlrec_request, the exit status it maps to, and
 * ctlrec_request_invalid, which a worker asks before acting) and the format version of any
 * node (format_of_data), 1 the tick state and the claim computed
 * on it (run with -timeout: a slow claim is a hang of every worker), a parent's run record
 * and a chained job's chain state with a claim on it (chainrec.c), 2 run records and worker
 * nodes as status reads them (nodedata_merge: no integer beyond 2^53 comes out), as the
 * worker logs them (nodedata_describe) and as the ranking of ticks reads them
 * (rank_parse_member).
 */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "chainrec.h"
#include "ctlrec.h"
#include "format.h"
#include "jobrec.h"
#include "leasekeeper.h"
#include "nodedata.h"
#include "param.h"
#include "paramrec.h"
#include "rank.h"
#include "schedule.h"
#include "stoprec.h"
#include "tickstate.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What status prints holds no integer beyond 2^53 (nodedata_merge made them strings). */
static void
fuzz_safe(json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_integer(v) && (json_integer_value(v) > NODEDATA_MAX_SAFE ||
	                           json_integer_value(v) < -NODEDATA_MAX_SAFE))
		abort();
	if (json_is_object(v)) {
		json_object_foreach(v, key, item)
			fuzz_safe(item);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			fuzz_safe(item);
	}
}

/* A worker node's clock offset, as status reads it: within its bounds, or none. */
static void
fuzz_clock(const json_t *o)
{
	int64_t off, err;

	if (nodedata_clock_offset(o, &off, &err) == 0 &&
	    (off > NODEDATA_CLOCK_MAX_MS || off < -NODEDATA_CLOCK_MAX_MS || err < 0 ||
	     err > NODEDATA_CLOCK_MAX_MS))
		abort();
}

/* The schedules claims are computed with: frequent, sparse, and an interval. */
static struct schedule *fuzz_sched[3];

/* Parse the schedules once. */
static void
fuzz_init(void)
{
	const char *specs[] = {"* * * * *", "0 3 * * 1", "@every 1s"};
	char *cause = NULL;
	size_t i;

	for (i = 0; i < 3; i++) {
		if (fuzz_sched[i] == NULL &&
		    schedule_parse(specs[i], "UTC", &fuzz_sched[i], &cause) != 0)
			abort();
	}
}

/* Claims of a few ticks around the state's own, for each schedule. */
static void
fuzz_tickstate(const char *s, size_t n)
{
	const int64_t now = 1800000000;
	const int64_t ticks[] = {now, now - 60, now + 3600 * 24 * 365};
	struct tickstate st, again;
	struct tickstate_claim c;
	json_t *skipped;
	char *out;
	size_t i, k;

	for (k = 0; k < 3; k++) {
		for (i = 0; i < sizeof ticks / sizeof ticks[0]; i++) {
			tickstate_parse(s, n, &st);
			/* A newer format is never claimed on: it reads as empty. */
			if (!format_readable(st.format) &&
			    (st.tick != -1 ||
			     json_array_size(json_object_get(st.o, "runners")) != 0))
				abort();
			c = (struct tickstate_claim){ticks[i],      1 + (int)(i % 2), "fuzz",
			                             fuzz_sched[k], (int)(k * 40),    now};
			if (tickstate_claim(&st, &c, &skipped) == TICKSTATE_CLAIM) {
				if (json_array_size(skipped) > TICKSTATE_MAX_SKIPPED)
					abort();
				/* What we write must read back clean, and small, in our format. */
				out = tickstate_dump(&st);
				tickstate_parse(out, strlen(out), &again);
				if (again.flags != 0 || again.tick != ticks[i] ||
				    again.format != FORMAT_VERSION)
					abort();
				tickstate_free(&again);
				free(out);
			}
			if (skipped != NULL)
				json_decref(skipped);
			/* A tick given back is never claimed again by who gave it; it reads back clean. */
			if (tickstate_hand_back(&st, ticks[i], "fuzz", (int)(k % 2)) != 0) {
				if (tickstate_claim(&st, &c, &skipped) != TICKSTATE_TAKEN)
					abort();
				if (skipped != NULL)
					json_decref(skipped);
				out = tickstate_dump(&st);
				tickstate_parse(out, strlen(out), &again);
				if (again.flags != 0 || again.tick != ticks[i])
					abort();
				tickstate_free(&again);
				free(out);
			}
			/* A claim let go and given back leaves no runner of ours; it reads back clean. */
			if (tickstate_give_back(&st, ticks[i], "fuzz") != 0) {
				out = tickstate_dump(&st);
				tickstate_parse(out, strlen(out), &again);
				if (again.flags != 0 || again.tick != ticks[i] ||
				    tickstate_give_back(&again, ticks[i], "fuzz") != 0)
					abort();
				tickstate_free(&again);
				free(out);
			}
			tickstate_mark_missed(&st, ticks[i] - 60);
			tickstate_free(&st);
		}
	}
}

/* A worker's registration as the ranking reads it: bounded, sorted, distinct, found again. */
static void
fuzz_member(const char *s, size_t n)
{
	struct rank_member m;
	size_t i;

	rank_parse_member(s, n, &m);
	if (m.njobs > RANK_MAX_JOBS)
		abort();
	for (i = 0; i < m.njobs; i++) {
		if (strlen(m.jobs[i]) == 0 || strlen(m.jobs[i]) > RANK_MAX_NAME ||
		    (i > 0 && strcmp(m.jobs[i - 1], m.jobs[i]) >= 0) ||
		    !rank_member_has(&m, m.jobs[i]))
			abort();
	}
	rank_member_free(&m);
}

/* A node's data as a log line gets it: one line of printable text, bounded. */
static void
fuzz_describe(const char *s, size_t n)
{
	char *text = nodedata_describe(s, (int)n);
	const unsigned char *p;

	/* Three fields of at most UTF8_QUOTE_MAX characters, each escaped to at most 12 bytes. */
	if (strlen(text) > 3 * (UTF8_QUOTE_MAX * 12 + 16) + 64)
		abort();
	for (p = (const unsigned char *)text; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f)
			abort();
	free(text);
}

/* A run-now request as workers and the command read it: bounded, terminated, sane codes. */
static void
fuzz_request(const char *s, size_t n)
{
	struct ctlrec_request r;
	const char *p;
	int code;

	ctlrec_request(s, (int)n, &r);
	/* A newer format's request is never taken, nor its content believed. */
	if (!format_readable(r.format) && (r.claimed || r.done || r.timeout_ms != -1))
		abort();
	if (strlen(r.by) == 0 || strlen(r.by) > CTLREC_MAX_BY || strlen(r.node) > CTLREC_MAX_BY ||
	    strlen(r.error) > CTLREC_MAX_BY || strlen(r.outcome) == 0 ||
	    strlen(r.outcome) >= sizeof r.outcome)
		abort();
	for (p = r.outcome; *p != '\0'; p++)
		if ((*p < 'a' || *p > 'z') && *p != '_')
			abort();
	if (r.timeout_ms < -1 || r.timeout_ms == 0 || r.timeout_ms > CTLREC_MAX_WAIT_MS ||
	    r.exit_status < -1 || r.exit_status > 255 || r.signal < -1 || r.signal == 0 ||
	    r.signal > 127 || (!r.valid && (r.claimed || r.done)))
		abort();
	code = ctlrec_request_exit(&r);
	if (code < 0 || code > 255)
		abort();
	/* What a worker acts on is a request ctlrec_request reads whole: a by of its own (a
	 * newer format's is never acted on: the worker asks format_readable first). */
	if (format_readable(r.format) && ctlrec_request_invalid(s, (int)n) == NULL &&
	    (!r.valid || strcmp(r.by, "?") == 0 || n > CTLREC_MAX_REQUEST))
		abort();
}

/* A stop request as workers and `leasekeeper stop` read it: what a request has, and sane. */
static void
fuzz_stop(const char *s, size_t n)
{
	struct stoprec r;

	if (stoprec_parse(s, (int)n, &r) != r.req.valid)
		abort();
	if (r.fence == 0 || r.fence < -1 || (r.kill != 0 && r.kill != 1) ||
	    (r.no_restart != 0 && r.no_restart != 1) || strlen(r.req.by) > CTLREC_MAX_BY)
		abort();
}

/* A request's "params" as the worker checks them: refused, or only declared and bounded. */
static void
fuzz_params(const char *s, size_t n)
{
	static char *declared[] = {"TARGET", "DRY_RUN=false", NULL};
	json_t *o = json_loadb(s, n, 0, NULL), *values;
	char **env, why[160];
	size_t i;

	if (paramrec_resolve(o, declared, &env, &values, why, sizeof why)) {
		for (i = 0; env[i] != NULL; i++)
			if (i >= 2 || strncmp(env[i], PARAM_ENV, strlen(PARAM_ENV)) != 0 ||
			    strlen(env[i]) >
			        strlen(PARAM_ENV) + PARAM_MAX_NAME + 1 + PARAM_MAX_VALUE)
				abort();
		for (i = 0; env[i] != NULL; i++)
			free(env[i]);
		free(env);
		json_decref(values);
	} else if (env != NULL || values != NULL || strlen(why) == 0)
		abort();
	if (o != NULL)
		json_decref(o);
}

/* A chained job's reads: a parent's run record, and its chain state with a claim on it. */
static void
fuzz_chain(const char *s, size_t n)
{
	struct chainrec_run r;
	struct chainrec_gen g;
	json_t *st, *back;
	char *data;
	size_t i;

	if (chainrec_parse_run(s, n, 1, 0, &r)) {
		for (i = 0; r.run_id[i] != '\0'; i++)
			if (r.run_id[i] < 0x21 || r.run_id[i] > 0x7e)
				abort();
		if (r.run_id[0] == '\0' || r.outcome[0] == '\0')
			abort();
	}
	if ((st = chainrec_parse_state(s, n)) == NULL)
		return;
	memset(&g, 0, sizeof g);
	g.n = 1;
	g.p[0].job = "parent";
	g.p[0].run.seq = 1000000;
	if (chainrec_claim(st, &g, "node", "run") == CHAINREC_CLAIM) {
		/* What was written reads back as ours, and as taken for anyone else. */
		data = chainrec_dump(st);
		back = chainrec_parse_state(data, strlen(data));
		if (back == NULL || chainrec_claim(back, &g, "node", "run") != CHAINREC_OURS ||
		    chainrec_claim(back, &g, "other", "run") != CHAINREC_TAKEN)
			abort();
		json_decref(back);
		free(data);
	}
	json_decref(st);
}

/* Our locks, as a worker's job record holds them. */
#define FUZZ_LOCKS "[{\"path\":\"/fuzz/mutex/j\",\"mode\":\"mutex\"}]"

/*
 * A record's "locks" that are valid have a canonical text that is valid again and the same
 * (a fixed point): two workers that take the same locks always agree.
 */
static void
fuzz_locks(const char *s, size_t n)
{
	json_t *o = n <= JOBREC_MAX_SIZE ? json_loadb(s, n, 0, NULL) : NULL, *again;
	char *canon, *twice;

	if (o == NULL)
		return;
	canon = jobrec_locks_canon(json_object_get(o, "locks"));
	if (canon != NULL) {
		if ((again = json_loads(canon, 0, NULL)) == NULL)
			abort();
		twice = jobrec_locks_canon(again);
		if (twice == NULL || strcmp(canon, twice) != 0)
			abort();
		free(twice);
		json_decref(again);
	}
	free(canon);
	json_decref(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	json_t *o;
	int leases, stop, fmt, agree;
	char *said;
	int64_t deadline;

	if (size < 1)
		return 0;
	fuzz_init();
	switch (data[0] % 3) {
	case 0:
		leases = jobrec_parse_leases(s, (int)n);
		if (leases < -1 || leases > LK_MAX_LEASES)
			abort();
		if (ctlrec_paused(s, (int)n, &stop) == 0 && stop != 0)
			abort();
		said = NULL; /* a record's locks against ours: read bounded, escaped in the log */
		agree = jobrec_locks_check("/fuzz/jobs/j", s, (int)n, FUZZ_LOCKS, &said);
		if (agree < -1 || agree > 1 || (said != NULL) != (agree < 0))
			abort();
		free(said);
		fuzz_locks(s, n);
		deadline = ctlrec_drain_deadline_ms(s, (int)n);
		if (deadline < -1 || deadline > (int64_t)CTLREC_MAX_DRAIN_S * 1000)
			abort();
		fuzz_request(s, n);
		fmt = format_of_data(s, n);
		if (fmt < FORMAT_INVALID || fmt > FORMAT_MAX)
			abort();
		fuzz_stop(s, n);
		break;
	case 1:
		fuzz_tickstate(s, n);
		fuzz_params(s, n);
		fuzz_chain(s, n);
		break;
	default:
		o = json_object();
		nodedata_merge(o, s, (int)n);
		fuzz_safe(o);
		fuzz_clock(o);
		json_decref(o);
		fuzz_describe(s, n);
		fuzz_member(s, n);
		break;
	}
	return 0;
}
