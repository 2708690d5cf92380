/* SPDX-License-Identifier: Apache-2.0 */
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

#include "posixacl.h"
#include "safepath.h"
#include "xmalloc.h"

/*
 * Why the directory open at fd (st) is not safe for root to write in, or NULL, with *fix
 * the command that fixes it: it must be root's and writable by root only (group root
 * counts as root), through its mode and its ACL. An ancestor (last 0) may be writable by
 * anyone when it has the sticky bit.
 */
static const char *
safepath_unsafe(int fd, const struct stat *st, int last, const char **fix)
{
	int sticky = !last && (st->st_mode & S_ISVTX);

	*fix = "chown root";
	if (st->st_uid != 0)
		return "is owned by a user other than root";
	*fix = "chmod go-w";
	if ((st->st_mode & S_IWOTH) && !sticky)
		return "is writable by others";
	if ((st->st_mode & S_IWGRP) && st->st_gid != 0 && !sticky)
		return "is writable by its group";
	return sticky ? NULL : posixacl_unsafe(fd, POSIXACL_WRITE, fix);
}

/* Record in f that the directory ending at end of path fails with why (and fix, or NULL). */
static int
safepath_fault(struct safepath_fault *f, const char *path, const char *end, const char *why,
               const char *fix)
{
	f->len = end == path ? 1 : (size_t)(end - path);
	f->why = why;
	f->fix = fix;
	return -1;
}

/*
 * Walk the directory path (absolute) from / without following a symbolic link anywhere on
 * it, checking each directory with SAFEPATH_CHECK. Returns a descriptor of the directory,
 * or -1 with f saying which directory is at fault (path's first f->len bytes), why, and
 * with SAFEPATH_CHECK's faults the command that fixes it and the directory's status.
 */
int
safepath_walk(const char *path, int flags, struct safepath_fault *f)
{
	const char *p = path, *name, *end = path, *why, *fix;
	char part[NAME_MAX + 1];
	struct stat st;
	size_t len;
	int fd, nfd, last;

	memset(f, 0, sizeof *f);
	if (path[0] != '/') {
		f->len = strlen(path);
		f->why = "is not an absolute path";
		return -1;
	}
	if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return safepath_fault(f, path, end, strerror(errno), NULL);
	for (;;) {
		while (*p == '/')
			p++;
		last = *p == '\0';
		if (fstat(fd, &f->st) != 0) {
			safepath_fault(f, path, end, "cannot be examined", NULL);
			goto fail;
		}
		if ((flags & SAFEPATH_CHECK) &&
		    (why = safepath_unsafe(fd, &f->st, last, &fix)) != NULL) {
			safepath_fault(f, path, end, why, fix);
			goto fail;
		}
		if (*p == '\0')
			return fd;
		name = p;
		end = p + strcspn(p, "/");
		p = end;
		len = (size_t)(end - name);
		if (len > NAME_MAX) {
			safepath_fault(f, path, end, strerror(ENAMETOOLONG), NULL);
			goto fail;
		}
		memcpy(part, name, len);
		part[len] = '\0';
		if (strcmp(part, ".") == 0 || strcmp(part, "..") == 0) {
			safepath_fault(f, path, end, "is not a plain directory name", NULL);
			goto fail;
		}
		nfd = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && (flags & SAFEPATH_EXISTING))
			return fd;
		if (nfd < 0 && errno == ENOENT && (flags & SAFEPATH_CREATE)) {
			if (mkdirat(fd, part, 0750) != 0 && errno != EEXIST) {
				safepath_fault(f, path, end, strerror(errno), NULL);
				goto fail;
			}
			nfd = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd < 0) {
			if ((errno == ELOOP || errno == ENOTDIR) &&
			    fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
				safepath_fault(
				    f, path, end,
				    "is a symbolic link, which is not followed: name the "
				    "real directory",
				    NULL);
			else
				safepath_fault(f, path, end, strerror(errno), NULL);
			goto fail;
		}
		close(fd);
		fd = nfd;
	}

fail:
	close(fd);
	return -1;
}

/*
 * Open the directory path (absolute) for *at() calls without following a symbolic link
 * anywhere on it. Returns the descriptor, or -1 with *cause (caller frees), which names
 * the directory at fault.
 */
int
safepath_open_dir(const char *path, int flags, char **cause)
{
	struct safepath_fault f;
	int fd;

	*cause = NULL;
	if ((fd = safepath_walk(path, flags, &f)) < 0)
		xasprintf(cause, "%.*s %s", (int)f.len, path, f.why);
	return fd;
}
