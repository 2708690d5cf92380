/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker (writes it) and the one-shot commands that create control records. */
/* rolesrec.h: <root>/roles, the workers' digest id (and the reader's), read bounded. */
#ifndef ROLESREC_H
#define ROLESREC_H

#define ROLESREC_MAX_DATA 4096 /* bytes of the node read at most */
#define ROLESREC_MAX_ID   93   /* a digest id: USER (1-64) ':' 28 characters of base64 */

/* The identities a roles node names: each a valid digest id, or "" (none, or not usable). */
struct rolesrec {
	char workers[ROLESREC_MAX_ID + 1];
	char reader[ROLESREC_MAX_ID + 1];
};

char *rolesrec_dump(const char *workers, const char *reader);
int rolesrec_parse(const char *data, int len, const char *own, struct rolesrec *);

#endif
