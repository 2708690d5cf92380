/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/* jobfsmpriv.h: what the files of the job machine (jobfsm*.c) share; no one else includes it. */
#ifndef JOBFSMPRIV_H
#define JOBFSMPRIV_H

#include "jobfsm.h"

struct jobfsm_action *jobfsm_act(struct jobfsm_actions *, enum jobfsm_act);
void jobfsm_enter(struct jobfsm *, enum job_state next, struct jobfsm_actions *);
void jobfsm_stop_run(struct jobfsm_actions *, int sig, enum jobfsm_why);
void jobfsm_acquire(struct jobfsm *, uint64_t ms, struct jobfsm_actions *);
void jobfsm_contend(struct jobfsm *, const struct jobfsm_input *, int64_t tick, enum jobfsm_kind,
                    struct jobfsm_actions *);
struct jobfsm_action *jobfsm_tick_act(struct jobfsm_actions *, enum jobfsm_act, int64_t tick,
                                      enum jobfsm_kind);
void jobfsm_manual_go(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);
void jobfsm_note(struct jobfsm_actions *, enum jobfsm_note, int64_t tick, int n);
void jobfsm_release(struct jobfsm *, struct jobfsm_actions *);
void jobfsm_abandon(struct jobfsm *, struct jobfsm_actions *);
void jobfsm_wait_tick(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);
void jobfsm_record(struct jobfsm *, enum job_outcome, int untrusted, struct jobfsm_actions *);
struct jobstate_end;
void jobfsm_run_end(struct jobfsm *, const struct jobfsm_input *, struct jobstate_end *,
                    struct jobfsm_actions *);

/* jobfsmctl.c */
void jobfsm_halt(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);
void jobfsm_run_request(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);
void jobfsm_started(struct jobfsm *, struct jobfsm_actions *);
void jobfsm_start_failed(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);
void jobfsm_catch_up(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);
void jobfsm_catch_next(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);
int jobfsm_catch_queue(struct jobfsm *, int64_t tick);
void jobfsm_catch_drop(struct jobfsm *, int64_t tick);

/* jobfsmtick.c */
void jobfsm_tick(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);

#endif
