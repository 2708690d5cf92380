/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * config-perm.c: who can change what the worker does. Whoever can write a job file runs
 * commands as any user a job may name, and whoever can read the worker file holds its
 * ZooKeeper secret, so when the worker runs as root its files and their directories must be
 * root's alone, and a job's log must be in a directory only root can write (the supervisor
 * refuses it otherwise: joblog.c). Not root (tests, a user's own worker): nothing to check.
 */

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config-int.h"
#include "posixacl.h"
#include "safepath.h"
#include "utf8.h"
#include "xmalloc.h"

/* Whether the checks apply: the worker runs as root. */
static int
config_perm_enabled(void)
{
	return geteuid() == 0;
}

/*
 * A path for a message and the command that fixes it: as it is when that is safe to copy
 * into a shell (printable ASCII, no space or quote), else quoted (and maybe shortened).
 */
static char *
config_perm_path(const char *path)
{
	const unsigned char *p;

	for (p = (const unsigned char *)path; *p != '\0'; p++) {
		if (*p <= ' ' || *p >= 0x7f || strchr("\"'\\$`", *p) != NULL)
			return utf8_quote_str(path);
	}
	return xstrdup(path);
}

/* Whether the directory st was reported before in this load (so it is reported once). */
static int
config_perm_seen(struct config_ctx *ctx, const struct stat *st)
{
	size_t i;

	for (i = 0; i < ctx->nseen; i++) {
		if (ctx->seen[i].dev == st->st_dev && ctx->seen[i].ino == st->st_ino)
			return 1;
	}
	ctx->seen = xreallocarray(ctx->seen, ctx->nseen + 1, sizeof *ctx->seen);
	ctx->seen[ctx->nseen].dev = st->st_dev;
	ctx->seen[ctx->nseen++].ino = st->st_ino;
	return 0;
}

/*
 * Why a configuration file (open at fd, st) is unsafe, or NULL; *fix is the command that
 * fixes it. With an ACL the group bits are its mask: a named user's write shows there.
 */
static const char *
config_perm_unsafe_file(int fd, const struct stat *st, const char **fix)
{
	if (st->st_uid != 0) {
		*fix = "chown root";
		return "is owned by a user other than root, who can change it";
	}
	*fix = "chmod 0640";
	if (st->st_mode & S_IWOTH)
		return "is writable by others";
	if ((st->st_mode & S_IWGRP) && st->st_gid != 0)
		return "is writable by its group";
	return posixacl_unsafe(fd, POSIXACL_WRITE, fix);
}

/*
 * Check the directory dir (a symbolic link is judged by its target), which holds what
 * (harm: what whoever can write it can do), and every directory above it: each must be
 * root's, and writable by root only, those above it unless they have the sticky bit
 * (safepath_walk). Reported against the file'th file and line, once per directory.
 */
static void
config_perm_dir_holding(struct config_ctx *ctx, size_t file, int line, const char *dir,
                        const char *what, const char *harm)
{
	struct safepath_fault f;
	char real[PATH_MAX], *bad, *q, *qreal;
	int fd;

	if (!config_perm_enabled() || realpath(dir, real) == NULL)
		return;
	if ((fd = safepath_walk(real, SAFEPATH_CHECK, &f)) >= 0) {
		close(fd);
		return;
	}
	if (f.fix == NULL || config_perm_seen(ctx, &f.st))
		return; /* gone, or not a directory: the file's own check reports it */
	bad = xstrndup(real, f.len);
	q = config_perm_path(bad);
	if (strcmp(bad, real) == 0)
		config_error(ctx, file, line,
		             "the directory %s, which holds %s, %s, and whoever can write it %s: "
		             "%s %s",
		             q, what, f.why, harm, f.fix, q);
	else {
		qreal = config_perm_path(real);
		config_error(ctx, file, line,
		             "the directory %s, above %s, which holds %s, %s, and whoever can "
		             "write it can put another directory in its place and so %s: %s %s",
		             q, qreal, what, f.why, harm, f.fix, q);
		free(qreal);
	}
	free(q);
	free(bad);
}

/* Check the directory dir, which holds configuration the file'th file names at line. */
void
config_perm_dir(struct config_ctx *ctx, size_t file, int line, const char *dir)
{
	config_perm_dir_holding(ctx, file, line, dir, "configuration",
	                        "can add or replace job files that run commands as root");
}

/* Check the directory of the auth_file path, which kv (in sec) names. */
void
config_perm_auth_file(struct config_ctx *ctx, const struct config_sec *sec,
                      const struct config_kv *kv, const char *path)
{
	char *dir = config_dirname(path);

	config_perm_dir_holding(ctx, sec->file, kv->line, dir, "the auth_file",
	                        "can replace the ZooKeeper credentials");
	free(dir);
}

/*
 * Check a configuration file just opened (fd, st) and the directory its target is in. The
 * worker file's status, and whether its ACL lets others read it, are kept for
 * config_perm_secret.
 */
void
config_perm_file(struct config_ctx *ctx, size_t file, int worker_file, int fd,
                 const struct stat *st)
{
	const char *path = ctx->files[file], *why, *fix;
	char real[PATH_MAX], *dir, *q;

	if (worker_file) {
		ctx->worker_st = *st;
		ctx->have_worker_st = 1;
	}
	if (!config_perm_enabled())
		return;
	if (worker_file)
		ctx->worker_acl_read = posixacl_unsafe(fd, POSIXACL_READ, &fix) != NULL;
	if (realpath(path, real) == NULL)
		snprintf(real, sizeof real, "%s", path);
	if ((why = config_perm_unsafe_file(fd, st, &fix)) != NULL) {
		q = config_perm_path(real);
		if (strcmp(real, path) != 0)
			config_error(
			    ctx, file, 0,
			    "its target %s %s (mode %04o): whoever can write a configuration "
			    "file runs commands as root: %s %s",
			    q, why, (unsigned)(st->st_mode & 07777), fix, q);
		else
			config_error(ctx, file, 0,
			             "%s (mode %04o): whoever can write a configuration file runs "
			             "commands as root: %s %s",
			             why, (unsigned)(st->st_mode & 07777), fix, q);
		free(q);
	}
	dir = config_dirname(real);
	config_perm_dir(ctx, file, 0, dir);
	free(dir);
}

/* A secret (kv, in the worker file) must be in a file only root can read. */
void
config_perm_secret(struct config_ctx *ctx, const struct config_sec *sec, const struct config_kv *kv)
{
	const struct stat *st = &ctx->worker_st;
	char real[PATH_MAX], *q;

	if (!config_perm_enabled() || !ctx->have_worker_st)
		return;
	if (!(st->st_mode & S_IROTH) && !((st->st_mode & S_IRGRP) && st->st_gid != 0) &&
	    !ctx->worker_acl_read)
		return;
	if (realpath(ctx->files[sec->file], real) == NULL)
		snprintf(real, sizeof real, "%s", ctx->files[sec->file]);
	q = config_perm_path(real);
	if (!(st->st_mode & S_IROTH) && !((st->st_mode & S_IRGRP) && st->st_gid != 0)) {
		config_error_kv(ctx, sec, kv,
		                "%s: the secret is in a file another user or group can read "
		                "through an ACL (mode %04o): setfacl -b %s",
		                kv->key, (unsigned)(st->st_mode & 07777), q);
		free(q);
		return;
	}
	config_error_kv(
	    ctx, sec, kv, "%s: the secret is in a file %s can read (mode %04o): %s %s", kv->key,
	    (st->st_mode & S_IROTH) ? "anyone" : "its group", (unsigned)(st->st_mode & 07777),
	    (st->st_mode & S_IROTH) && st->st_gid == 0 ? "chmod 0640" : "chmod 0600", q);
	free(q);
}

/*
 * A job's log is written by root (the supervisor): its directory, or the part of it that
 * exists, must be reachable without a symbolic link and writable by root only.
 */
void
config_perm_log(struct config_ctx *ctx, const struct config_sec *sec, const struct config_kv *kv,
                const char *path)
{
	char *dir, *why;
	int fd;

	if (!config_perm_enabled() || path[0] != '/')
		return;
	dir = config_dirname(path);
	/* Thousands of jobs log into one folder: walk it once per load. */
	if (ctx->log_dir_ok != NULL && strcmp(dir, ctx->log_dir_ok) == 0) {
		free(dir);
		return;
	}
	fd = safepath_open_dir(dir, SAFEPATH_CHECK | SAFEPATH_EXISTING, &why);
	if (fd >= 0) {
		close(fd);
		free(ctx->log_dir_ok);
		ctx->log_dir_ok = dir;
		return;
	}
	free(dir);
	config_error_kv(ctx, sec, kv,
	                "log_file %s: %s: the worker writes job logs as root, so put them in a "
	                "directory only root can write, such as /var/log/leasekeeper",
	                config_q(ctx, path), why);
	free(why);
}
