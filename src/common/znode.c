/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/*
 * znode.c: ZooKeeper node names and paths.
 *
 * Curator names a protected sequential node "_c_<uuid>-<base><seq10>" and sorts a lock
 * folder by the text after the last occurrence of <base> ("lock-" or "lease-"), as
 * strings. For the ten-digit, zero-padded suffixes the server writes that is numeric
 * order. Once the parent's cversion passes 2^31 the server writes negative suffixes,
 * which sort in front as strings although they are the newest nodes: we order valid
 * suffixes as unsigned 32-bit numbers instead, which agrees with Curator until the wrap
 * and stays right after it, and callers report the wrap.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

/* Whether ZooKeeper's PathUtils.validatePath refuses code point cp in a path. */
static int
znode_refused_char(uint32_t cp)
{
	/*
	 * The server checks UTF-16 units: characters beyond U+FFFF become surrogates
	 * (U+D800-U+DFFF), which it refuses along with the rest of U+D800-U+F8FF.
	 */
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xd800 && cp <= 0xf8ff) ||
	       cp >= 0xfff0;
}

/*
 * Whether name is a valid single ZooKeeper node name: UTF-8, none of the characters the
 * server refuses, not "." or ".."; if not, *cause says why, which character and where.
 */
int
znode_valid_name(const char *name, char **cause)
{
	size_t len = strlen(name), off, n, pos;
	uint32_t cp;
	char *q;

	if (*name == '\0') {
		*cause = xstrdup("empty name: give a name such as \"backup\"");
		return 0;
	}
	q = utf8_quote(name, len);
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		xasprintf(cause, "%s is not allowed as a ZooKeeper node name: pick another name",
		          q);
		goto bad;
	}
	for (off = 0, pos = 1; off < len; off += n, pos++) {
		if ((n = utf8_char(name + off, len - off, &cp)) == 0) {
			xasprintf(cause,
			          "%s is not UTF-8 (byte \\x%02x at byte %zu): write the name in "
			          "UTF-8, or use letters, digits, '-', '_' and '.'",
			          q, (unsigned char)name[off], off + 1);
			goto bad;
		}
		if (cp == '/') {
			xasprintf(cause,
			          "%s contains '/': a name is one path element (use lock_path for "
			          "a full path)",
			          q);
			goto bad;
		}
		if (znode_refused_char(cp)) {
			xasprintf(cause,
			          "%s has character %zu, U+%04X, which ZooKeeper refuses in a node "
			          "name (control characters, U+007F-U+009F, U+D800-U+F8FF, "
			          "U+FFF0-U+FFFF and anything beyond U+FFFF, such as emoji): use "
			          "letters, digits, '-', '_' and '.'",
			          q, pos, (unsigned)cp);
			goto bad;
		}
	}
	if (len > 255) {
		*cause = xstrdup("name longer than 255 bytes: shorten it");
		goto bad;
	}
	free(q);
	return 1;
bad:
	free(q);
	return 0;
}

/* Whether path is a valid absolute ZooKeeper path other than "/"; if not, *cause says why. */
int
znode_valid_path(const char *path, char **cause)
{
	const char *p, *slash;
	char *element, *why;

	if (path[0] != '/') {
		xasprintf(cause, "\"%s\" is not absolute: start it with '/', e.g. \"/locks/%s\"",
		          path, path);
		return 0;
	}
	if (path[1] == '\0') {
		*cause = xstrdup("\"/\" cannot be used: name a node below it, e.g. \"/locks/job\"");
		return 0;
	}
	if (path[strlen(path) - 1] == '/') {
		xasprintf(cause, "\"%s\" ends with '/': remove the trailing slash", path);
		return 0;
	}
	if (strcmp(path, "/zookeeper") == 0 || strncmp(path, "/zookeeper/", 11) == 0) {
		xasprintf(cause,
		          "\"%s\" is inside /zookeeper, which the server reserves: pick another "
		          "path",
		          path);
		return 0;
	}
	for (p = path + 1; *p != '\0'; p = slash + 1) {
		slash = strchr(p, '/');
		if (slash == NULL)
			slash = p + strlen(p);
		if (slash == p) {
			xasprintf(cause,
			          "\"%s\" has an empty element (\"//\"): remove the extra slash",
			          path);
			return 0;
		}
		element = xstrndup(p, (size_t)(slash - p));
		if (!znode_valid_name(element, &why)) {
			xasprintf(cause, "\"%s\": %s", path, why);
			free(why);
			free(element);
			return 0;
		}
		free(element);
		if (*slash == '\0')
			break;
	}
	return 1;
}

/* A random (version 4) UUID in its 36-character text form. */
void
znode_uuid(char out[ZNODE_UUID_LEN + 1])
{
	unsigned char b[16];
	ssize_t n;

	do
		n = getrandom(b, sizeof b, 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof b)
		fatal("getrandom");
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, ZNODE_UUID_LEN + 1,
	         "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
	         b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
	         b[15]);
}

/* parent + "/" + child, without doubling the slash under "/". */
char *
znode_join(const char *parent, const char *child)
{
	char *out;

	if (strcmp(parent, "/") == 0)
		xasprintf(&out, "/%s", child);
	else
		xasprintf(&out, "%s/%s", parent, child);
	return out;
}

/* The last element of a path. */
const char *
znode_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash == NULL ? path : slash + 1;
}

/* Write the parent of path into out; -1 for "/" or when out is too small. */
int
znode_parent(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (slash == NULL || strcmp(path, "/") == 0)
		return -1;
	n = slash == path ? 1 : (size_t)(slash - path);
	if (n + 1 > len)
		return -1;
	memcpy(out, path, n);
	out[n] = '\0';
	return 0;
}

/* Whether a node name carries Curator's protection prefix with this uuid. */
int
znode_is_protected(const char *name, const char *uuid)
{
	size_t plen = strlen(ZNODE_PROTECTED_PREFIX);

	return strncmp(name, ZNODE_PROTECTED_PREFIX, plen) == 0 &&
	       strncmp(name + plen, uuid, ZNODE_UUID_LEN) == 0 &&
	       name[plen + ZNODE_UUID_LEN] == '-';
}

/* The text Curator sorts by: what follows the last occurrence of base, or the whole name. */
static const char *
znode_fix_for_sorting(const char *name, const char *base)
{
	const char *p, *last = NULL;
	size_t blen = strlen(base);

	if (blen == 0)
		return name;
	for (p = strstr(name, base); p != NULL; p = strstr(p + 1, base))
		last = p;
	return last == NULL ? name : last + blen;
}

/*
 * Parse the sequence suffix after base as the server writes it (printf "%010d"): ten
 * digits, or after the wrap a '-' and nine digits ("-000000042", never "-000000000") or ten
 * not starting with 0 ("-2147483648"). Only these forms order numerically exactly as they
 * order as strings; another ("-0000000042", a second spelling of -42) is no sequence.
 */
int
znode_sequence(const char *name, const char *base, int64_t *seq)
{
	const char *s = znode_fix_for_sorting(name, base), *p = s;
	int64_t v = 0;
	int neg = 0, digits = 0;

	if (*p == '-') {
		neg = 1;
		p++;
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (++digits > 10)
			return -1;
	}
	if (*p != '\0' || (!neg && digits != 10) || (neg && digits == 9 && v == 0) ||
	    (neg && digits == 10 && s[1] == '0') || (neg && digits < 9))
		return -1;
	if (neg)
		v = -v;
	if (v > INT32_MAX || v < INT32_MIN)
		return -1;
	*seq = v;
	return 0;
}

/*
 * Order two children of a lock folder. Names with a valid sequence come first, by their
 * sequence read as an unsigned 32-bit number; others follow, by their sort text.
 */
static int
znode_compare(const char *a, const char *b, const char *base)
{
	int64_t sa, sb;
	int va = znode_sequence(a, base, &sa) == 0, vb = znode_sequence(b, base, &sb) == 0;
	uint32_t ua, ub;

	if (va && vb) {
		ua = (uint32_t)sa;
		ub = (uint32_t)sb;
		if (ua != ub)
			return ua < ub ? -1 : 1;
		return strcmp(a, b);
	}
	if (va != vb)
		return va ? -1 : 1;
	return strcmp(znode_fix_for_sorting(a, base), znode_fix_for_sorting(b, base));
}

static const char *znode_sort_base;

static int
znode_sort_cb(const void *a, const void *b)
{
	return znode_compare(*(char *const *)a, *(char *const *)b, znode_sort_base);
}

/* Sort the children of a lock folder into queue order. */
void
znode_sort(char **names, size_t n, const char *base)
{
	znode_sort_base = base;
	qsort(names, n, sizeof *names, znode_sort_cb);
}
