/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process. */
/*
 * joblog.c: a job's log file: its output, lines of our own, and the rotation at the size
 * cap (LOG becomes LOG.1). The supervisor writes it as root, so the file and its directory
 * are opened without following symbolic links (safepath.c), and the rotation works in the
 * directory opened at the start.
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
#include "safepath.h"
#include "xmalloc.h"

/*
 * Open (creating it) the log file in l->dirfd: never through a symbolic link, and only a
 * regular file with no other name (a FIFO would block, a device or a hard link to another
 * file would be written as root). -1 with *cause (caller frees).
 */
static int
joblog_open_file(struct joblog *l, char **cause)
{
	struct stat sb;

	/* Not even opened: opening some devices does something (a tape rewinds). */
	if (fstatat(l->dirfd, l->name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(sb.st_mode) &&
	    !S_ISLNK(sb.st_mode)) {
		xasprintf(cause, "%s is not a regular file (a FIFO, device or socket?)", l->path);
		return -1;
	}
	l->fd = openat(l->dirfd, l->name,
	               O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
	if (l->fd < 0) {
		if (errno == ELOOP)
			xasprintf(cause, "%s is a symbolic link, which is not followed", l->path);
		else if (errno == ENXIO)
			xasprintf(cause, "%s is not a regular file (a FIFO with no reader?)",
			          l->path);
		else
			xasprintf(cause, "%s: %s", l->path, strerror(errno));
		return -1;
	}
	if (fstat(l->fd, &sb) != 0)
		memset(&sb, 0, sizeof sb);
	if (!S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
		xasprintf(cause, "%s is %s", l->path,
		          !S_ISREG(sb.st_mode) ? "not a regular file (a FIFO, device or socket?)"
		                               : "a file with other names (hard links)");
		close(l->fd);
		l->fd = -1;
		return -1;
	}
	l->size = (uint64_t)sb.st_size;
	return 0;
}

/* Write job output to its log; at the size cap the log becomes LOG.1 and a new one starts. */
void
joblog_write(struct joblog *l, const char *buf, size_t len)
{
	char *old, *cause;
	ssize_t n;
	size_t chunk;

	while (len > 0 && l->fd >= 0) {
		if (l->max > 0 && l->size >= l->max) {
			/* In the directory opened at the start, so nothing can redirect it. */
			xasprintf(&old, "%s.1", l->name);
			if (renameat(l->dirfd, l->name, l->dirfd, old) != 0)
				log_warn_limited(&l->warnings, "supervisor: rename %s", l->path);
			free(old);
			close(l->fd);
			if (joblog_open_file(l, &cause) != 0) {
				log_warnx("supervisor: cannot open log file %s", cause);
				free(cause);
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

/*
 * Open the log file at l->path, creating its directory, without following a symbolic link
 * anywhere on the path. With check (the supervisor runs as root), refuse a directory that
 * anyone but root can write: whoever can write it can make root write elsewhere.
 * -1 with *cause (caller frees).
 */
int
joblog_open(struct joblog *l, int check, char **cause)
{
	char *dir, *slash, *why;

	*cause = NULL;
	slash = strrchr(l->path, '/');
	if (slash == NULL || slash[1] == '\0') {
		xasprintf(cause, "%s is not an absolute path to a file", l->path);
		return -1;
	}
	dir = slash == l->path ? xstrdup("/") : xstrndup(l->path, (size_t)(slash - l->path));
	l->name = xstrdup(slash + 1);
	l->dirfd = safepath_open_dir(dir, SAFEPATH_CREATE | (check ? SAFEPATH_CHECK : 0), &why);
	free(dir);
	if (l->dirfd < 0) {
		xasprintf(cause,
		          "%s: put job logs in a directory only root can write, such as "
		          "/var/log/leasekeeper",
		          why);
		free(why);
		return -1;
	}
	return joblog_open_file(l, cause);
}

/* Close the log and say what writes were held back. */
void
joblog_close(struct joblog *l)
{
	if (l->fd >= 0)
		close(l->fd);
	if (l->dirfd >= 0)
		close(l->dirfd);
	l->fd = l->dirfd = -1;
	log_limit_flush(&l->warnings);
	free(l->path);
	free(l->name);
	l->path = l->name = NULL;
}
