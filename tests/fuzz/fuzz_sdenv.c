/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_sdenv.c: systemd's environment variables as the worker reads them; anyone who starts
 * the process sets its environment. The input is two strings split at the first NUL: the
 * socket activation's LISTEN_PID and LISTEN_FDS (http_systemd_passed, the HTTP listener),
 * then the same two as WATCHDOG_USEC and WATCHDOG_PID (sdnotify_watchdog_usec), each
 * tried against a few process ids; and the first string as JOURNAL_STREAM
 * (log_journal_stream_parse, "DEVICE:INODE").
 *
 * Each answer is checked against a reference reading of the harness's own, both ways:
 * plain decimal numbers only (no sign, space or suffix; leading zeros allowed), a pid that
 * is the process's own; LISTEN_FDS 1 to HTTP_MAX_LISTEN_FDS; a watchdog interval above 0
 * and below 2^64, WATCHDOG_PID absent or ours; JOURNAL_STREAM two such numbers split by
 * one colon.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "log.h"
#include "sdnotify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether s is digits only (one at least) below 2^64, its value in *v. */
static int
fuzz_sdenv_number(const char *s, uint64_t *v)
{
	uint64_t n = 0;

	if (*s == '\0' || strspn(s, "0123456789") != strlen(s))
		return 0;
	for (; *s != '\0'; s++) {
		if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return 0;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*v = n;
	return 1;
}

/* Both readings of a and b against the process id own. */
static void
fuzz_sdenv_check(const char *a, const char *b, long own)
{
	uint64_t p, n, usec;
	int want;

	want = fuzz_sdenv_number(a, &p) && p == (uint64_t)own && fuzz_sdenv_number(b, &n) &&
	       n >= 1 && n <= HTTP_MAX_LISTEN_FDS;
	if (http_systemd_passed(a, b, own) != want)
		abort();
	usec = fuzz_sdenv_number(a, &n) && n > 0 && fuzz_sdenv_number(b, &p) && p == (uint64_t)own
	           ? n
	           : 0;
	if (sdnotify_watchdog_usec(a, b, (pid_t)own) != usec)
		abort();
	usec = fuzz_sdenv_number(a, &n) ? n : 0;
	if (sdnotify_watchdog_usec(a, NULL, (pid_t)own) != usec)
		abort();
}

/* JOURNAL_STREAM: parsed exactly when it is DIGITS:DIGITS, each below 2^64, as read. */
static void
fuzz_sdenv_journal(char *text)
{
	char *colon = strchr(text, ':');
	uint64_t dev, ino, d, i;
	int want = 0;

	if (colon != NULL) {
		*colon = '\0';
		want = fuzz_sdenv_number(text, &d) && fuzz_sdenv_number(colon + 1, &i);
		*colon = ':';
	}
	if ((log_journal_stream_parse(text, &dev, &ino) == 0) != want ||
	    (want && (dev != d || ino != i)))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long owns[] = {1, 4242, 4194304, 2147483647};
	char *text, *second;
	size_t i;

	if (size > 256)
		return 0;
	text = malloc(size + 2);
	memcpy(text, data, size);
	text[size] = text[size + 1] = '\0';
	second = text + strlen(text) + 1; /* no NUL in the input: the second is "" */
	for (i = 0; i < sizeof owns / sizeof owns[0]; i++)
		fuzz_sdenv_check(text, second, owns[i]);
	fuzz_sdenv_journal(text);
	/* No variable, or no process id, is never a socket. */
	if (http_systemd_passed(NULL, second, 4242) || http_systemd_passed(text, NULL, 4242) ||
	    http_systemd_passed(text, second, 0) || sdnotify_watchdog_usec(NULL, text, 4242) != 0)
		abort();
	free(text);
	return 0;
}
