/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command. */
/* admin.h: what every one-shot command shares: a session on a loop of its own. */
#ifndef ADMIN_H
#define ADMIN_H

#include <jansson.h>

#include "leasekeeper.h"
#include "zk.h"

struct config;
struct event;
struct event_base;
struct target_opts;

/* A one-shot command's session on its loop, and where to find things. */
struct admin {
	struct event_base *base;
	struct zk *zk;
	struct event *timer;
	struct config *cfg;
	const char *hosts;
	const char *root;
	char *auth; /* --auth-file's credentials, or NULL */
	int pending;
	int started;
	int exit_code;
	void (*ready)(struct admin *);
	void (*event)(struct admin *, enum zk_event); /* optional: session events after ready */
	void (*finish)(struct admin *); /* or NULL: after the session, before the loop goes */
	void *ctx;
	json_t *view;        /* status: the cluster as read */
	struct admin_mk *mk; /* admin_create_control: the create waiting for its ACL */
};

void admin_done(struct admin *, int code);
void admin_create_control(struct admin *, const char *path, const char *data, int flags,
                          zk_reply_cb);
int admin_run(struct admin *, int timeout_ms);
int admin_setup(struct admin *, struct target_opts *, const char *cmd);
char *admin_who(const char *by);
void admin_control_note(const struct admin *, const char *cmd);
void admin_print(json_t *out, int as_json, const char *line);
int admin_count(const char *cmd, const char *what, const char *text, int *out);
const char *admin_negative(int argc, char **argv);

#endif
