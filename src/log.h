/* log.h: leveled logging to stderr, printf-checked, errno preserved. */
#ifndef LOG_H
#define LOG_H

#include <stdarg.h>

enum log_level { LOG_LEVEL_FATAL, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_init(int verbose, const char *process);
void log_set_process(const char *process);
int log_verbose(void);
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
