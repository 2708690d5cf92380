/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* control.h: whether this worker honours control records (run requests, pauses, drains). */
#ifndef CONTROL_H
#define CONTROL_H

#include <stdint.h>

#include "config.h"

/* The kinds of control record a worker reads. */
enum control_kind {
	CONTROL_RUN_REQUEST, /* <root>/jobs/<job>/requests/<node> */
	CONTROL_PAUSE,       /* "paused" in <root>/jobs/<job> */
	CONTROL_DRAIN,       /* <root>/drain/<node_id> */
	CONTROL_STOP,        /* <root>/jobs/<job>/stops/<node> (`leasekeeper stop`) */
	CONTROL_NKINDS,
};

void control_decide(const struct config *, int acl_closed);
int control_honoured(void);
int control_allow(enum control_kind, const char *job, const char *node);
const char *control_kind_name(enum control_kind);
uint64_t control_ignored_total(enum control_kind);
void control_refused(const char *job, const char *node, const char *why);
uint64_t control_refused_total(void);

#endif
