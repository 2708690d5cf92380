/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config.c: the INI reader with the worker and job validation (config_load).
 *
 * Input: a worker file, a line "----", then a job file; without that line the whole input
 * is the job file and the worker file is a fixed minimal one. Both are written to a private
 * temporary directory: DIR/worker.ini and DIR/jobs/a.ini. Worker lines that set "jobs" are
 * dropped, so a load never reads files outside DIR.
 *
 * A configuration that loads must be one a worker can run: its node_id and job names go
 * into JSON written to ZooKeeper, so each must be a valid JSON (UTF-8) string.
 */

#include <sys/stat.h>

#include <ctype.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CONFIG_SEP "\n----\n"

static const char fuzz_config_base[] =
    "[zookeeper]\nhosts = 127.0.0.1:2181\n[worker]\nallow_root_jobs = true\n";

static char fuzz_config_dir[] = "/tmp/lk-fuzz-config.XXXXXX";
static char fuzz_config_worker[sizeof fuzz_config_dir + 32];
static char fuzz_config_job[sizeof fuzz_config_dir + 32];
static FILE *fuzz_config_null;

/* Abort unless text can go into the JSON a worker writes to ZooKeeper. */
static void
fuzz_config_json_ok(const char *what, const char *text)
{
	json_t *j;

	if (text == NULL)
		return;
	if ((j = json_string(text)) == NULL) {
		fprintf(stderr, "fuzz_config: %s \"%s\" is accepted but is not valid UTF-8\n", what,
		        text);
		abort();
	}
	json_decref(j);
}

/* Remove one entry of the temporary directory. */
static int
fuzz_config_rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Remove the temporary directory at exit. */
static void
fuzz_config_cleanup(void)
{
	nftw(fuzz_config_dir, fuzz_config_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Create the temporary directory once. */
static void
fuzz_config_setup(void)
{
	char jobs[sizeof fuzz_config_dir + 16];

	if (fuzz_config_null != NULL)
		return;
	if (mkdtemp(fuzz_config_dir) == NULL) {
		perror("fuzz_config: mkdtemp");
		abort();
	}
	atexit(fuzz_config_cleanup);
	snprintf(jobs, sizeof jobs, "%s/jobs", fuzz_config_dir);
	if (mkdir(jobs, 0700) != 0) {
		perror("fuzz_config: mkdir");
		abort();
	}
	snprintf(fuzz_config_worker, sizeof fuzz_config_worker, "%s/worker.ini", fuzz_config_dir);
	snprintf(fuzz_config_job, sizeof fuzz_config_job, "%s/jobs/a.ini", fuzz_config_dir);
	if ((fuzz_config_null = fopen("/dev/null", "w")) == NULL)
		abort();
}

/* Whether a worker line sets "jobs" (any case, any leading space). */
static int
fuzz_config_jobs_line(const char *line, size_t len)
{
	while (len > 0 && isspace((unsigned char)*line)) {
		line++;
		len--;
	}
	return len >= 4 && strncasecmp(line, "jobs", 4) == 0;
}

/* Write len bytes to path; with drop_jobs, without the lines that set "jobs". */
static void
fuzz_config_write(const char *path, const char *buf, size_t len, int drop_jobs)
{
	const char *nl;
	size_t n;
	FILE *f;
	int fd;

	/* 0600: as root, a secret in a file others can read is refused (config-perm.c) */
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 ||
	    (f = fdopen(fd, "w")) == NULL)
		abort();
	while (len > 0) {
		nl = memchr(buf, '\n', len);
		n = nl != NULL ? (size_t)(nl - buf) + 1 : len;
		if (!drop_jobs || !fuzz_config_jobs_line(buf, n))
			fwrite(buf, 1, n, f);
		buf += n;
		len -= n;
	}
	if (fclose(f) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data, *sep;
	struct config *cfg = NULL;
	struct config_errors errors = {NULL, 0};
	size_t i;

	if (size > 16384)
		return 0;
	fuzz_config_setup();
	sep = memmem(in, size, FUZZ_CONFIG_SEP, sizeof FUZZ_CONFIG_SEP - 1);
	if (sep != NULL) {
		fuzz_config_write(fuzz_config_worker, in, (size_t)(sep - in) + 1, 1);
		sep += sizeof FUZZ_CONFIG_SEP - 1;
		fuzz_config_write(fuzz_config_job, sep, size - (size_t)(sep - in), 0);
	} else {
		fuzz_config_write(fuzz_config_worker, fuzz_config_base, sizeof fuzz_config_base - 1,
		                  0);
		fuzz_config_write(fuzz_config_job, in, size, 0);
	}
	if (config_load(fuzz_config_worker, &cfg, &errors) == 0) {
		config_print(cfg, fuzz_config_null);
		fuzz_config_json_ok("node_id", cfg->node_id);
		for (i = 0; i < cfg->njobs; i++) {
			fuzz_config_json_ok("job name", cfg->jobs_list[i]->name);
			if (config_find_job(cfg, cfg->jobs_list[i]->name) == NULL ||
			    !config_job_equal(cfg->jobs_list[i], cfg->jobs_list[i]))
				abort();
		}
		config_free(cfg);
	}
	config_errors_free(&errors);
	return 0;
}
