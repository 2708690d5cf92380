/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * rank.c: which workers run a tick first: the ranking of the live workers that carry a job.
 *
 * At each tick every worker that carries a scheduled job ranks the live workers whose
 * registration lists the job (drained ones left out, itself always in) the same way: in an
 * order of their own per job (a hash of job and node), rotated by one place at each tick of
 * the job's schedule, from a per-job starting place. The first per_tick in rank contend for
 * the lease at once; each other waits a delay that grows with its rank (in steps, up to
 * RANK_STEPS), reads the tick state once, and contends only if the tick is still not
 * claimed. Rotation rather than a hash of each tick spreads the runs evenly: over n
 * consecutive ticks each of n workers is first exactly once.
 *
 * Nothing here decides who runs a tick: the claim by versioned write does (tickstate.c). Two
 * workers whose views of the membership differ may both think they are first, or neither:
 * then two contend (and the claim lets one run), or the tick runs a step late.
 *
 * Pure (no network, no logging), so that unit tests and the fuzzer drive it as the daemon does.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rank.h"
#include "schedule.h"
#include "xmalloc.h"

/* A 64-bit hash of (a, b): FNV-1a over both with a separator, then a final mix. */
static uint64_t
rank_hash(const char *a, const char *b)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *parts[2] = {a, b};
	const unsigned char *p;
	int i;

	for (i = 0; i < 2; i++) {
		for (p = (const unsigned char *)parts[i]; *p != '\0'; p++) {
			h ^= *p;
			h *= 0x100000001b3ULL;
		}
		h ^= 0xff; /* no byte of a name: "ab"+"c" and "a"+"bc" differ */
		h *= 0x100000001b3ULL;
	}
	/* splitmix64's finalizer: FNV's low bits alone are poorly mixed for a modulus. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

static int
rank_strcmp_cb(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Parse a worker's registration ({"jobs": [...], "drained": true, ...}), which anyone with
 * write access may forge: bounded in size, in jobs and in name length. Returns -1 (and an
 * empty member: carrying nothing) if it is not a JSON object of at most RANK_MAX_SIZE;
 * partial says whether anything of it was left out.
 */
int
rank_parse_member(const char *data, size_t len, struct rank_member *m)
{
	json_t *o = NULL, *jobs, *v;
	size_t i, n;

	memset(m, 0, sizeof *m);
	m->partial = 1;
	if (data == NULL || len == 0 || len > RANK_MAX_SIZE)
		return -1;
	o = json_loadb(data, len, 0, NULL);
	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		return -1;
	}
	m->partial = 0;
	m->drained = json_is_true(json_object_get(o, "drained"));
	m->unhealthy = json_is_true(json_object_get(o, "unhealthy"));
	jobs = json_object_get(o, "jobs");
	n = json_is_array(jobs) ? json_array_size(jobs) : 0;
	if (n > RANK_MAX_JOBS) {
		n = RANK_MAX_JOBS;
		m->partial = 1;
	}
	m->jobs = xcalloc(n > 0 ? n : 1, sizeof *m->jobs);
	for (i = 0; i < n; i++) {
		v = json_array_get(jobs, i);
		if (json_is_string(v) && json_string_length(v) > 0 &&
		    json_string_length(v) <= RANK_MAX_NAME &&
		    strlen(json_string_value(v)) == json_string_length(v))
			m->jobs[m->njobs++] = xstrdup(json_string_value(v));
		else
			m->partial = 1;
	}
	json_decref(o);
	qsort(m->jobs, m->njobs, sizeof *m->jobs, rank_strcmp_cb);
	/* Distinct: a name listed twice is one job. */
	for (i = 1, n = m->njobs > 0 ? 1 : 0; i < m->njobs; i++) {
		if (strcmp(m->jobs[i], m->jobs[n - 1]) == 0)
			free(m->jobs[i]);
		else
			m->jobs[n++] = m->jobs[i];
	}
	m->njobs = n;
	return 0;
}

/* Free what rank_parse_member made. */
void
rank_member_free(struct rank_member *m)
{
	size_t i;

	for (i = 0; i < m->njobs; i++)
		free(m->jobs[i]);
	free(m->jobs);
	memset(m, 0, sizeof *m);
}

/* Whether the member carries job. */
int
rank_member_has(const struct rank_member *m, const char *job)
{
	return m->njobs > 0 &&
	       bsearch(&job, m->jobs, m->njobs, sizeof *m->jobs, rank_strcmp_cb) != NULL;
}

/* The time from the tick before this one to it, in seconds (1 if there is none). */
static int64_t
rank_gap(const struct schedule *sched, int64_t tick)
{
	int64_t prev = sched != NULL ? schedule_prev(sched, tick - 1) : -1;

	return prev >= 0 && prev < tick ? tick - prev : 1;
}

/*
 * The tick's place in its schedule, the same on every worker: consecutive ticks of an
 * interval (or of a regular cron expression) have consecutive numbers.
 */
int64_t
rank_seq(const struct schedule *sched, int64_t tick)
{
	return tick < 0 ? 0 : tick / rank_gap(sched, tick);
}

/* Whether node x comes before node y in job's order (ties, which a hash may have, by name). */
static int
rank_before(uint64_t hx, const char *x, uint64_t hy, const char *y)
{
	return hx != hy ? hx < hy : strcmp(x, y) < 0;
}

/*
 * self's rank for the tick numbered seq among nodes (the live workers that carry the job,
 * drained ones left out, distinct as the children of one folder are; self is counted
 * whether listed or not): 0 is first. O(n), no allocation.
 */
size_t
rank_position(const char *job, int64_t seq, const char *self, const char *const *nodes, size_t n)
{
	uint64_t hs = rank_hash(job, self), hi;
	size_t i, count = 1, below = 0, start;

	for (i = 0; i < n; i++) {
		if (strcmp(nodes[i], self) == 0)
			continue;
		count++;
		hi = rank_hash(job, nodes[i]);
		if (rank_before(hi, nodes[i], hs, self))
			below++;
	}
	/* The first place at this tick: a per-job start, moved on by one at each tick. */
	start = (size_t)((rank_hash(job, "") % count + (uint64_t)seq % count) % count);
	return (below + count - start) % count;
}

/*
 * One step of the backups' delays for a tick: RANK_STEP_MS, less where the start deadline
 * or the interval is short, so that every backup has read the tick within half of the
 * start deadline and before the next tick; RANK_MIN_STEP_MS at least.
 */
uint64_t
rank_step_ms(const struct schedule *sched, int64_t tick, uint64_t start_deadline_ms)
{
	uint64_t step = RANK_STEP_MS, gap_ms = (uint64_t)rank_gap(sched, tick) * 1000;

	if (step > start_deadline_ms / (2 * RANK_STEPS))
		step = start_deadline_ms / (2 * RANK_STEPS);
	if (step > gap_ms / (RANK_STEPS + 1))
		step = gap_ms / (RANK_STEPS + 1);
	return step < RANK_MIN_STEP_MS ? RANK_MIN_STEP_MS : step;
}

/* How long the worker at position waits before it reads the tick: 0 for the first per_tick. */
uint64_t
rank_delay_ms(size_t position, int per_tick, uint64_t step_ms)
{
	size_t b;

	if (per_tick < 1)
		per_tick = 1;
	if (position < (size_t)per_tick)
		return 0;
	b = position - (size_t)per_tick + 1;
	return (b < RANK_STEPS ? b : RANK_STEPS) * step_ms;
}
