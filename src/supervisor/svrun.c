/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process (pure logic: no process or event calls). */
/*
 * svrun.c: the code that decides when a job is killed, as one state machine.
 *
 * A run starts (STARTING, RUNNING) and ends only when its leader is reaped and its
 * process group is empty (DONE): leftovers of a leader that exited are terminated too
 * (LEFTOVERS, DRAINING). The lease deadline of the run's epoch rules every state whose
 * SIGKILL is not sent yet: SIGTERM at deadline - grace, SIGKILL at the deadline, whatever
 * main asked or did not ask. A stop, or leftovers, may bring the SIGKILL earlier (kill_at),
 * never later. supervisor.c feeds events in and performs the actions that come out.
 */

#include <signal.h>
#include <string.h>

#include "log.h"
#include "svrun.h"

/* Start a run that was just forked. */
void
svrun_init(struct svrun *r, const char *name, uint64_t grace_ns)
{
	memset(r, 0, sizeof *r);
	r->state = SVRUN_STARTING;
	r->name = name;
	r->grace_ns = grace_ns;
	r->reason = PROTO_EXIT_NORMAL;
}

/* The name of a state, for logs. */
const char *
svrun_state_name(enum svrun_state state)
{
	switch (state) {
	case SVRUN_STARTING:
		return "starting";
	case SVRUN_RUNNING:
		return "running";
	case SVRUN_TERM_SENT:
		return "term-sent";
	case SVRUN_KILLED:
		return "killed";
	case SVRUN_LEFTOVERS:
		return "leftovers";
	case SVRUN_DRAINING:
		return "draining";
	case SVRUN_START_FAILED:
		return "start-failed";
	case SVRUN_DONE:
		return "done";
	}
	return "?";
}

/* The name of an event, for logs. */
const char *
svrun_event_name(enum svrun_event event)
{
	switch (event) {
	case SVRUN_EXEC_OK:
		return "exec-ok";
	case SVRUN_EXEC_FAILED:
		return "exec-failed";
	case SVRUN_STOP:
		return "stop";
	case SVRUN_EPOCH_END:
		return "epoch-end";
	case SVRUN_MAIN_GONE:
		return "main-gone";
	case SVRUN_TIMER:
		return "timer";
	case SVRUN_LEADER_EXITED:
		return "leader-exited";
	}
	return "?";
}

/* Whether the leader is not reaped yet. */
int
svrun_leader_alive(const struct svrun *r)
{
	return r->state == SVRUN_STARTING || r->state == SVRUN_RUNNING ||
	       r->state == SVRUN_TERM_SENT || r->state == SVRUN_KILLED ||
	       r->state == SVRUN_START_FAILED;
}

/* Whether SIGKILL may still have to be sent. */
static int
svrun_killable(const struct svrun *r)
{
	return r->state == SVRUN_STARTING || r->state == SVRUN_RUNNING ||
	       r->state == SVRUN_TERM_SENT || r->state == SVRUN_LEFTOVERS;
}

/* The one place a run changes state. */
static void
svrun_enter(struct svrun *r, enum svrun_state next, enum svrun_event event)
{
	if (next == r->state)
		return;
	log_debug("supervisor: job %s: %s -> %s (%s)", r->name, svrun_state_name(r->state),
	          svrun_state_name(next), svrun_event_name(event));
	r->state = next;
}

/* Add a signal to the actions. */
static void
svrun_signal(struct svrun_actions *out, int sig, enum svrun_why why)
{
	out->sig[out->nsig] = sig;
	out->why[out->nsig] = why;
	out->nsig++;
}

/* Bring the SIGKILL to at (not 0), unless one is due sooner. */
static void
svrun_kill_by(struct svrun *r, uint64_t at)
{
	if (at != 0 && (r->kill_at == 0 || at < r->kill_at))
		r->kill_at = at;
}

/* SIGKILL the group now. */
static void
svrun_kill(struct svrun *r, enum svrun_event event, enum svrun_why why, struct svrun_actions *out)
{
	svrun_signal(out, SIGKILL, why);
	svrun_enter(r, svrun_leader_alive(r) ? SVRUN_KILLED : SVRUN_DRAINING, event);
}

/* Send the first signal (SIGKILL at kill_at), or SIGKILL at once if that is the signal. */
static void
svrun_terminate(struct svrun *r, enum svrun_event event, int sig, uint64_t kill_at,
                enum proto_exit_reason reason, enum svrun_why why, struct svrun_actions *out)
{
	if (r->reason == PROTO_EXIT_NORMAL)
		r->reason = reason;
	if (sig == SIGKILL) {
		svrun_kill(r, event, why, out);
		return;
	}
	svrun_signal(out, sig, why);
	svrun_kill_by(r, kill_at);
	svrun_enter(r, svrun_leader_alive(r) ? SVRUN_TERM_SENT : SVRUN_LEFTOVERS, event);
}

/* Time passed: SIGTERM at deadline - grace, SIGKILL at the deadline and at kill_at. */
static void
svrun_timer(struct svrun *r, const struct svrun_input *in, struct svrun_actions *out)
{
	uint64_t term_at = in->deadline > r->grace_ns ? in->deadline - r->grace_ns : 0;

#define SVRUN_WAKE(t) (out->wake = (out->wake == 0 || (t) < out->wake) ? (t) : out->wake)
	if (r->state == SVRUN_STARTING || r->state == SVRUN_RUNNING) {
		if (in->now >= term_at)
			svrun_terminate(r, in->event, SIGTERM, in->deadline, PROTO_EXIT_DEADLINE,
			                SVRUN_WHY_DEADLINE_NEAR, out);
		else
			SVRUN_WAKE(term_at);
	}
	if (svrun_killable(r)) {
		if (in->now >= in->deadline) {
			if (r->reason == PROTO_EXIT_NORMAL)
				r->reason = PROTO_EXIT_DEADLINE;
			svrun_kill(r, in->event, SVRUN_WHY_DEADLINE_PASSED, out);
		} else
			SVRUN_WAKE(in->deadline);
	}
	if (svrun_killable(r) && r->kill_at != 0) {
		if (in->now >= r->kill_at)
			svrun_kill(r, in->event, SVRUN_WHY_GRACE_OVER, out);
		else
			SVRUN_WAKE(r->kill_at);
	}
#undef SVRUN_WAKE
}

/* The leader is reaped: the run is over if its group is empty, else leftovers go too. */
static void
svrun_leader_exited(struct svrun *r, const struct svrun_input *in, struct svrun_actions *out)
{
	if (r->state == SVRUN_START_FAILED) {
		svrun_enter(r, SVRUN_DONE, in->event); /* main heard START_FAILED already */
		return;
	}
	if (!in->group_alive) {
		out->send_exited = 1;
		svrun_enter(r, SVRUN_DONE, in->event);
		return;
	}
	switch (r->state) {
	case SVRUN_STARTING:
	case SVRUN_RUNNING:
	case SVRUN_TERM_SENT:
		/* SIGKILL after the grace, never later than the deadline. */
		svrun_signal(out, SIGTERM, SVRUN_WHY_LEFTOVERS);
		svrun_kill_by(r, in->deadline != 0 && in->deadline < in->now + r->grace_ns
		                     ? in->deadline
		                     : in->now + r->grace_ns);
		svrun_enter(r, SVRUN_LEFTOVERS, in->event);
		break;
	case SVRUN_KILLED:
		svrun_enter(r, SVRUN_DRAINING, in->event);
		break;
	default:
		break; /* LEFTOVERS, DRAINING: still waiting for the group to empty */
	}
}

/* Feed one event to a run; out says what to do about it. */
void
svrun_step(struct svrun *r, const struct svrun_input *in, struct svrun_actions *out)
{
	memset(out, 0, sizeof *out);
	if (r->state == SVRUN_DONE)
		return;
	switch (in->event) {
	case SVRUN_EXEC_OK:
		out->send_started = 1;
		if (r->state == SVRUN_STARTING)
			svrun_enter(r, SVRUN_RUNNING, in->event);
		break;
	case SVRUN_EXEC_FAILED:
		out->send_start_failed = 1;
		r->reason = PROTO_EXIT_NORMAL;
		svrun_enter(r, SVRUN_START_FAILED, in->event);
		break;
	case SVRUN_STOP:
		if (svrun_killable(r))
			svrun_terminate(r, in->event, in->sig, in->kill_at, PROTO_EXIT_STOPPED,
			                SVRUN_WHY_STOP, out);
		break;
	case SVRUN_EPOCH_END:
	case SVRUN_MAIN_GONE:
		if (svrun_killable(r))
			svrun_terminate(r, in->event, SIGKILL, 0, PROTO_EXIT_EPOCH,
			                in->event == SVRUN_EPOCH_END ? SVRUN_WHY_EPOCH
			                                             : SVRUN_WHY_MAIN_GONE,
			                out);
		break;
	case SVRUN_TIMER:
		svrun_timer(r, in, out);
		break;
	case SVRUN_LEADER_EXITED:
		svrun_leader_exited(r, in, out);
		break;
	}
}
