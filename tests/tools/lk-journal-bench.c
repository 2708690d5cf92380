/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lk-journal-bench.c: what the journal of open runs (src/worker/runjournal.c) costs main per
 * run, for scripts/bench --journal, beside what a run costs anyway.
 *
 * lk-journal-bench DIR N
 *
 * In DIR (a state directory: give one on the disk the worker's state_dir is on), N cycles of
 * each, in turn, one of each per round so that the machine's load falls on both alike:
 *	journal: the journal's writes of one scheduled run as main makes them: the claim's entry
 *	         (runjournal_claim), the run's (runjournal_begin, which removes the claim's),
 *	         the record's (runjournal_record, with a record of a typical size) and its
 *	         removal (runjournal_end): three small files written and renamed, two removed;
 *	spawn:   the least a run costs the host besides: one posix_spawn of /bin/true and its
 *	         waitpid (the supervisor forks and reaps every run; the real one does more).
 * Prints "cycle I JOURNAL_NS SPAWN_NS" per round, then "done". CLOCK_MONOTONIC.
 */

#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "runjournal.h"

extern char **environ;

static uint64_t
bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t
bench_journal(struct runjournal *rj, const json_t *rec, long i)
{
	char run_id[64];
	uint64_t t0 = bench_now();

	snprintf(run_id, sizeof run_id, "w1-1795760000-%ld", i + 1);
	runjournal_claim(rj, "every", 1795760000 + i);
	runjournal_begin(rj, "every", run_id, 1795760000 + i, 4294967296 + i, NULL);
	runjournal_record(rj, "every", run_id, rec);
	runjournal_end(rj, run_id);
	return bench_now() - t0;
}

/* Whether the journal writes what it is asked to, and removes it (untimed). */
static int
bench_probe(struct runjournal *rj, const char *dir, const json_t *rec)
{
	char path[4096];
	int made, kept, gone;

	snprintf(path, sizeof path, "%s/%s/w1-probe-1", dir, RUNJOURNAL_DIR);
	runjournal_begin(rj, "every", "w1-probe-1", -1, 1, NULL);
	made = access(path, F_OK) == 0;
	runjournal_record(rj, "every", "w1-probe-1", rec);
	kept = access(path, F_OK) == 0;
	runjournal_end(rj, "w1-probe-1");
	gone = access(path, F_OK) != 0;
	return made && kept && gone;
}

static uint64_t
bench_spawn(void)
{
	static char path[] = "/bin/true";
	char *argv[] = {path, NULL};
	uint64_t t0 = bench_now();
	pid_t pid;
	int st;

	if (posix_spawn(&pid, path, NULL, NULL, argv, environ) != 0) {
		fprintf(stderr, "lk-journal-bench: cannot spawn /bin/true\n");
		exit(1);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return bench_now() - t0;
}

int
main(int argc, char **argv)
{
	struct runjournal *rj;
	json_t *rec;
	char *end;
	long n, i;

	if (argc != 3 || (n = strtol(argv[2], &end, 10)) <= 0 || *end != '\0') {
		fprintf(stderr, "usage: lk-journal-bench DIR N\n");
		return 2;
	}
	rj = runjournal_open(argv[1], "w1");
	/* a run record as the worker writes one (docs/outcomes.md), about 400 bytes */
	rec = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:i, s:f, s:I, s:s, s:s, s:I}",
	                "format", "1", "node", "w1", "outcome", "ok", "exit_code", 0, "start",
	                "2026-11-27T06:00:10.001Z", "end", "2026-11-27T06:00:10.501Z", "reason",
	                "exited", "pid", 12345, "cpu_s", 0.002, "fence", (json_int_t)4294967613,
	                "run_id", "w1-1795760000-1", "log", "/var/log/leasekeeper/every/w1-1.log",
	                "tick", (json_int_t)1795760010);
	if (rec == NULL)
		return 1;
	if (!bench_probe(rj, argv[1], rec)) {
		fprintf(stderr,
		        "lk-journal-bench: the journal in %s/%s does not work: nothing to "
		        "measure\n",
		        argv[1], RUNJOURNAL_DIR);
		return 1;
	}
	for (i = 0; i < n; i++) {
		uint64_t j = bench_journal(rj, rec, i);
		uint64_t s = bench_spawn();

		printf("cycle %ld %" PRIu64 " %" PRIu64 "\n", i, j, s);
	}
	printf("done\n");
	json_decref(rec);
	runjournal_free(rj);
	return 0;
}
