/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_duration.c: durations and sizes as operators write them. The first byte picks the
 * parser; the rest is the text (up to a NUL or a newline, for sizes).
 *
 * Durations go to duration_parse, and one that parses must survive a round trip through
 * duration_format. Sizes go where production reads them, config_load: a job's "log_max = "
 * line in a job file of a private temporary directory (0700, files 0600: as root, the loader
 * refuses files others can write), and a job that loads has a size above 0.
 */

#include <sys/stat.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fuzz_duration_worker_text[] =
    "[zookeeper]\nhosts = 127.0.0.1:2181\n[worker]\nallow_root_jobs = true\n";

static char fuzz_duration_dir[] = "/tmp/lk-fuzz-duration.XXXXXX";
static char fuzz_duration_worker[sizeof fuzz_duration_dir + 32];
static char fuzz_duration_job[sizeof fuzz_duration_dir + 32];

/* Write len bytes of text to path, mode 0600. */
static void
fuzz_duration_write(const char *path, const char *text, size_t len)
{
	FILE *f;
	int fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 ||
	    (f = fdopen(fd, "w")) == NULL)
		abort();
	if (fwrite(text, 1, len, f) != len || fclose(f) != 0)
		abort();
}

/* Remove one entry of the temporary directory. */
static int
fuzz_duration_rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Remove the temporary directory at exit. */
static void
fuzz_duration_cleanup(void)
{
	nftw(fuzz_duration_dir, fuzz_duration_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Create the temporary directory and the worker file once. */
static void
fuzz_duration_setup(void)
{
	char jobs[sizeof fuzz_duration_dir + 16];

	if (fuzz_duration_worker[0] != '\0')
		return;
	if (mkdtemp(fuzz_duration_dir) == NULL) {
		perror("fuzz_duration: mkdtemp");
		abort();
	}
	atexit(fuzz_duration_cleanup);
	snprintf(jobs, sizeof jobs, "%s/jobs", fuzz_duration_dir);
	if (mkdir(jobs, 0700) != 0) {
		perror("fuzz_duration: mkdir");
		abort();
	}
	snprintf(fuzz_duration_worker, sizeof fuzz_duration_worker, "%s/worker.ini",
	         fuzz_duration_dir);
	snprintf(fuzz_duration_job, sizeof fuzz_duration_job, "%s/jobs/a.ini", fuzz_duration_dir);
	fuzz_duration_write(fuzz_duration_worker, fuzz_duration_worker_text,
	                    sizeof fuzz_duration_worker_text - 1);
}

/* Load a job whose log_max is text (one line); abort if it loads with a size of 0. */
static void
fuzz_duration_size(char *text)
{
	struct config *cfg = NULL;
	struct config_errors errors = {NULL, 0};
	char *job, *nl;
	int len;

	if ((nl = strchr(text, '\n')) != NULL)
		*nl = '\0';
	fuzz_duration_setup();
	len = asprintf(&job, "[job a]\ncommand = true\nlog_max = %s\n", text);
	if (len < 0)
		abort();
	fuzz_duration_write(fuzz_duration_job, job, (size_t)len);
	free(job);
	if (config_load(fuzz_duration_worker, &cfg, &errors) == 0) {
		if (cfg->njobs != 1 || cfg->jobs_list[0]->log_max_bytes == 0) {
			fprintf(stderr, "log_max = \"%s\" loads as %llu bytes\n", text,
			        cfg->njobs == 1
			            ? (unsigned long long)cfg->jobs_list[0]->log_max_bytes
			            : 0ULL);
			abort();
		}
		config_free(cfg);
	}
	config_errors_free(&errors);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, *cause = NULL, buf[64];
	uint64_t ms, again;

	if (size == 0 || size > 4096)
		return 0;
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (data[0] & 1)
		fuzz_duration_size(text);
	else if (duration_parse(text, &ms, &cause) == 0) {
		duration_format(ms, buf, sizeof buf);
		if (duration_parse(buf, &again, &cause) != 0 || again != ms) {
			fprintf(stderr,
			        "\"%s\" is %llu ms, formatted \"%s\", which reads back as %s\n",
			        text, (unsigned long long)ms, buf,
			        cause != NULL ? cause : "another value");
			abort();
		}
	} else
		free(cause);
	free(text);
	return 0;
}
