/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* worker.h: the daemon: one worker per host, running its jobs under leases. */
#ifndef WORKER_H
#define WORKER_H

struct config;

int worker_run(const char *config_file, struct config *cfg);

#endif
