/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/*
 * log.c: leveled logging to stderr with a timestamp, the pid and the process role; when
 * stderr is the journal, a syslog priority prefix instead of the timestamp (journald
 * stamps each line itself).
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

static int log_level = LOG_LEVEL_INFO;
static const char *log_process = "main";

static const char *log_level_names[] = {"fatal", "warn", "info", "debug"};
/* The syslog priority of each level: err, warning, info, debug. */
static const int log_level_priorities[] = {3, 4, 6, 7};
static int log_journal; /* stderr is the journal's stream: priority prefixes */

/* A number of digits only (no sign or space) below 2^64 from *s into *v, *s past it; or -1. */
static int
log_journal_number(const char **s, uint64_t *v)
{
	const char *p = *s;

	*v = 0;
	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (*v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		*v = *v * 10 + (uint64_t)(*p - '0');
	}
	*s = p;
	return 0;
}

/* JOURNAL_STREAM's "DEVICE:INODE" (e) into *dev and *ino: 0, or -1 when e is not that. */
int
log_journal_stream_parse(const char *e, uint64_t *dev, uint64_t *ino)
{
	if (e == NULL || log_journal_number(&e, dev) != 0 || *e++ != ':' ||
	    log_journal_number(&e, ino) != 0 || *e != '\0')
		return -1;
	return 0;
}

/*
 * Whether stderr is the stream systemd connected to the journal: JOURNAL_STREAM holds
 * "DEVICE:INODE" of it, which must match stderr's (a child's stderr may have been
 * redirected since), as sd-daemon(3) and systemd.exec(5) say.
 */
static int
log_stderr_is_journal(void)
{
	uint64_t dev, ino;
	struct stat st;

	if (log_journal_stream_parse(getenv("JOURNAL_STREAM"), &dev, &ino) != 0 ||
	    fstat(STDERR_FILENO, &st) != 0)
		return 0;
	return (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

/*
 * Set the verbosity (-1 warnings only, 0 info, 1 or more debug) and the role in each line,
 * and look whether stderr is the journal (JOURNAL_STREAM): processes forked later keep it.
 */
void
log_init(int verbose, const char *process)
{
	log_level = verbose > 0 ? LOG_LEVEL_DEBUG : verbose < 0 ? LOG_LEVEL_WARN : LOG_LEVEL_INFO;
	if (process != NULL)
		log_process = process;
	log_journal = log_stderr_is_journal();
}

/* Change the role shown in each line, after a fork. */
void
log_set_process(const char *process)
{
	log_process = process;
}

/*
 * The prefix a line that is written to stderr outside these functions (a configuration
 * error, printed as is) needs for the journal to file it at level's priority: "" elsewhere.
 */
const char *
log_prefix(enum log_level level)
{
	static const char *const prefixes[] = {"<3>", "<4>", "<6>", "<7>"};

	return log_journal ? prefixes[level] : "";
}

/* Whether debug lines are printed. */
int
log_verbose(void)
{
	return log_level >= LOG_LEVEL_DEBUG;
}

/* Write one line, with an optional strerror suffix; never changes errno. */
static void log_vwrite(int, int, const char *, va_list) __attribute__((format(printf, 3, 0)));

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
	if (log_journal) {
		/* One journal entry per line: a newline inside would start one without priority. */
		char *p;

		for (p = msg; (p = strchr(p, '\n')) != NULL;)
			*p = ' ';
		if (with_errno)
			fprintf(stderr, "<%d>%s[%ld] %s: %s: %s\n", log_level_priorities[level],
			        log_process, (long)getpid(), log_level_names[level], msg,
			        strerror(saved));
		else
			fprintf(stderr, "<%d>%s[%ld] %s: %s\n", log_level_priorities[level],
			        log_process, (long)getpid(), log_level_names[level], msg);
		fflush(stderr);
		errno = saved;
		return;
	}
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

/*
 * The limiter's decision at now_ms: 1 to log (with *held occurrences held back over the
 * last *span_ms to summarise, both 0 if none), 0 to hold this one back. Pure but for l.
 */
static int
log_limit_check(struct log_limit *l, uint64_t now_ms, unsigned long *held, uint64_t *span_ms)
{
	uint64_t interval = l->interval_ms != 0 ? l->interval_ms : LOG_LIMIT_INTERVAL_MS;

	*held = 0;
	*span_ms = 0;
	if (l->started && now_ms >= l->since_ms && now_ms - l->since_ms < interval) {
		if (l->held == 0 && l->sent < (l->burst != 0 ? l->burst : 1)) {
			l->sent++;
			return 1;
		}
		l->held++;
		return 0;
	}
	if (l->started) {
		*held = l->held;
		*span_ms = now_ms >= l->since_ms ? now_ms - l->since_ms : 0;
	}
	l->started = 1;
	l->since_ms = now_ms;
	l->held = 0;
	l->sent = 1;
	return 1;
}

/* Log text through the limiter: now with a summary of what was held back, or hold it. */
static void
log_limit_write(struct log_limit *l, const char *text)
{
	unsigned long held;
	uint64_t span_ms;

	if (!log_limit_check(l, clock_now_ns() / CLOCK_NS_PER_MS, &held, &span_ms)) {
		snprintf(l->last, sizeof l->last, "%s", text);
		return;
	}
	if (held > 0)
		log_warnx("%s (repeated %lu time%s in the last %llu s)", text, held,
		          held == 1 ? "" : "s", (unsigned long long)(span_ms + 999) / 1000);
	else
		log_warnx("%s", text);
}

/* A warning with errno's text, rate-limited by l. */
void
log_warn_limited(struct log_limit *l, const char *fmt, ...)
{
	int saved = errno;
	char msg[LOG_LIMIT_TEXT], text[LOG_LIMIT_TEXT + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(text, sizeof text, "%s: %s", msg, strerror(saved));
	log_limit_write(l, text);
	errno = saved;
}

/* A warning, rate-limited by l. */
void
log_warnx_limited(struct log_limit *l, const char *fmt, ...)
{
	int saved = errno;
	char text[LOG_LIMIT_TEXT];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	log_limit_write(l, text);
	errno = saved;
}

/*
 * Say how often the last warning was held back, if it was, and start afresh: for when the
 * site goes away (a job ends) or the fault is over, so no count is lost.
 */
void
log_limit_flush(struct log_limit *l)
{
	uint64_t now_ms = clock_now_ns() / CLOCK_NS_PER_MS;
	int saved = errno;

	if (l->started && l->held > 0)
		log_warnx("%s (repeated %lu time%s in the last %llu s)", l->last, l->held,
		          l->held == 1 ? "" : "s",
		          (unsigned long long)(now_ms - l->since_ms + 999) / 1000);
	l->started = 0;
	l->held = 0;
	errno = saved;
}
