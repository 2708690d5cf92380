/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that reads the configuration. */
/*
 * config-files.c: where the configuration's files are: paths joined, made absolute and
 * cleaned, and the job files that [worker] jobs names (a file, a directory or a glob).
 */

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-int.h"
#include "log.h"
#include "utf8.h"
#include "xmalloc.h"

/* Join a relative path to dir ("." joins to nothing); absolute paths stay. */
char *
config_join(const char *dir, const char *path)
{
	char *s;

	if (path[0] == '/' || strcmp(dir, ".") == 0)
		return xstrdup(path);
	xasprintf(&s, "%s/%s", dir, path);
	return s;
}

/* The directory part of path, "." when it has none. */
char *
config_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

/*
 * An absolute form of dir, without touching the file system beyond getcwd; NULL if the
 * working directory is gone (a reload must then fail, not end the worker).
 */
char *
config_absolute(const char *dir)
{
	char cwd[PATH_MAX], *s;

	if (dir[0] == '/')
		return xstrdup(dir);
	if (getcwd(cwd, sizeof cwd) == NULL)
		return NULL;
	if (strcmp(dir, ".") == 0)
		return xstrdup(cwd);
	if (strncmp(dir, "./", 2) == 0)
		dir += 2;
	xasprintf(&s, "%s/%s", cwd, dir);
	return s;
}

/* parts[0..n) joined with '/', after a leading '/' when absolute; "." or "/" when empty. */
static char *
config_join_parts(int absolute, char **parts, size_t n)
{
	size_t i, len = 2, off;
	char *out;

	for (i = 0; i < n; i++)
		len += strlen(parts[i]) + 1;
	out = xmalloc(len);
	off = (size_t)snprintf(out, len, "%s", absolute ? "/" : "");
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i > 0 ? "/" : "", parts[i]);
	if (off == 0)
		snprintf(out, len, ".");
	return out;
}

/*
 * Tidy a path for messages and listings: drop "." elements and fold "DIR/.." where DIR is
 * a real directory (not a symbolic link, through which ".." would lead elsewhere).
 */
char *
config_clean_path(const char *path)
{
	char *copy = xstrdup(path), *tok, *save, *prefix, *out, **parts;
	size_t n = 0;
	int absolute = path[0] == '/';
	struct stat st;

	parts = xcalloc(strlen(path) + 1, sizeof *parts);
	for (tok = strtok_r(copy, "/", &save); tok != NULL; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0 && n > 0 && strcmp(parts[n - 1], "..") != 0) {
			prefix = config_join_parts(absolute, parts, n);
			if (lstat(prefix, &st) == 0 && S_ISDIR(st.st_mode)) {
				free(prefix);
				n--;
				continue;
			}
			free(prefix);
		}
		parts[n++] = tok;
	}
	out = config_join_parts(absolute, parts, n);
	free(parts);
	free(copy);
	return out;
}

/* qsort's comparison of two strings. */
static int
config_strcmp_cb(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Whether path, which [worker] jobs matched, is a job file to read: a regular file other
 * than the worker file itself. Anything else it matched (a dangling or looping symbolic
 * link, a directory, a device) is an error naming it, never silently skipped.
 */
static int
config_is_job_file(struct config_ctx *ctx, int line, const char *path, const struct stat *worker)
{
	struct stat st;
	char *q;

	if (stat(path, &st) != 0) {
		q = utf8_quote_str(path);
		config_error(ctx, 0, line,
		             "jobs: %s matched but cannot be read (%s): fix or remove it (a "
		             "dangling or looping symbolic link?)",
		             q, strerror(errno));
		free(q);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		q = utf8_quote_str(path);
		config_error(ctx, 0, line,
		             "jobs: %s is %s, not a job file: point jobs at .ini files, or rename "
		             "or move it",
		             q, S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
		free(q);
		return 0;
	}
	return !(st.st_dev == worker->st_dev && st.st_ino == worker->st_ino);
}

/* Check the directory a glob's first wildcard is in (where a new job file would go). */
static void
config_perm_glob_dir(struct config_ctx *ctx, int line, const char *pattern)
{
	char *dir = xstrndup(pattern, strcspn(pattern, "*?[")), *slash = strrchr(dir, '/');

	if (slash != NULL)
		slash[slash == dir ? 1 : 0] = '\0';
	config_perm_dir(ctx, 0, line, slash != NULL ? dir : ".");
	free(dir);
}

/* The directory glob could not read, for the error; glob takes no user pointer. */
static char *config_glob_failed;

/*
 * glob's error callback: a directory that does not exist matches nothing, but one that
 * cannot be read (GLOB_ERR would also stop at missing ones) stops the expansion and is
 * remembered for the error.
 */
static int
config_glob_error_cb(const char *path, int error)
{
	if (error == ENOENT || error == ENOTDIR)
		return 0;
	if (config_glob_failed == NULL)
		xasprintf(&config_glob_failed, "%s (%s)", path, strerror(error));
	return 1;
}

/*
 * Expand [worker] jobs into a sorted list of files: a glob (matching nothing is fine), a
 * directory (its *.ini files) or one file, relative to the worker file's directory.
 */
void
config_find_job_files(struct config_ctx *ctx, struct config *cfg, const struct config_kv *kv,
                      const char *dir)
{
	char *joined = config_join(dir, cfg->jobs), *pattern = config_clean_path(joined);
	char *path, **names = NULL, *q;
	size_t nnames = 0, i, len;
	struct stat st, worker;
	struct dirent *de;
	glob_t g;
	DIR *d;
	int rc, line = kv != NULL ? kv->line : 0;

	if (stat(cfg->file, &worker) != 0)
		memset(&worker, 0, sizeof worker);
	q = utf8_quote_str(pattern);
	if (strpbrk(cfg->jobs, "*?[") != NULL) {
		config_perm_glob_dir(ctx, line, pattern);
		config_glob_failed = NULL;
		rc = glob(pattern, 0, config_glob_error_cb, &g);
		if (rc == 0) {
			for (i = 0; i < g.gl_pathc; i++) {
				if (!config_is_job_file(ctx, line, g.gl_pathv[i], &worker))
					continue;
				names = xreallocarray(names, nnames + 1, sizeof *names);
				names[nnames++] = xstrdup(g.gl_pathv[i]);
			}
		} else if (rc == GLOB_ABORTED)
			config_error(
			    ctx, 0, line,
			    "jobs: cannot expand %s: cannot read the directory %s: fix its "
			    "permissions, or narrow the pattern",
			    q, config_glob_failed != NULL ? config_glob_failed : "(unknown)");
		else if (rc != GLOB_NOMATCH)
			config_error(ctx, 0, line, "jobs: cannot expand %s: out of memory", q);
		free(config_glob_failed);
		config_glob_failed = NULL;
		globfree(&g);
	} else if (stat(pattern, &st) != 0) {
		config_error(ctx, 0, line,
		             "jobs: %s does not exist (%s): create it, or point jobs at a file, "
		             "a directory or a glob such as \"jobs/*.ini\" (relative to %s)",
		             q, strerror(errno), cfg->dir);
	} else if (S_ISDIR(st.st_mode)) {
		config_perm_dir(ctx, 0, line, pattern);
		if ((d = opendir(pattern)) == NULL) {
			config_error(ctx, 0, line, "jobs: cannot read directory %s: %s", q,
			             strerror(errno));
		} else {
			while ((de = readdir(d)) != NULL) {
				len = strlen(de->d_name);
				if (de->d_name[0] == '.' || len < 5 ||
				    strcmp(de->d_name + len - 4, ".ini") != 0)
					continue;
				path = config_join(pattern, de->d_name);
				if (!config_is_job_file(ctx, line, path, &worker)) {
					free(path);
					continue;
				}
				names = xreallocarray(names, nnames + 1, sizeof *names);
				names[nnames++] = path;
			}
			closedir(d);
			if (nnames > 1)
				qsort(names, nnames, sizeof *names, config_strcmp_cb);
		}
	} else if (config_is_job_file(ctx, line, pattern, &worker)) {
		names = xreallocarray(names, 1, sizeof *names);
		names[nnames++] = xstrdup(pattern);
	}
	free(q);
	free(pattern);
	free(joined);
	cfg->job_files = names;
	cfg->njob_files = nnames;
}
