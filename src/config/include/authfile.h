/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* authfile.h: ZooKeeper digest credentials read from a file only its owner can read. */
#ifndef AUTHFILE_H
#define AUTHFILE_H

#define AUTHFILE_MAX_BYTES 4096 /* a USER:PASSWORD line; anything longer is not one */

int authfile_read(const char *path, char **auth, char **cause);
int authfile_valid_auth(const char *auth);
int authfile_valid_digest_id(const char *id);

#endif
