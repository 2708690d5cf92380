/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_webdoc.c: what `leasekeeper web` reads from outside before it answers or serves: the
 * first byte chooses: 0 a Host header, a listen address, a URI, cookie and Authorization
 * header (http_host_ok, webdoc_loopback, webdoc_token_ok), 1 a view's JSON (from ZooKeeper, anyone's to write) cut to the bound
 * the second byte gives (webdoc_trim): every string must come out within it, and whole.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "http.h"
#include "webdoc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every string of v at most max bytes (and the "..." that marks a cut). */
static void
fuzz_check(json_t *v, size_t max)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_string(v) && json_string_length(v) > max + 3)
		abort();
	json_object_foreach(v, key, item)
		fuzz_check(item, max);
	json_array_foreach(v, i, item)
		fuzz_check(item, max);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	json_t *v;
	char *out;
	size_t max;

	if (size < 2)
		return 0;
	if (data[0] % 2 == 0) {
		s = malloc(size);
		memcpy(s, data + 1, size - 1);
		s[size - 1] = '\0';
		(void)http_host_ok(s, "alpha");
		(void)webdoc_loopback(s);
		(void)webdoc_token_ok(s, s, s, "0123456789abcdef");
		free(s);
		return 0;
	}
	max = data[1];
	v = json_loadb((const char *)data + 2, size - 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (v == NULL)
		return 0;
	v = json_pack("[o]", v); /* a view is an object: strings are cut inside a container */
	webdoc_trim(v, max);
	fuzz_check(v, max);
	out = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	if (out == NULL)
		abort(); /* a cut left a string that is not UTF-8 */
	free(out);
	json_decref(v);
	return 0;
}
