/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/* jobfsmpriv.h: what the files of the job machine (jobfsm*.c) share; no one else includes it. */
#ifndef JOBFSMPRIV_H
#define JOBFSMPRIV_H

#include "jobfsm.h"

struct jobfsm_action *jobfsm_act(struct jobfsm_actions *, enum jobfsm_act);
void jobfsm_enter(struct jobfsm *, enum job_state next, struct jobfsm_actions *);
void jobfsm_stop_run(struct jobfsm_actions *, int sig, enum jobfsm_why);

/* jobfsmctl.c */
void jobfsm_halt(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);

#endif
