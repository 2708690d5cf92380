/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process. */
/* joblog.h: a job's log file. */
#ifndef JOBLOG_H
#define JOBLOG_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"

/* A job's log file; path NULL: the job inherits the supervisor's output. */
struct joblog {
	int fd;    /* -1 until opened */
	int dirfd; /* the log's directory, -1 until opened */
	char *path;
	char *name;   /* the file's name in dirfd */
	uint64_t max; /* size cap, 0: none */
	uint64_t size;
	struct log_limit warnings; /* a full disk fails every write: say so once a while */
};

int joblog_open(struct joblog *, int check, char **cause);
void joblog_write(struct joblog *, const char *buf, size_t len);
void joblog_note(struct joblog *, const char *job, const char *what);
void joblog_close(struct joblog *);

#endif
