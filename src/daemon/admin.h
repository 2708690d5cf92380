/* Runs in: the main process. */
/* admin.h: one-shot commands that read or change the cluster: status, set-leases. */
#ifndef ADMIN_H
#define ADMIN_H

#include "leasekeeper.h"
#include "zk.h"

int admin_status(int argc, char **argv);
int admin_set_leases(int argc, char **argv);

/* What admin.c shares with the cluster-wide controls (control.c). */
struct config;
struct event;
struct event_base;
struct zk;

/* What every admin command shares: a session on a loop, and where to find things. */
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
	void *ctx;
};

/* Common options: -c FILE or --zk HOSTS, --root and --auth-file. */
struct admin_opts {
	const char *file;
	const char *hosts;
	const char *root;
	const char *auth_file;
};

void admin_done(struct admin *, int code);
int admin_run(struct admin *, int timeout_ms);
int admin_option(int ch, const char *arg, struct admin_opts *);
int admin_setup(struct admin *, struct admin_opts *, const char *cmd);

#endif
