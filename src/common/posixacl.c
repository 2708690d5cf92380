/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/*
 * posixacl.c: the named users and groups a file's POSIX access ACL lets write (or read) it.
 *
 * With an ACL the mode's group bits are the ACL's mask, and a named user's entry shows only
 * there: a root:root 0660 file may be writable by nobody. So whoever judges a file by its
 * mode must also read the ACL. It is read from the system.posix_acl_access extended
 * attribute in the kernel's format (no libacl): a little-endian u32 version, 2, then
 * entries of 8 bytes {u16 tag, u16 perm, u32 id}. A named entry's permission is what it
 * and the mask both grant. The owner, the owning group and others are in the mode bits and
 * left to the caller.
 */

#include <sys/xattr.h>

#include <errno.h>
#include <string.h>

#include "posixacl.h"

/* The entries' tags (linux/posix_acl_xattr.h). */
#define POSIXACL_USER_OBJ  0x01
#define POSIXACL_USER_TAG  0x02
#define POSIXACL_GROUP_OBJ 0x04
#define POSIXACL_GROUP_TAG 0x08
#define POSIXACL_MASK      0x10
#define POSIXACL_OTHER     0x20

#define POSIXACL_VERSION 2

/* A little-endian integer of n bytes at p. */
static uint32_t
posixacl_le(const unsigned char *p, size_t n)
{
	uint32_t v = 0;

	while (n-- > 0)
		v = v << 8 | p[n];
	return v;
}

/*
 * Whether the access ACL data (len bytes, as read from the attribute) gives perm (a
 * POSIXACL_READ or POSIXACL_WRITE bit) to a named user or group other than root's (id 0):
 * POSIXACL_USER or POSIXACL_GROUP with *id for the first such entry, POSIXACL_NONE, or
 * POSIXACL_BAD when data is not an ACL the kernel would store (size, version, unknown tag
 * or permission bits, not one owner, owning group and other entry, or named entries
 * without a mask).
 */
int
posixacl_grants(const void *data, size_t len, unsigned perm, uint32_t *id)
{
	const unsigned char *p = data, *e;
	unsigned tag, bits, mask = 7, nobj[3] = {0, 0, 0}, nmask = 0, nnamed = 0;
	int found = POSIXACL_NONE;
	size_t i, n;

	*id = 0;
	if (len < 4 || len > POSIXACL_MAX_BYTES || (len - 4) % 8 != 0 ||
	    posixacl_le(p, 4) != POSIXACL_VERSION)
		return POSIXACL_BAD;
	n = (len - 4) / 8;
	for (i = 0; i < n; i++) {
		e = p + 4 + 8 * i;
		if (posixacl_le(e, 2) == POSIXACL_MASK)
			mask = posixacl_le(e + 2, 2), nmask++;
	}
	for (i = 0; i < n; i++) {
		e = p + 4 + 8 * i;
		tag = posixacl_le(e, 2);
		bits = posixacl_le(e + 2, 2);
		if (bits & ~7u)
			return POSIXACL_BAD;
		switch (tag) {
		case POSIXACL_USER_OBJ:
			nobj[0]++;
			break;
		case POSIXACL_GROUP_OBJ:
			nobj[1]++;
			break;
		case POSIXACL_OTHER:
			nobj[2]++;
			break;
		case POSIXACL_MASK:
			break;
		case POSIXACL_USER_TAG:
		case POSIXACL_GROUP_TAG:
			nnamed++;
			if (found == POSIXACL_NONE && (bits & mask & perm) &&
			    posixacl_le(e + 4, 4) != 0) {
				found = tag == POSIXACL_USER_TAG ? POSIXACL_USER : POSIXACL_GROUP;
				*id = posixacl_le(e + 4, 4);
			}
			break;
		default:
			return POSIXACL_BAD;
		}
	}
	if (nobj[0] != 1 || nobj[1] != 1 || nobj[2] != 1 || nmask > 1 ||
	    (nnamed > 0 && nmask == 0)) {
		*id = 0;
		return POSIXACL_BAD;
	}
	return found;
}

/*
 * Why the access ACL of the file open at fd is unsafe for perm, or NULL when it has none
 * (or the file system has no ACLs) or it gives perm to no named user or group but root's;
 * *fix is the command that fixes it.
 */
const char *
posixacl_unsafe(int fd, unsigned perm, const char **fix)
{
	unsigned char buf[POSIXACL_MAX_BYTES];
	ssize_t n;
	uint32_t id;

	*fix = "setfacl -b";
	n = fgetxattr(fd, "system.posix_acl_access", buf, sizeof buf);
	if (n < 0 && (errno == ENODATA || errno == ENOTSUP))
		return NULL;
	if (n < 0 && errno == ERANGE)
		return "has an ACL too long to check";
	if (n < 0)
		return "has an ACL that cannot be read";
	switch (posixacl_grants(buf, (size_t)n, perm, &id)) {
	case POSIXACL_NONE:
		return NULL;
	case POSIXACL_USER:
		return perm & POSIXACL_WRITE ? "is writable by another user through an ACL"
		                             : "is readable by another user through an ACL";
	case POSIXACL_GROUP:
		return perm & POSIXACL_WRITE ? "is writable by another group through an ACL"
		                             : "is readable by another group through an ACL";
	default:
		return "has an ACL that cannot be understood";
	}
}
