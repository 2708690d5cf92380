/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/*
 * jobfsmctl.c: the job machine's steps for the controls that act on one run: a stop request
 * (`leasekeeper stop`) that this worker took because the run is its own.
 */

#include <signal.h>

#include "jobfsmpriv.h"

/*
 * `leasekeeper stop` took the run under way: SIGTERM, then SIGKILL after kill_grace (kill:
 * SIGKILL at once). The run's record says "stopped"; what follows is jobstate.c's (no retry,
 * the next tick; a continuous copy restarts after restart_backoff). hold: the command paused
 * the job in its record before asking (--no-restart), so the machine knows it already.
 */
void
jobfsm_halt(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	if (!m->busy)
		return; /* the run ended meanwhile: its record is the answer */
	if (in->hold)
		m->paused = 1;
	m->halted = 1;
	jobfsm_stop_run(out, in->kill ? SIGKILL : SIGTERM, JOBFSM_WHY_HALT);
	jobfsm_enter(m, JOB_STOPPING, out);
}
