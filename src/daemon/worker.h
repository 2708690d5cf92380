/* Runs in: the main process. */
/* worker.h: the daemon: one worker per host, running its jobs under leases. */
#ifndef WORKER_H
#define WORKER_H

#include <stdint.h>

#include <jansson.h>

struct config;
struct event_base;
struct job;
struct svlink;
struct worker;
struct zk;

int worker_run(const char *config_file, struct config *cfg);

struct event_base *worker_base(struct worker *);
struct zk *worker_zk(struct worker *);
struct svlink *worker_supervisor(struct worker *);
const struct config *worker_config(struct worker *);
uint32_t worker_next_run_id(struct worker *);
void worker_job_done(struct worker *, struct job *);
json_t *worker_status_json(struct worker *);

#endif
