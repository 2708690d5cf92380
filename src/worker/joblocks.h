/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* joblocks.h: a job's locks, as its configuration lists them, made into one lease. */
#ifndef JOBLOCKS_H
#define JOBLOCKS_H

#include <jansson.h>

#include "config.h"
#include "lease.h"

struct lease *joblocks_lease(struct event_base *, struct zk *, const struct config_job *,
                             const char *data, const struct lease_cb *, void *arg);
json_t *joblocks_json(const struct lease *);

#endif
