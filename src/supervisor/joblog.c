/* Runs in: the supervisor process. */
/*
 * joblog.c: a job's log file: its output, lines of our own, and the rotation at the size
 * cap (LOG becomes LOG.1).
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "joblog.h"
#include "log.h"
#include "xmalloc.h"

/* Write job output to its log; at the size cap the log becomes LOG.1 and a new one starts. */
void
joblog_write(struct joblog *l, const char *buf, size_t len)
{
	char *old;
	ssize_t n;
	size_t chunk;

	while (len > 0 && l->fd >= 0) {
		if (l->max > 0 && l->size >= l->max) {
			xasprintf(&old, "%s.1", l->path);
			if (rename(l->path, old) != 0)
				log_warn_limited(&l->warnings, "supervisor: rename %s", l->path);
			free(old);
			close(l->fd);
			l->fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
			if (l->fd < 0) {
				log_warn_limited(&l->warnings, "supervisor: open %s", l->path);
				return;
			}
			l->size = 0;
		}
		/* Never past the cap: the rest goes to the next file. */
		chunk = len;
		if (l->max > 0 && chunk > l->max - l->size)
			chunk = (size_t)(l->max - l->size);
		n = write(l->fd, buf, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_warn_limited(&l->warnings, "supervisor: write %s", l->path);
			return;
		}
		buf += n;
		len -= (size_t)n;
		l->size += (uint64_t)n;
	}
}

/* A line of our own in the job's log. */
void
joblog_note(struct joblog *l, const char *job, const char *what)
{
	char stamp[40], *line;
	int n;

	clock_iso8601(clock_wall_ms(), stamp, sizeof stamp);
	n = xasprintf(&line, "--- leasekeeper %s: job %s %s\n", stamp, job, what);
	joblog_write(l, line, (size_t)n);
	free(line);
}

/* Open (creating its directory) the log file at l->path. */
int
joblog_open(struct joblog *l)
{
	char dir[PATH_MAX], *slash;
	struct stat sb;

	snprintf(dir, sizeof dir, "%s", l->path);
	for (slash = strchr(dir + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(dir, 0750) != 0 && errno != EEXIST)
			return -1;
		*slash = '/';
	}
	l->fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (l->fd < 0)
		return -1;
	if (fstat(l->fd, &sb) == 0)
		l->size = (uint64_t)sb.st_size;
	return 0;
}

/* Close the log and say what writes were held back. */
void
joblog_close(struct joblog *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	log_limit_flush(&l->warnings);
	free(l->path);
	l->path = NULL;
}
