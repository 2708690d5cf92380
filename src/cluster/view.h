/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot commands and `leasekeeper web`. */
/* view.h: one read of the whole cluster, as JSON, on a session the caller owns. */
#ifndef VIEW_H
#define VIEW_H

#include <stddef.h>

#include <jansson.h>

struct config;
struct zk;

/* What one read of the cluster covers (view_start). */
struct view_opts {
	const char *root;
	const struct config *cfg; /* its jobs; NULL: those the cluster records */
	const char *lock_path;    /* or this one lock folder alone, with leases */
	int leases;
	size_t runs;       /* the newest run records read per job */
	size_t max_list;   /* the most entries read of any other listing; 0: all */
	int output_tokens; /* keep the workers' output_token (the dashboard, which strips them) */
	const char *identity; /* who the session is, for messages ("the identity ops"), or NULL */
};

void view_start(struct zk *, const struct view_opts *, void (*)(json_t *, void *), void *);

#endif
