/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process (pure: no ZooKeeper calls). */
/*
 * rworder.c: Curator's read-write lock queue: node order, who holds, whom to watch.
 *
 * Curator's InterProcessReadWriteLock names its nodes "_c_<uuid>-__READ__<seq10>" and
 * "_c_<uuid>-__WRIT__<seq10>" in one folder and sorts them all by one text: the name after
 * the last "__READ__", and of that the part after the last "__WRIT__" (its
 * SortingLockInternalsDriver.fixForSorting), so both kinds share one queue by sequence. As
 * in znode.c, valid suffixes are ordered as unsigned 32-bit numbers (which agrees with
 * Curator until the 2^31 wrap), then the rest by text.
 *
 * A writer holds at the head and watches its immediate predecessor (Curator's standard
 * driver with one lease). A reader holds when no writer's node (a name containing
 * "__WRIT__") is ahead of its own. Curator's reader watches the *first* writer ahead; we
 * watch the *last* writer ahead instead: it cannot be deleted as holder before every
 * writer ahead of it is gone, so the reader wakes once per hand-over, not once per writer.
 * Nodes are only appended behind a contender, so when the one writer ahead goes away (or,
 * for a writer, the head right in front) we hold without listing again, unless names that
 * do not parse or sequences near the wrap were seen.
 */

#include <stdlib.h>
#include <string.h>

#include "rworder.h"
#include "znode.h"

#define RWORDER_NEAR_WRAP (INT32_MAX - (1 << 20))

/* What follows the last occurrence of base in s, or s itself (Curator's fixForSorting). */
static const char *
rworder_after(const char *s, const char *base)
{
	const char *p, *last = NULL;

	for (p = strstr(s, base); p != NULL; p = strstr(p + 1, base))
		last = p;
	return last == NULL ? s : last + strlen(base);
}

/* The text Curator sorts a read-write lock's node by. */
static const char *
rworder_sort_text(const char *name)
{
	return rworder_after(rworder_after(name, RWORDER_READ), RWORDER_WRITE);
}

/* The sequence of a node as the server writes it; -1 when it does not parse. */
static int
rworder_sequence(const char *name, int64_t *seq)
{
	return znode_sequence(rworder_sort_text(name), "", seq);
}

/* Whether a node is a writer's (Curator: the name contains "__WRIT__"). */
int
rworder_is_writer(const char *name)
{
	return strstr(name, RWORDER_WRITE) != NULL;
}

/* Order two nodes: valid sequences first, as unsigned numbers; then the rest by text. */
static int
rworder_compare(const char *a, const char *b)
{
	int64_t sa, sb;
	int va = rworder_sequence(a, &sa) == 0, vb = rworder_sequence(b, &sb) == 0;

	if (va && vb && (uint32_t)sa != (uint32_t)sb)
		return (uint32_t)sa < (uint32_t)sb ? -1 : 1;
	if (va && vb)
		return strcmp(a, b);
	if (va != vb)
		return va ? -1 : 1;
	return strcmp(rworder_sort_text(a), rworder_sort_text(b));
}

static int
rworder_sort_cb(const void *a, const void *b)
{
	return rworder_compare(*(char *const *)a, *(char *const *)b);
}

/* Sort a read-write lock folder's children into queue order. */
void
rworder_sort(char **names, size_t n)
{
	qsort(names, n, sizeof *names, rworder_sort_cb);
}

/* Find own in a sorted listing and say whether we hold and, if not, whom to watch. */
void
rworder_place(char *const *sorted, int n, const char *own, int writer, struct rworder_place *out)
{
	int i, writers = 0, last_writer = -1;
	int64_t seq;

	memset(out, 0, sizeof *out);
	out->index = out->watch = -1;
	out->ok = 1;
	for (i = 0; i < n; i++) {
		if (rworder_sequence(sorted[i], &seq) != 0)
			out->ok = 0;
		else if (seq < 0 || seq > RWORDER_NEAR_WRAP) {
			out->ok = 0;
			out->wrapped |= seq < 0;
		}
		if (out->index < 0 && strcmp(sorted[i], own) == 0)
			out->index = i;
		else if (out->index < 0 && rworder_is_writer(sorted[i])) {
			writers++;
			last_writer = i;
		}
	}
	if (out->index < 0)
		return;
	if (writer) {
		out->holds = out->index == 0;
		out->watch = out->holds ? -1 : out->index - 1;
		out->shortcut = out->index == 1 && out->ok;
		return;
	}
	out->holds = writers == 0;
	out->watch = last_writer;
	out->shortcut = writers == 1 && out->ok;
}
