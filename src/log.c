/* log.c: leveled logging to stderr with a timestamp, the pid and the process role. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int log_level = LOG_LEVEL_INFO;
static const char *log_process = "main";

static const char *log_level_names[] = {"fatal", "warn", "info", "debug"};

/* Set the verbosity (-1 warnings only, 0 info, 1 or more debug) and the role in each line. */
void
log_init(int verbose, const char *process)
{
	log_level = verbose > 0 ? LOG_LEVEL_DEBUG : verbose < 0 ? LOG_LEVEL_WARN : LOG_LEVEL_INFO;
	if (process != NULL)
		log_process = process;
}

/* Change the role shown in each line, after a fork. */
void
log_set_process(const char *process)
{
	log_process = process;
}

/* Whether debug lines are printed. */
int
log_verbose(void)
{
	return log_level >= LOG_LEVEL_DEBUG;
}

/* Write one line, with an optional strerror suffix; never changes errno. */
static void
log_vwrite(int level, int with_errno, const char *fmt, va_list ap)
{
	int saved = errno;
	char msg[2048], stamp[64];
	struct timeval tv;
	struct tm tm;

	if (level > log_level) {
		errno = saved;
		return;
	}
	vsnprintf(msg, sizeof msg, fmt, ap);
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	if (with_errno)
		fprintf(stderr, "%s.%03ldZ leasekeeper[%ld] %s %s: %s: %s\n", stamp,
		        (long)(tv.tv_usec / 1000), (long)getpid(), log_process,
		        log_level_names[level], msg, strerror(saved));
	else
		fprintf(stderr, "%s.%03ldZ leasekeeper[%ld] %s %s: %s\n", stamp,
		        (long)(tv.tv_usec / 1000), (long)getpid(), log_process,
		        log_level_names[level], msg);
	fflush(stderr);
	errno = saved;
}

/* A warning with the current errno's text appended. */
void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, 1, fmt, ap);
	va_end(ap);
}

/* A warning. */
void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, 0, fmt, ap);
	va_end(ap);
}

/* An informational line. */
void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_INFO, 0, fmt, ap);
	va_end(ap);
}

/* A debug line, shown with -v. */
void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_DEBUG, 0, fmt, ap);
	va_end(ap);
}

/* Log with errno's text and exit 1. */
void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_FATAL, 1, fmt, ap);
	va_end(ap);
	exit(1);
}

/* Log and exit 1. */
void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_FATAL, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
