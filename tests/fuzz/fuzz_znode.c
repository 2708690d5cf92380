/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_znode.c: the children of a lock folder as the mutex and semaphore read them
 * (znode.c): anyone who may create there (a Curator process, any client with CREATE) names
 * them. The first byte picks the base ("lock-", "lease-", "-", none); the rest is names, one
 * a line, at most 64.
 *
 * A sequence that parses (znode_sequence) is a 32-bit number written as the server writes
 * it, or its wrapped form; the names sorted (znode_sort) are the same names, the ones with a
 * sequence first by it as an unsigned 32-bit number, then the others by their sort text;
 * a name that znode_valid_name accepts is one path element of UTF-8 the server takes; a
 * name znode_is_protected finds carries the prefix and the uuid.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "znode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ZNODE_MAX 64

static const char fuzz_uuid[] = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

/* The text after the last base in name (all of it without one): what Curator sorts by. */
static const char *
fuzz_znode_text(const char *name, const char *base)
{
	const char *p, *last = NULL;

	if (*base == '\0')
		return name;
	for (p = strstr(name, base); p != NULL; p = strstr(p + 1, base))
		last = p;
	return last == NULL ? name : last + strlen(base);
}

/* Whether name is UTF-8 of characters up to U+FFFF, none a control character. */
static int
fuzz_znode_utf8(const char *name)
{
	size_t len = strlen(name), off, n;
	uint32_t cp;

	for (off = 0; off < len; off += n)
		if ((n = utf8_char(name + off, len - off, &cp)) == 0 || cp < 0x20 || cp > 0xffff)
			return 0;
	return 1;
}

/* A sequence that parses: in range, and the suffix as the server writes it (or wrapped). */
static void
fuzz_znode_one(const char *name, const char *base)
{
	const char *s = fuzz_znode_text(name, base);
	char want[16], *cause = NULL;
	int64_t seq;

	if (znode_sequence(name, base, &seq) == 0) {
		if (seq > INT32_MAX || seq < INT32_MIN)
			abort();
		if (seq >= 0) {
			snprintf(want, sizeof want, "%010lld", (long long)seq);
			if (strcmp(s, want) != 0)
				abort();
		} else if (s[0] != '-' || (strlen(s) != 10 && strlen(s) != 11) ||
		           strspn(s + 1, "0123456789") != strlen(s) - 1 ||
		           strtoll(s, NULL, 10) != seq)
			abort();
	}
	if (znode_valid_name(name, &cause)) {
		if (*name == '\0' || strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
		    strcmp(name, "..") == 0 || !fuzz_znode_utf8(name))
			abort();
	} else if (cause == NULL || *cause == '\0')
		abort();
	free(cause);
	if (znode_is_protected(name, fuzz_uuid) &&
	    (strncmp(name, ZNODE_PROTECTED_PREFIX, 3) != 0 ||
	     strncmp(name + 3, fuzz_uuid, ZNODE_UUID_LEN) != 0 || name[3 + ZNODE_UUID_LEN] != '-'))
		abort();
}

/* Whether a may come before b in queue order. */
static int
fuzz_znode_ordered(const char *a, const char *b, const char *base)
{
	int64_t sa, sb;
	int va = znode_sequence(a, base, &sa) == 0, vb = znode_sequence(b, base, &sb) == 0;

	if (va && vb && (uint32_t)sa != (uint32_t)sb)
		return (uint32_t)sa < (uint32_t)sb;
	if (va != vb)
		return va;
	return strcmp(fuzz_znode_text(a, base), fuzz_znode_text(b, base)) <= 0;
}

/* Sort the names and check the order, and that each is there as many times as before. */
static void
fuzz_znode_sort(char **names, size_t n, const char *base)
{
	char *sorted[FUZZ_ZNODE_MAX];
	size_t i, j, before, after;

	memcpy(sorted, names, n * sizeof *names);
	znode_sort(sorted, n, base);
	for (i = 0; i + 1 < n; i++)
		if (!fuzz_znode_ordered(sorted[i], sorted[i + 1], base))
			abort();
	for (i = 0; i < n; i++) {
		for (before = after = j = 0; j < n; j++) {
			before += strcmp(names[j], names[i]) == 0;
			after += strcmp(sorted[j], names[i]) == 0;
		}
		if (before != after)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *bases[] = {"lock-", "lease-", "-", ""};
	char *text, *names[FUZZ_ZNODE_MAX], *p, *nl;
	const char *base;
	size_t n = 0;

	if (size < 1 || size > 8192)
		return 0;
	base = bases[data[0] % 4];
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	for (p = text; n < FUZZ_ZNODE_MAX; p = nl + 1) {
		names[n++] = p;
		if ((nl = strchr(p, '\n')) == NULL)
			break;
		*nl = '\0';
	}
	for (size_t i = 0; i < n; i++)
		fuzz_znode_one(names[i], base);
	fuzz_znode_sort(names, n, base);
	free(text);
	return 0;
}
