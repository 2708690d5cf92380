/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/*
 * log.h: leveled logging to stderr, printf-checked, errno preserved. On a terminal or a
 * file: "TIME leasekeeper[PID] ROLE LEVEL: text". When stderr is the journal (log_init
 * compares JOURNAL_STREAM with stderr): "<PRIORITY>ROLE[PID] LEVEL: text", the syslog
 * priority err (fatal), warning, info or debug, and no time (the journal's own).
 */
#ifndef LOG_H
#define LOG_H

#include <stdarg.h>
#include <stdint.h>

enum log_level { LOG_LEVEL_FATAL, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_init(int verbose, const char *process);
int log_journal_stream_parse(const char *e, uint64_t *dev, uint64_t *ino);
void log_set_process(const char *process);
int log_verbose(void);
const char *log_prefix(enum log_level);
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

/*
 * A fault that can repeat (a full disk, a server that refuses us) is logged once, then
 * counted for LOG_LIMIT_INTERVAL_MS; the next occurrence after that logs again with how
 * many were held back. A caller keeps one struct per site or per job, zeroed to start.
 * Events that matter one by one but could still come in a storm (a failover, a lost lease)
 * set burst: that many go out in each interval before the rest are counted.
 */
#define LOG_LIMIT_INTERVAL_MS 30000
#define LOG_LIMIT_TEXT        512

struct log_limit {
	uint64_t interval_ms; /* 0: LOG_LIMIT_INTERVAL_MS */
	uint64_t since_ms;    /* when the last line went out */
	unsigned long burst;  /* lines let out per interval; 0: 1 */
	unsigned long sent;   /* lines let out in the current interval */
	unsigned long held;   /* occurrences held back since then */
	int started;
	char last[LOG_LIMIT_TEXT]; /* the last held-back line, for log_limit_flush */
};

void log_warn_limited(struct log_limit *, const char *, ...) __attribute__((format(printf, 2, 3)));
void log_warnx_limited(struct log_limit *, const char *, ...) __attribute__((format(printf, 2, 3)));
void log_limit_flush(struct log_limit *);

#endif
