/* Runs in: the main process. */
/* admin.h: one-shot commands that read or change the cluster: status, set-leases; and the
 * read of the whole cluster that status and web share. */
#ifndef ADMIN_H
#define ADMIN_H

#include <stddef.h>

#include <jansson.h>

#include "leasekeeper.h"
#include "zk.h"

struct config;
struct zk;

/* Common options: -c FILE or --zk HOSTS, --root and --auth-file. */
struct admin_opts {
	const char *file;
	const char *hosts;
	const char *root;
	const char *auth_file;
};

/* What they resolve to (admin_target): the caller frees cfg and auth. */
struct admin_target {
	struct config *cfg; /* or NULL with --zk */
	const char *hosts;
	const char *root;
	char *auth; /* --auth-file's credentials, or NULL: cfg's */
};

/* What one read of the cluster covers (admin_view_start). */
struct admin_view_opts {
	const char *root;
	const struct config *cfg; /* its jobs; NULL: those the cluster records */
	const char *lock_path;    /* or this one lock folder alone, with leases */
	int leases;
	size_t runs;     /* the newest run records read per job */
	size_t max_list; /* the most entries read of any other listing; 0: all */
};

int admin_status(int argc, char **argv);
int admin_set_leases(int argc, char **argv);
int admin_logs(int argc, char **argv);
int admin_target(struct admin_opts *, const char *cmd, struct admin_target *);
void admin_view_start(struct zk *, const struct admin_view_opts *, void (*)(json_t *, void *),
                      void *);

/* What admin.c shares with the cluster-wide controls (control.c). */
struct event;
struct event_base;

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
	void (*finish)(struct admin *); /* or NULL: after the session, before the loop goes */
	void *ctx;
	json_t *view; /* status: the cluster as read */
};

void admin_done(struct admin *, int code);
int admin_run(struct admin *, int timeout_ms);
int admin_option(int ch, const char *arg, struct admin_opts *);
int admin_setup(struct admin *, struct admin_opts *, const char *cmd);
char *admin_who(const char *by);
void admin_print(json_t *out, int as_json, const char *line);

#endif
