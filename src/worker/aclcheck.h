/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* aclcheck.h: who else may create or delete in the folders that hold our nodes. */
#ifndef ACLCHECK_H
#define ACLCHECK_H

#include "config.h"
#include "zk.h"

enum aclcheck_result {
	ACLCHECK_CLOSED,      /* only we may create or delete in every folder read */
	ACLCHECK_OPEN,        /* someone else may, or an ACL could not be read: logged */
	ACLCHECK_INTERRUPTED, /* the session failed meanwhile: try again once registered */
};

struct aclcheck;
typedef void (*aclcheck_done_cb)(enum aclcheck_result, void *arg);

struct aclcheck *aclcheck_start(struct zk *, const struct config *, const char *own_node,
                                aclcheck_done_cb, void *arg);
void aclcheck_free(struct aclcheck *);
const char *aclcheck_result_name(enum aclcheck_result);

#endif
