/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* znode.h: ZooKeeper node names and paths: validation, Curator's protected names and order. */
#ifndef ZNODE_H
#define ZNODE_H

#include <stddef.h>
#include <stdint.h>

#define ZNODE_UUID_LEN         36
#define ZNODE_PROTECTED_PREFIX "_c_"

int znode_valid_name(const char *name, char **cause);
int znode_valid_path(const char *path, char **cause);
void znode_uuid(char out[ZNODE_UUID_LEN + 1]);
char *znode_join(const char *parent, const char *child);
const char *znode_basename(const char *path);
int znode_parent(const char *path, char *out, size_t len);

int znode_is_protected(const char *name, const char *uuid);
int znode_sequence(const char *name, const char *base, int64_t *seq);
void znode_sort(char **names, size_t n, const char *base);

#endif
