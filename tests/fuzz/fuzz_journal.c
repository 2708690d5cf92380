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
		if (l->record != NULL && !json_is_object(l->record))
			abort();
	}
	runjournal_free(rj);
	if (unlink(path) != 0 && errno != ENOENT)
		abort();
	return 0;
}
