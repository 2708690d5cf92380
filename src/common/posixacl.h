/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* posixacl.h: who a POSIX access ACL lets write (or read) a file besides its mode bits. */
#ifndef POSIXACL_H
#define POSIXACL_H

#include <stddef.h>
#include <stdint.h>

/* The permission bits of an ACL entry. */
#define POSIXACL_READ  4
#define POSIXACL_WRITE 2

/* The most entries read; a longer ACL is refused unread. */
#define POSIXACL_MAX_ENTRIES 1024
#define POSIXACL_MAX_BYTES   (4 + 8 * POSIXACL_MAX_ENTRIES)

/* posixacl_grants' answers. */
#define POSIXACL_BAD   -1 /* not a valid access ACL */
#define POSIXACL_NONE  0  /* no named user or group but root's gets perm */
#define POSIXACL_USER  1  /* a named user (*id) gets perm */
#define POSIXACL_GROUP 2  /* a named group (*id) gets perm */

int posixacl_grants(const void *data, size_t len, unsigned perm, uint32_t *id);
const char *posixacl_unsafe(int fd, unsigned perm, const char **fix);

#endif
