/* Runs in: the main process. */
/* pnode.h: one protected ephemeral sequential node, created the way Curator creates it. */
#ifndef PNODE_H
#define PNODE_H

#include <stdint.h>

#include "zk.h"

struct pnode;

enum pnode_state {
	PNODE_IDLE,       /* nothing created */
	PNODE_CREATING,   /* create (or parent creation) in flight */
	PNODE_RECOVERING, /* connection lost during create: find our node by uuid */
	PNODE_CREATED,    /* the node exists and belongs to our session */
	PNODE_HELD,       /* the owner holds through it: watched, deleted by anyone = lost */
	PNODE_VERIFYING,  /* held, checking after a reconnect that it is still ours */
};

struct pnode_cb {
	void (*created)(struct pnode *, void *arg);
	void (*failed)(struct pnode *, int rc, void *arg);        /* cannot create: rc says why */
	void (*lost)(struct pnode *, const char *why, void *arg); /* held, and not any more */
	void (*verified)(struct pnode *, void *arg); /* held, still ours after a reconnect */
};

struct pnode *pnode_new(struct zk *, const char *dir, const char *base, const char *data,
                        const struct pnode_cb *, void *arg);
void pnode_create(struct pnode *);
void pnode_delete(struct pnode *);
void pnode_free(struct pnode *);
void pnode_session(struct pnode *, enum zk_event);
void pnode_set_data(struct pnode *, const char *data);
void pnode_hold(struct pnode *);

enum pnode_state pnode_state(const struct pnode *);
const char *pnode_state_name(enum pnode_state);
const char *pnode_path(const struct pnode *);
const char *pnode_name(const struct pnode *);
int64_t pnode_czxid(const struct pnode *);

#endif
