/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command (`leasekeeper init-auth`). */
/*
 * initauth.c: `leasekeeper init-auth [--user NAME] [--force] FILE`: write a new ZooKeeper
 * digest credential, "NAME:PASSWORD" with 24 random bytes of password, to FILE, created
 * mode 0600 and owned by whoever runs it (root, for the workers' file), never through a
 * symbolic link. The workers' credential goes to every worker host (one per cluster: nodes
 * get the creator-only ACL, so workers with different credentials lock each other out),
 * named in [zookeeper] auth_file; a reader's or an operator's stays off the workers, which
 * name only its digest id ([zookeeper] reader = / operator =).
 */

#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "leasekeeper.h"
#include "sha1.h"
#include "usage.h"

#define INITAUTH_RANDOM   24 /* random bytes of password: 32 characters */
#define INITAUTH_USER_MAX 64

static const char initauth_usage[] =
    "usage: leasekeeper init-auth [--user NAME] [--force] FILE\n"
    "\n"
    "Write a new ZooKeeper digest credential NAME:PASSWORD (a random password) to FILE,\n"
    "mode 0600, owned by the user running it, and print what to do with it.\n"
    "The workers' credential (the default user): run it once per cluster, as root, copy\n"
    "FILE to every worker host (install -m 0600 -o root -g root), and set\n"
    "[zookeeper] auth_file = FILE in each worker.ini.\n"
    "A read-only identity (--user reader) or an operator identity (--user operator):\n"
    "keep FILE off the worker hosts (the dashboard, status, or the operators pass\n"
    "--auth-file FILE) and set [zookeeper] reader = or operator = to the digest id it\n"
    "prints in each worker.ini. See docs/security.md (\"Roles\").\n"
    "\n"
    "  --user NAME  the digest user (default leasekeeper; letters, digits, . _ -)\n"
    "  --force      replace FILE if it exists (the old credential is lost)\n"
    "  --help       print this and exit\n";

/* Whether name is a digest user we write: 1..INITAUTH_USER_MAX of [A-Za-z0-9._-]. */
static int
initauth_user_ok(const char *name)
{
	size_t n = strlen(name), i;

	if (n == 0 || n > INITAUTH_USER_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
		           name[i]) == NULL)
			return 0;
	}
	return 1;
}

/* A password of INITAUTH_RANDOM random bytes in base64url (out holds 4/3 of it, plus 1). */
static int
initauth_password(char *out, size_t len)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char r[INITAUTH_RANDOM];
	size_t i, o = 0;
	uint32_t v;

	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return -1;
	for (i = 0; i + 2 < sizeof r && o + 4 < len; i += 3) {
		v = (uint32_t)r[i] << 16 | (uint32_t)r[i + 1] << 8 | r[i + 2];
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = b64[v >> 6 & 63];
		out[o++] = b64[v & 63];
	}
	out[o] = '\0';
	explicit_bzero(r, sizeof r);
	return 0;
}

/* Create file (0600, no link followed, not there before unless force) holding line. */
static int
initauth_write(const char *file, const char *line, int force)
{
	struct stat st;
	int fd;

	if (force && lstat(file, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			fprintf(stderr,
			        "leasekeeper init-auth: %s is not a regular file: not replaced\n",
			        file);
			return EXIT_CONFIG;
		}
		if (unlink(file) != 0) {
			fprintf(stderr, "leasekeeper init-auth: cannot replace %s: %s\n", file,
			        strerror(errno));
			return EXIT_CANT_CREATE;
		}
	}
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "leasekeeper init-auth: cannot create %s: %s%s\n", file,
		        strerror(errno),
		        errno == EEXIST ? " (pass --force to replace it and lose the old "
		                          "credential)"
		                        : "");
		return EXIT_CANT_CREATE;
	}
	if (fchmod(fd, 0600) != 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line) ||
	    fsync(fd) != 0) {
		fprintf(stderr, "leasekeeper init-auth: cannot write %s: %s\n", file,
		        strerror(errno));
		close(fd);
		unlink(file);
		return EXIT_CANT_CREATE;
	}
	close(fd);
	return 0;
}

/* What to do with the file just written: the advice depends on whose credential it is. */
static void
initauth_advise(const char *file, const char *user, const char *id)
{
	printf("wrote %s: digest user %s, mode 0600, owner uid %u.\n", file, user,
	       (unsigned)geteuid());
	if (strcmp(user, "reader") == 0) {
		printf("This is a read-only identity: keep it off the worker hosts; whoever runs "
		       "the dashboard or status uses it (web --auth-file %s, status --auth-file "
		       "%s). On every worker, set in [zookeeper] the read-only identity:\n"
		       "reader = %s\n",
		       file, file, id);
	} else if (strcmp(user, "operator") == 0) {
		printf("This is an operator identity: keep it off the worker hosts; give it to "
		       "the operators (mode 0600, their own copy), who pass --auth-file %s to "
		       "run-now, stop, pause, resume, drain, undrain, set-leases, status and "
		       "logs. On every worker, set in [zookeeper] the operator identity:\n"
		       "operator = %s\n",
		       file, id);
	} else {
		printf("%s the workers' credential: copy it to every worker host "
		       "(install -m 0600 -o root -g root) and set [zookeeper] auth_file = %s "
		       "in each worker.ini (one credential per cluster).\n",
		       strcmp(user, "leasekeeper") == 0 ? "This is" : "If this is", file);
		if (strcmp(user, "leasekeeper") != 0)
			printf("If it is instead a read-only or an operator identity, keep it off "
			       "the worker hosts and set on every worker, in [zookeeper], "
			       "reader = %s or operator = %s\n",
			       id, id);
	}
	printf("See docs/security.md (\"Roles\").\n");
}

/* `init-auth [--user NAME] [--force] FILE`. */
int
initauth_main(int argc, char **argv)
{
	static const struct option longopts[] = {{"user", required_argument, NULL, 'u'},
	                                         {"force", no_argument, NULL, 'f'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *user = "leasekeeper";
	char pass[INITAUTH_RANDOM / 3 * 4 + 1], line[INITAUTH_USER_MAX + sizeof pass + 4];
	int ch, force = 0, rc;
	char *id;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			user = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'h':
			fputs(initauth_usage, stdout);
			return 0;
		default:
			return usage_hint("init-auth");
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "leasekeeper init-auth: give one FILE to write\n");
		return usage_hint("init-auth");
	}
	if (!initauth_user_ok(user)) {
		fprintf(stderr,
		        "leasekeeper init-auth: --user must be 1 to %d letters, digits, "
		        "'.', '_' or '-'\n",
		        INITAUTH_USER_MAX);
		return EXIT_USAGE;
	}
	if (initauth_password(pass, sizeof pass) != 0) {
		fprintf(stderr, "leasekeeper init-auth: getrandom: %s\n", strerror(errno));
		return 1;
	}
	snprintf(line, sizeof line, "%s:%s", user, pass);
	id = sha1_zk_digest_id(line);
	snprintf(line, sizeof line, "%s:%s\n", user, pass);
	rc = initauth_write(argv[optind], line, force);
	explicit_bzero(pass, sizeof pass);
	explicit_bzero(line, sizeof line);
	if (rc != 0) {
		free(id);
		return rc;
	}
	initauth_advise(argv[optind], user, id);
	free(id);
	return 0;
}
