/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_journal.c: an entry of the journal of open runs (<state_dir>/open-runs/, runjournal.c)
 * as a worker's next process reads it (runjournal_load). The journal is written by the
 * worker itself under a 0700 folder, but a crash can leave any prefix of a write, and a file
 * someone put there must not crash the worker: each entry is bounded, parsed and validated.
 *
 * The input is the entry's file name, a newline, and its content (no newline: the content
 * alone, under a run id's name). The loader either drops the entry (and removes its file),
 * leaves it (another node's), or returns it with a non-empty job and, for a run, the run id
 * it was filed under.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "runjournal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[64];
static char fuzz_entries[96];

/* At exit: the folders go (each input's file is removed after it). */
static void
fuzz_journal_cleanup(void)
{
	rmdir(fuzz_entries);
	rmdir(fuzz_dir);
}

static void
fuzz_journal_setup(void)
{
	if (fuzz_dir[0] != '\0')
		return;
	strcpy(fuzz_dir, "/tmp/lk-fuzz-journal-XXXXXX");
	if (mkdtemp(fuzz_dir) == NULL)
		abort();
	snprintf(fuzz_entries, sizeof fuzz_entries, "%s/%s", fuzz_dir, RUNJOURNAL_DIR);
	atexit(fuzz_journal_cleanup);
}

/* name as a file name of the folder: NULL when it cannot be one (empty, '/', "." or "..") */
static const char *
fuzz_journal_name(const char *name)
{
	if (name[0] == '\0' || strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return NULL;
	return name;
}

/* Whether name is one a worker's journal could hold (an oracle of our own). */
static int
fuzz_journal_plausible(const char *name)
{
	size_t n = strlen(name);

	if (strncmp(name, "+claim.", 7) == 0 || strncmp(name, "+chain.", 7) == 0)
		name += 7, n -= 7;
	return n > 0 && n <= 200 && name[0] != '.' &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
	           n;
}

/*
 * What the load left on disk: a returned entry stays (until settled); another node's
 * entry under a name a journal could hold is never removed; an entry of ours that was not
 * returned is removed, not left to be read again and again.
 */
static void
fuzz_journal_disk(const char *fname, const char *path, const uint8_t *body, size_t blen,
                  int returned)
{
	int exists = access(path, F_OK) == 0;
	json_t *o = blen > 0 && blen <= RUNJOURNAL_MAX_SIZE
	                ? json_loadb((const char *)body, blen, 0, NULL)
	                : NULL;
	const json_t *node = json_object_get(o, "node");
	int ours = json_is_string(node) && strcmp(json_string_value(node), "w1") == 0;
	int others = json_is_string(node) && !ours;

	if (returned && !exists)
		abort();
	if (others && fuzz_journal_plausible(fname) && !exists)
		abort(); /* another worker's entry removed */
	if (fname[0] != '.' && exists && !returned && !others)
		abort(); /* ours, or nobody's, left to be read again at each start */
	if (o != NULL)
		json_decref(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t nlen = nl != NULL ? (size_t)(nl - data) : 0;
	const uint8_t *body = nl != NULL ? nl + 1 : data;
	size_t blen = size - (size_t)(body - data);
	char name[256], path[512];
	struct runjournal *rj;
	struct runjournal_left *l;
	const char *fname;
	int fd, i;

	fuzz_journal_setup();
	if (nlen >= sizeof name || memchr(data, '\0', nlen) != NULL)
		return 0;
	memcpy(name, data, nlen);
	name[nlen] = '\0';
	if ((fname = fuzz_journal_name(nl != NULL ? name : "w1-1795760000-1")) == NULL)
		return 0;
	rj = runjournal_open(fuzz_dir, "w1"); /* makes the folder */
	snprintf(path, sizeof path, "%s/%s", fuzz_entries, fname);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		runjournal_free(rj);
		return 0; /* a name the file system refuses */
	}
	if (blen > 0 && write(fd, body, blen) != (ssize_t)blen)
		abort();
	close(fd);
	runjournal_load(rj);
	for (i = 0; (l = runjournal_left(rj, i)) != NULL; i++) {
		if (l->job == NULL || l->job[0] == '\0' || l->run_id == NULL)
			abort();
		if (strcmp(l->run_id, fname) != 0)
			abort(); /* only the entry written here */
		if (!l->claim && strncmp(fname, "+claim.", 7) == 0)
			abort();
		if (l->chain != (strncmp(fname, "+chain.", 7) == 0) ||
		    (l->chain && !json_is_array(json_object_get(l->claimed, "gen"))))
			abort();
		if (l->record != NULL && !json_is_object(l->record))
			abort();
		if (l->after != NULL && !json_is_array(l->after))
			abort();
	}
	fuzz_journal_disk(fname, path, body, blen, runjournal_left(rj, 0) != NULL);
	runjournal_free(rj);
	if (unlink(path) != 0 && errno != ENOENT)
		abort();
	return 0;
}
