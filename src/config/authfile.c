/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * authfile.c: ZooKeeper digest credentials ("USER:PASSWORD", one line) read from a file, and
 * the form of a digest id (USER:BASE64, [zookeeper] reader).
 *
 * The file is the secret, so it is refused unless only the user reading it could have
 * written or read it: a regular file, not reached through a symbolic link, owned by that
 * user (root, for a worker run as root) with no permission for group or others. The checks are made on the descriptor that is
 * read (fstat), so a file swapped between check and read is never the one used.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authfile.h"
#include "xmalloc.h"

/* Set *cause and fail. */
#define authfile_fail(cause, ...) (xasprintf((cause), __VA_ARGS__), -1)

/* Whether v is a digest id: USER ([A-Za-z0-9._-], 1-64) ':' 28 characters of base64. */
int
authfile_valid_digest_id(const char *v)
{
	const char *colon = strchr(v, ':');
	size_t n, i;

	if (colon == NULL || colon == v || colon - v > 64 || strlen(colon + 1) != 28)
		return 0;
	n = (size_t)(colon - v);
	for (i = 0; i < n; i++) {
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
		           v[i]) == NULL)
			return 0;
	}
	for (i = 1; i <= 28; i++) {
		if (colon[i] == '\0' ||
		    strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=",
		           colon[i]) == NULL)
			return 0;
	}
	return colon[28] == '=';
}

/* Whether auth is USER:PASSWORD: a user before the first colon, no control characters. */
int
authfile_valid_auth(const char *auth)
{
	const unsigned char *p;

	if (auth[0] == ':' || strchr(auth, ':') == NULL)
		return 0;
	for (p = (const unsigned char *)auth; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	}
	return 1;
}

/*
 * Read the credentials in path into *auth (the caller frees it); -1 with *cause naming
 * the fix if the file is a symbolic link, or not a regular file owned by the effective user with mode 0600 or
 * stricter, or does not hold one USER:PASSWORD line (a trailing newline is allowed).
 */
int
authfile_read(const char *path, char **auth, char **cause)
{
	struct stat st;
	char buf[AUTHFILE_MAX_BYTES + 1];
	ssize_t n;
	size_t len = 0;
	int fd, saved;
	uid_t euid = geteuid();

	*auth = NULL;
	/*
	 * O_NONBLOCK: a FIFO put in its place must not hang the start-up. O_NOFOLLOW: a link
	 * would let whoever can write its directory send any file we can read as credentials.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0 && errno == ELOOP)
		return authfile_fail(cause,
		                     "%s is a symbolic link, which is not followed: name the "
		                     "file itself",
		                     path);
	if (fd < 0)
		return authfile_fail(cause, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		saved = errno;
		close(fd);
		return authfile_fail(cause, "cannot stat %s: %s", path, strerror(saved));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return authfile_fail(cause,
		                     "%s is not a regular file: write the credentials in a "
		                     "file of their own",
		                     path);
	}
	if (st.st_uid != euid) {
		close(fd);
		if (euid == 0)
			return authfile_fail(cause,
			                     "%s is owned by uid %ld, not root: anyone who owns it "
			                     "can change the credentials; chown root %s",
			                     path, (long)st.st_uid, path);
		return authfile_fail(cause,
		                     "%s is owned by uid %ld, not by this user (uid %ld): "
		                     "chown %ld %s",
		                     path, (long)st.st_uid, (long)euid, (long)euid, path);
	}
	if ((st.st_mode & 077) != 0) {
		close(fd);
		return authfile_fail(cause,
		                     "%s has mode %04o: the password would be readable by group "
		                     "or others; chmod 0600 %s",
		                     path, (unsigned)(st.st_mode & 07777), path);
	}
	while (len < sizeof buf) {
		n = read(fd, buf + len, sizeof buf - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			close(fd);
			return authfile_fail(cause, "cannot read %s: %s", path, strerror(saved));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > AUTHFILE_MAX_BYTES)
		return authfile_fail(cause,
		                     "%s is longer than %d bytes: it must hold one line, "
		                     "USER:PASSWORD",
		                     path, AUTHFILE_MAX_BYTES);
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	if (memchr(buf, '\0', len) != NULL || !authfile_valid_auth(buf)) {
		explicit_bzero(buf, sizeof buf);
		return authfile_fail(cause,
		                     "%s does not hold one line USER:PASSWORD (ZooKeeper "
		                     "digest authentication): write e.g. leasekeeper:secret "
		                     "and nothing else",
		                     path);
	}
	*auth = xstrdup(buf);
	explicit_bzero(buf, sizeof buf);
	return 0;
}
