/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* sha1.h: SHA-1, and ZooKeeper's digest identity of a USER:PASSWORD credential. */
#ifndef SHA1_H
#define SHA1_H

#include <stddef.h>

#define SHA1_LEN 20

void sha1(const void *data, size_t len, unsigned char out[SHA1_LEN]);
char *sha1_zk_digest_id(const char *auth);

#endif
