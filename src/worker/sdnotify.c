/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * sdnotify.c: tell systemd how the worker is (Type=notify): READY=1, RELOADING=1,
 * STOPPING=1, STATUS= and the watchdog's WATCHDOG=1, as sd_notify(3) and systemd.service(5)
 * describe them, over a datagram socket, without linking libsystemd.
 */

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "sdnotify.h"

/* A socket that refuses us would refuse every watchdog ping: warn once, then count. */
static struct log_limit sdnotify_lim;

/* Whether systemd listens: $NOTIFY_SOCKET names a path or an abstract socket that fits. */
int
sdnotify_listening(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;

	return path != NULL && (path[0] == '/' || path[0] == '@') && path[1] != '\0' &&
	       strlen(path) < sizeof sa.sun_path;
}

/*
 * Send message (NAME=VALUE lines) to $NOTIFY_SOCKET: 1 sent, 0 nobody listens, -1 failed
 * (logged, rate-limited).
 */
int
sdnotify(const char *message)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t len;
	int fd, rc = 1;

	if (!sdnotify_listening())
		return 0;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract: the name is the bytes that follow, no NUL */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
		log_warn_limited(&sdnotify_lim, "sd_notify: socket");
		return -1;
	}
	if (sendto(fd, message, strlen(message), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0) {
		log_warn_limited(&sdnotify_lim, "sd_notify to %s", path);
		rc = -1;
	}
	close(fd);
	return rc;
}

/* CLOCK_MONOTONIC in microseconds: the MONOTONIC_USEC= that goes with RELOADING=1. */
uint64_t
sdnotify_monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A decimal number without sign or blanks that fits in 64 bits, or -1. */
static int
sdnotify_number(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (s == NULL || *s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/*
 * The watchdog interval systemd expects pings within, in microseconds, from
 * $WATCHDOG_USEC and $WATCHDOG_PID (either may be NULL), as sd_watchdog_enabled(3) reads
 * them: 0 (no watchdog) when the interval is absent, 0 or malformed, or when WATCHDOG_PID
 * is set to another process than self (the variables leaked to a child).
 */
uint64_t
sdnotify_watchdog_usec(const char *usec, const char *pid, pid_t self)
{
	uint64_t v, p;

	if (sdnotify_number(usec, &v) != 0 || v == 0)
		return 0;
	if (pid != NULL && (sdnotify_number(pid, &p) != 0 || p != (uint64_t)self))
		return 0;
	return v;
}
