/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * config-int.h: what the files of src/config share to load a configuration: the sections
 * the reader builds, the load's context, its error collection, and the steps of each pass.
 * Nothing outside src/config includes it (lk_config's public include path is
 * src/config/include; this header sits beside the sources).
 */
#ifndef CONFIG_INT_H
#define CONFIG_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "config.h"

/* The kinds of section; the worker's come first, in the order of config_sections. */
enum config_kind {
	CONFIG_ZOOKEEPER,
	CONFIG_WORKER,
	CONFIG_SAFETY,
	CONFIG_HTTP,
	CONFIG_JOB,
	CONFIG_NKINDS
};

/* One key = value line. */
struct config_kv {
	char *key;
	char *value;
	int line;
};

/* One section: a worker section (all its headers merged) or one [job NAME]. */
struct config_sec {
	enum config_kind kind;
	char *name; /* the job's name */
	size_t file;
	int line;
	int discard; /* a duplicate or badly named job: checked, then dropped */
	int refused; /* lines refused by config_line_ok: a missing key may be one of them */
	struct config_kv *kv;
	size_t nkv;
};

/* One problem, kept apart from its file and line until they are sorted. */
struct config_err {
	size_t file;
	int line; /* 0: about the whole file */
	size_t seq;
	char *text;
};

/* Where the reader stands in the current file. */
enum config_where { CONFIG_WHERE_NONE, CONFIG_WHERE_SECTION, CONFIG_WHERE_SKIP };

/* The state of one config_load. */
struct config_ctx {
	char **files;
	size_t nfiles;
	struct config_err *errs;
	size_t nerrs;
	struct config_sec **secs;
	size_t nsecs;
	size_t *byname;   /* index + 1 into secs of the first section of each job name, hashed */
	size_t nbyname;   /* its size: a power of 2, at least twice nsecs */
	char *log_dir_ok; /* the last job log folder found safe */
	struct config_sec *worker[CONFIG_JOB];

	/* the file being read */
	FILE *f;
	size_t file;
	int worker_file;
	int line;
	size_t bytes;  /* read so far, against CONFIG_MAX_FILE_BYTES */
	size_t budget; /* lines left to read in this call (config_read_some) */
	int paused;    /* the budget ran out before the end of the file */
	char *raw;
	size_t rawsize;
	enum config_where where;
	struct config_sec *cur;
	const char *key;
	const char *value;

	char **quoted; /* config_q's strings, freed with the context */
	size_t nquoted;

	/* config-perm.c: the worker file as opened, and the directories already checked */
	struct stat worker_st;
	int have_worker_st;
	int worker_acl_read; /* its ACL lets a named user or group but root's read it */
	struct config_seen {
		dev_t dev;
		ino_t ino;
	} * seen;
	size_t nseen;
};

/* config-read.c */
void config_error(struct config_ctx *, size_t, int, const char *, ...)
    __attribute__((format(printf, 4, 5)));
void config_error_kv(struct config_ctx *, const struct config_sec *, const struct config_kv *,
                     const char *, ...) __attribute__((format(printf, 4, 5)));
const char *config_q(struct config_ctx *ctx, const char *s);
struct config_kv *config_kv_find(const struct config_sec *sec, const char *key);
int config_valid_name(const char *name, const char *what, char **cause);
size_t config_add_file(struct config_ctx *ctx, const char *path);
int config_read_file(struct config_ctx *ctx, size_t file, int worker_file);
int config_read_open(struct config_ctx *ctx, size_t file, int worker_file);
int config_read_some(struct config_ctx *ctx, size_t lines);
char *config_join(const char *dir, const char *path);
char *config_dirname(const char *path);
char *config_absolute(const char *dir);
char *config_clean_path(const char *path);
void config_find_job_files(struct config_ctx *ctx, struct config *cfg, const struct config_kv *kv,
                           const char *dir);
void config_ctx_finish(struct config_ctx *ctx, struct config_errors *errors);
void config_sec_free(struct config_sec *sec);

/* config-perm.c */
void config_perm_file(struct config_ctx *ctx, size_t file, int worker_file, int fd,
                      const struct stat *st);
void config_perm_dir(struct config_ctx *ctx, size_t file, int line, const char *dir);
void config_perm_auth_file(struct config_ctx *ctx, const struct config_sec *sec,
                           const struct config_kv *kv, const char *path);
void config_perm_secret(struct config_ctx *ctx, const struct config_sec *sec,
                        const struct config_kv *kv);
void config_perm_log(struct config_ctx *ctx, const struct config_sec *sec,
                     const struct config_kv *kv, const char *path);

/* config-valid.c: the readers of values the worker's sections and the jobs share */
int config_get_bool(struct config_ctx *ctx, const struct config_sec *sec, const char *key,
                    int *out);
int config_get_duration(struct config_ctx *ctx, const struct config_sec *sec, const char *key,
                        uint64_t *out);
int config_get_int(struct config_ctx *ctx, const struct config_sec *sec, const char *key, int min,
                   int max, const char *hint, const char *max_why, int *out);
void config_get_hooks(struct config_ctx *ctx, const struct config_sec *sec,
                      const struct config_hooks *defaults, struct config_hooks *out);
void config_get_limits(struct config_ctx *ctx, const struct config_sec *sec,
                       const struct config_limits *defaults, enum config_cgroups cgroups,
                       struct config_limits *out);
int config_get_on_shutdown(struct config_ctx *ctx, const struct config_sec *sec,
                           enum config_on_shutdown *out);
int config_check_zone(struct config_ctx *ctx, const struct config_sec *sec,
                      const struct config_kv *kv);
int config_parse_size(const char *text, uint64_t *bytes, char **cause);
int config_valid_identifier(const char *name, size_t len);
void config_resolve_policy(struct config_ctx *, const struct config_sec *, struct config_job *,
                           int ok_sched);
char *config_list_next(const char **p);
void config_resolve_params(struct config_ctx *, const struct config_sec *, struct config_job *);
/* config-after.c */
void config_resolve_after(struct config_ctx *, const struct config_sec *, struct config_job *);
void config_check_after(struct config_ctx *ctx, struct config *cfg, struct config_sec **secs);
void config_resolve_pass_env(struct config_ctx *ctx, const struct config_sec *sec,
                             const struct config_kv *kv, char ***out);

/* config-valid-worker.c */
void config_resolve_worker(struct config_ctx *ctx, struct config *cfg);
void config_no_jobs(struct config_ctx *ctx, const struct config *cfg, const struct config_kv *kv);

/* config-valid-job.c */
struct config_job *config_resolve_job(struct config_ctx *ctx, const struct config *cfg,
                                      const struct config_sec *sec);
void config_check_locks(struct config_ctx *ctx, struct config *cfg, struct config_sec **secs);
void config_free_argv(char **argv);
/* config-lock.c */
void config_resolve_job_locks(struct config_ctx *ctx, const struct config *cfg,
                              const struct config_sec *sec, struct config_job *job);
void config_check_lock_kinds(struct config_ctx *ctx, struct config *cfg, struct config_sec **secs);
void config_free_locks(struct config_job *job);

/* config-label.c */
void config_resolve_labels(struct config_ctx *ctx, struct config *cfg, const struct config_sec *wk);
void config_resolve_constraint(struct config_ctx *ctx, const struct config_sec *sec,
                               struct config_job *job);
void config_free_constraint(struct config_job *job);

#endif
