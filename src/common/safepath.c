/* Runs in: any process (main or the supervisor). */
/*
 * safepath.c: directories that root opens for files it writes (a job's log), walked from /
 * one component at a time with O_NOFOLLOW, so that nobody who can write somewhere on the
 * path can send root elsewhere with a symbolic link, and checked so that nobody but root
 * can write the directory itself.
 *
 * Why an ancestor may be writable by others when it has the sticky bit (/tmp): there
 * nobody can rename or remove the root-owned directory below it, and a directory put
 * in its place would be theirs, which the check refuses. The directory the file is in may
 * not be: whoever can write it can remove the file and put a link in its place.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "safepath.h"
#include "xmalloc.h"

/*
 * Why a directory is not safe for root to write in, or NULL: it must be root's and
 * writable by root only (group root counts as root). An ancestor (last 0) may be writable
 * by anyone when it has the sticky bit.
 */
const char *
safepath_unsafe(const struct stat *st, int last)
{
	int sticky = !last && (st->st_mode & S_ISVTX);

	if (st->st_uid != 0)
		return "is owned by a user other than root";
	if ((st->st_mode & S_IWOTH) && !sticky)
		return "is writable by others";
	if ((st->st_mode & S_IWGRP) && st->st_gid != 0 && !sticky)
		return "is writable by its group";
	return NULL;
}

/* The cause for the component ending at end of path. */
static void
safepath_fail(char **cause, const char *path, const char *end, const char *what)
{
	xasprintf(cause, "%.*s %s", (int)(end - path), path, what);
}

/*
 * Open the directory path (absolute) for *at() calls without following a symbolic link
 * anywhere on it. Returns the descriptor, or -1 with *cause (caller frees), which names
 * the directory at fault.
 */
int
safepath_open_dir(const char *path, int flags, char **cause)
{
	const char *p = path, *name, *end = path, *why;
	char part[NAME_MAX + 1];
	struct stat st;
	size_t len;
	int fd, nfd, last;

	*cause = NULL;
	if (path[0] != '/') {
		xasprintf(cause, "%s is not an absolute path", path);
		return -1;
	}
	if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		xasprintf(cause, "/: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		while (*p == '/')
			p++;
		last = *p == '\0';
		why = "cannot be examined";
		if (fstat(fd, &st) != 0 ||
		    ((flags & SAFEPATH_CHECK) && (why = safepath_unsafe(&st, last)) != NULL)) {
			if (end == path)
				xasprintf(cause, "/ %s", why);
			else
				safepath_fail(cause, path, end, why);
			goto fail;
		}
		if (*p == '\0')
			return fd;
		name = p;
		end = p + strcspn(p, "/");
		p = end;
		len = (size_t)(end - name);
		if (len > NAME_MAX) {
			safepath_fail(cause, path, end, strerror(ENAMETOOLONG));
			goto fail;
		}
		memcpy(part, name, len);
		part[len] = '\0';
		if (strcmp(part, ".") == 0 || strcmp(part, "..") == 0) {
			safepath_fail(cause, path, end, "is not a plain directory name");
			goto fail;
		}
		nfd = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && (flags & SAFEPATH_EXISTING))
			return fd;
		if (nfd < 0 && errno == ENOENT && (flags & SAFEPATH_CREATE)) {
			if (mkdirat(fd, part, 0750) != 0 && errno != EEXIST) {
				safepath_fail(cause, path, end, strerror(errno));
				goto fail;
			}
			nfd = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd < 0) {
			if ((errno == ELOOP || errno == ENOTDIR) &&
			    fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
				safepath_fail(cause, path, end,
				              "is a symbolic link, which is not followed: name the "
				              "real directory");
			else
				safepath_fail(cause, path, end, strerror(errno));
			goto fail;
		}
		close(fd);
		fd = nfd;
	}

fail:
	close(fd);
	return -1;
}
