/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process, and the commands that write the cluster. */
/*
 * zk-acl.c: the ACL a node we create gets, by role. With credentials the creator (the
 * workers' digest user) gets every permission; a read-only identity ([zookeeper] reader)
 * gets READ; an operator identity ([zookeeper] operator) gets READ everywhere, and on the
 * control records only what they need: WRITE on a job record (its pause and lease count),
 * CREATE and DELETE in a job's requests and stops folders and in the drain folder. ZooKeeper
 * ACLs are per node, so the role is told by the node's path under the root.
 */

#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"
#include "zk-int.h"

enum zk_acl_class { ZK_ACL_PLAIN, ZK_ACL_RECORD, ZK_ACL_FOLDER };

/* The class of path under root: a job record, a control folder, or anything else. */
static enum zk_acl_class
zk_acl_class(const char *root, const char *path)
{
	size_t n = root != NULL ? strlen(root) : 0;
	const char *rel, *slash;

	if (root == NULL || strncmp(path, root, n) != 0 || path[n] != '/')
		return ZK_ACL_PLAIN;
	rel = path + n + 1;
	if (strcmp(rel, "drain") == 0)
		return ZK_ACL_FOLDER;
	if (strncmp(rel, "jobs/", 5) != 0 || rel[5] == '\0')
		return ZK_ACL_PLAIN;
	if ((slash = strchr(rel + 5, '/')) == NULL)
		return ZK_ACL_RECORD;
	if (strcmp(slash, "/requests") == 0 || strcmp(slash, "/stops") == 0)
		return ZK_ACL_FOLDER;
	return ZK_ACL_PLAIN;
}

/* The operator identity's permissions on path, or 0 without one. */
int
zk_operator_perms(const struct zk *zk, const char *path)
{
	if (zk->operator_id == NULL)
		return 0;
	switch (zk_acl_class(zk->acl_root, path)) {
	case ZK_ACL_RECORD:
		return ZOO_PERM_READ | ZOO_PERM_WRITE;
	case ZK_ACL_FOLDER:
		return ZOO_PERM_READ | ZOO_PERM_CREATE | ZOO_PERM_DELETE;
	default:
		return ZOO_PERM_READ;
	}
}

/* The operator's digest id (USER:BASE64), or NULL. */
const char *
zk_operator_id(const struct zk *zk)
{
	return zk->operator_id;
}

/* Build the three ACLs from the identities set. */
static void
zk_acl_build(struct zk *zk)
{
	int perms[3], c, n;

	perms[ZK_ACL_PLAIN] = ZOO_PERM_READ;
	perms[ZK_ACL_RECORD] = ZOO_PERM_READ | ZOO_PERM_WRITE;
	perms[ZK_ACL_FOLDER] = ZOO_PERM_READ | ZOO_PERM_CREATE | ZOO_PERM_DELETE;
	for (c = 0; c < 3; c++) {
		n = 0;
		zk->acl_entries[c][n++] = (struct ACL){ZOO_PERM_ALL, {"auth", ""}};
		if (zk->reader_id != NULL)
			zk->acl_entries[c][n++] =
			    (struct ACL){ZOO_PERM_READ, {"digest", zk->reader_id}};
		if (zk->operator_id != NULL)
			zk->acl_entries[c][n++] =
			    (struct ACL){perms[c], {"digest", zk->operator_id}};
		zk->acl[c] = (struct ACL_vector){n, zk->acl_entries[c]};
	}
}

/*
 * With credentials, nodes created from now on also give READ to the digest id (USER:BASE64,
 * a read-only identity: the dashboard, status), besides the creator's every permission.
 */
void
zk_set_reader(struct zk *zk, const char *digest_id)
{
	free(zk->reader_id);
	zk->reader_id = xstrdup(digest_id);
	zk_acl_build(zk);
}

/*
 * With credentials, nodes created from now on under root give the operator's digest id
 * READ, and on the control records what zk_operator_perms says.
 */
void
zk_set_operator(struct zk *zk, const char *root, const char *digest_id)
{
	free(zk->operator_id);
	free(zk->acl_root);
	zk->operator_id = xstrdup(digest_id);
	zk->acl_root = xstrdup(root);
	zk_acl_build(zk);
}

/* The ACL a node created at path gets when the creator names none. */
const struct ACL_vector *
zk_acl_for(const struct zk *zk, const char *path)
{
	if (zk->auth == NULL)
		return &ZOO_OPEN_ACL_UNSAFE;
	if (zk->reader_id == NULL && zk->operator_id == NULL)
		return &ZOO_CREATOR_ALL_ACL;
	return &zk->acl[zk_acl_class(zk->acl_root, path)];
}

/* Create a node with the ACL given (a copy is kept until it is sent). */
void
zk_create_node_acl(struct zk *zk, const char *path, const char *data, int len, int flags,
                   const struct ACL_vector *acl, zk_reply_cb cb, void *arg)
{
	zk_request_acl(zk, ZK_OP_CREATE, path, data, len, flags, acl, cb, arg);
}

/* Replace a node's ACL if its ACL version (aversion) is still version (-1: any). */
void
zk_set_acl(struct zk *zk, const char *path, int version, const struct ACL_vector *acl,
           zk_reply_cb cb, void *arg)
{
	zk_request_acl(zk, ZK_OP_SET_ACL, path, NULL, 0, version, acl, cb, arg);
}
