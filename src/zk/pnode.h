/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* pnode.h: one protected ephemeral sequential node, created the way Curator creates it. */
#ifndef PNODE_H
#define PNODE_H

#include <stdint.h>

#include "zk.h"

struct pnode;

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
void pnode_write(struct pnode *, const char *data);
void pnode_hold(struct pnode *);

const char *pnode_name(const struct pnode *);
int64_t pnode_czxid(const struct pnode *);

#endif
