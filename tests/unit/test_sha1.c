/* SPDX-License-Identifier: Apache-2.0 */
/* test_sha1.c: SHA-1 against FIPS 180 vectors, and ZooKeeper's digest identity. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sha1.h"

/* The hex of sha1(text). */
static void
hex(const char *text, size_t len, char out[2 * SHA1_LEN + 1])
{
	unsigned char d[SHA1_LEN];
	int i;

	sha1(text, len, d);
	for (i = 0; i < SHA1_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void
test_vectors(void **state)
{
	char h[2 * SHA1_LEN + 1], *million = malloc(1000000);

	(void)state;
	hex("abc", 3, h);
	assert_string_equal(h, "a9993e364706816aba3e25717850c26c9cd0d89d");
	hex("", 0, h);
	assert_string_equal(h, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, h);
	assert_string_equal(h, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	memset(million, 'a', 1000000);
	hex(million, 1000000, h);
	assert_string_equal(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	free(million);
}

static void
test_zk_digest(void **state)
{
	char *id = sha1_zk_digest_id("super:secret");

	(void)state;
	/* base64(sha1("super:secret")), as ZooKeeper's DigestAuthenticationProvider makes it */
	assert_string_equal(id, "super:lK75jTNcA+U9vtVEw5vB51mj/w4=");
	free(id);
	assert_null(sha1_zk_digest_id("no-colon"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vectors),
	    cmocka_unit_test(test_zk_digest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
