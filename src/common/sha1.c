/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/*
 * sha1.c: SHA-1 (FIPS 180-4) and ZooKeeper's digest identity, base64(sha1("USER:PASSWORD")),
 * which an ACL entry names a digest user by (init-auth prints it; [zookeeper] reader takes
 * it). Not for anything that needs a strong hash: ZooKeeper chose SHA-1, we only match it.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sha1.h"
#include "xmalloc.h"

struct sha1 {
	uint32_t h[5];
	unsigned char block[64];
	size_t used;    /* bytes in block */
	uint64_t total; /* bytes hashed */
};

static uint32_t
sha1_rol(uint32_t x, int n)
{
	return x << n | x >> (32 - n);
}

/* One 64-byte block into the state. */
static void
sha1_block(struct sha1 *s, const unsigned char *p)
{
	uint32_t w[80], a, b, c, d, e, f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (i = 16; i < 80; i++)
		w[i] = sha1_rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = s->h[0];
	b = s->h[1];
	c = s->h[2];
	d = s->h[3];
	e = s->h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = sha1_rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = sha1_rol(b, 30);
		b = a;
		a = t;
	}
	s->h[0] += a;
	s->h[1] += b;
	s->h[2] += c;
	s->h[3] += d;
	s->h[4] += e;
}

/* Add len bytes. */
static void
sha1_update(struct sha1 *s, const unsigned char *p, size_t len)
{
	size_t n;

	s->total += len;
	while (len > 0) {
		n = 64 - s->used < len ? 64 - s->used : len;
		memcpy(s->block + s->used, p, n);
		s->used += n;
		p += n;
		len -= n;
		if (s->used == 64) {
			sha1_block(s, s->block);
			s->used = 0;
		}
	}
}

/* The SHA-1 of data[0..len) into out. */
void
sha1(const void *data, size_t len, unsigned char out[SHA1_LEN])
{
	struct sha1 s = {{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}, {0}, 0, 0};
	unsigned char pad[72] = {0x80};
	uint64_t bits;
	size_t padlen;
	int i;

	sha1_update(&s, data, len);
	bits = s.total * 8;
	padlen = s.used < 56 ? 56 - s.used : 120 - s.used;
	for (i = 0; i < 8; i++)
		pad[padlen + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
	sha1_update(&s, pad, padlen + 8);
	for (i = 0; i < 5; i++) {
		out[4 * i] = (unsigned char)(s.h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s.h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s.h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s.h[i];
	}
}

/*
 * ZooKeeper's digest identity of "USER:PASSWORD": "USER:" and the base64 of its SHA-1, as
 * an ACL entry of scheme "digest" names it (caller frees). NULL if auth has no ':'.
 */
char *
sha1_zk_digest_id(const char *auth)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *colon = strchr(auth, ':');
	unsigned char d[SHA1_LEN + 1] = {0};
	char enc[29], *out;
	size_t i, o = 0;
	uint32_t v;

	if (colon == NULL)
		return NULL;
	sha1(auth, strlen(auth), d);
	for (i = 0; i < SHA1_LEN; i += 3) {
		v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 |
		    (i + 2 < SHA1_LEN ? d[i + 2] : 0);
		enc[o++] = b64[v >> 18 & 63];
		enc[o++] = b64[v >> 12 & 63];
		enc[o++] = i + 1 < SHA1_LEN ? b64[v >> 6 & 63] : '=';
		enc[o++] = i + 2 < SHA1_LEN ? b64[v & 63] : '=';
	}
	enc[o] = '\0';
	xasprintf(&out, "%.*s:%s", (int)(colon - auth), auth, enc);
	return out;
}
