/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process (pure logic: no process or event calls). */
/*
 * svstamp.c: the supervisor stamps a run's events on its own clock as it sees them (exec,
 * the first signal, SIGKILL, the last process gone) and sends them with the exit, so that
 * the run record tells them as they happened, even if main was stopped meanwhile; and the
 * end of its output that goes with them.
 */

#include <signal.h>
#include <string.h>

#include "svstamp.h"

/* Why a signal was sent, as the run record names it; hook: the run is a hook. */
enum proto_signal_why
svstamp_why(enum svrun_why why, int hook)
{
	switch (why) {
	case SVRUN_WHY_STOP:
		return PROTO_WHY_STOP;
	case SVRUN_WHY_EPOCH:
		return PROTO_WHY_SESSION;
	case SVRUN_WHY_MAIN_GONE:
		return PROTO_WHY_MAIN_GONE;
	case SVRUN_WHY_DEADLINE_NEAR:
	case SVRUN_WHY_DEADLINE_PASSED:
		return hook ? PROTO_WHY_HOOK_TIMEOUT : PROTO_WHY_DEADLINE;
	case SVRUN_WHY_GRACE_OVER:
		return PROTO_WHY_GRACE;
	case SVRUN_WHY_LEFTOVERS:
		return PROTO_WHY_LEFTOVERS;
	}
	return PROTO_WHY_NONE;
}

/* Stamp the first signal and the first SIGKILL sent to a run, at now_ms (wall clock). */
void
svstamp_signal(struct proto_usage *stamp, int sig, enum proto_signal_why why, uint64_t now_ms)
{
	if (sig == SIGKILL) {
		if (stamp->kill_ms < 0) {
			stamp->kill_ms = (int64_t)now_ms;
			stamp->kill_why = why;
		}
		return;
	}
	if (stamp->term_ms < 0) {
		stamp->term_ms = (int64_t)now_ms;
		stamp->term_sig = sig;
		stamp->term_why = why;
	}
}

/*
 * The output's tail as EXITED carries it: whole lines where the start was cut (unless that
 * leaves nothing), and a NUL byte, which the message cannot carry, as 0xff: main shows it
 * as it shows every byte that is not UTF-8.
 */
void
svstamp_output(char *tail, size_t len, int cut, struct proto_usage *u)
{
	char *nl;
	size_t i, skip = 0;

	if (cut && (nl = memchr(tail, '\n', len)) != NULL && (size_t)(nl - tail) + 1 < len)
		skip = (size_t)(nl - tail) + 1;
	for (i = skip; i < len; i++)
		if (tail[i] == '\0')
			tail[i] = (char)0xff;
	u->output = tail + skip;
	u->output_len = len - skip;
}
