/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_listenenv.c: systemd's socket-activation variables as the HTTP listener reads them
 * (http_systemd_passed): anyone who starts the process sets its environment. The input is
 * LISTEN_PID, a NUL, then LISTEN_FDS; each is tried against a few process ids.
 *
 * Accepted means exactly: both plain decimal numbers, the pid the process's own (leading
 * zeros allowed), the count 1 to HTTP_MAX_LISTEN_FDS. The harness checks that against a
 * reference reading of its own, both ways.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether s is digits only (one at least) and its value, less than 2^63, equals want. */
static int
fuzz_listenenv_is(const char *s, unsigned long long want, unsigned long long *v)
{
	unsigned long long n = 0;

	if (*s == '\0' || strspn(s, "0123456789") != strlen(s))
		return 0;
	for (; *s != '\0'; s++) {
		if (n > (((unsigned long long)INT64_MAX) - (unsigned)(*s - '0')) / 10)
			return 0; /* too large for any pid or count */
		n = n * 10 + (unsigned)(*s - '0');
	}
	*v = n;
	return want == 0 || n == want;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long owns[] = {1, 4242, 4194304, 2147483647};
	char *text, *fds;
	unsigned long long n;
	int got, want;
	size_t i;

	if (size > 256)
		return 0;
	text = malloc(size + 2);
	memcpy(text, data, size);
	text[size] = text[size + 1] = '\0';
	fds = text + strlen(text) + 1;
	if (fds > text + size)
		fds = text + size + 1; /* no NUL: LISTEN_FDS empty */
	for (i = 0; i < sizeof owns / sizeof owns[0]; i++) {
		got = http_systemd_passed(text, fds, owns[i]);
		want = fuzz_listenenv_is(text, (unsigned long long)owns[i], &n) &&
		       fuzz_listenenv_is(fds, 0, &n) && n >= 1 && n <= HTTP_MAX_LISTEN_FDS;
		if (got != want)
			abort();
	}
	/* No variable, or no process id, is never a socket. */
	if (http_systemd_passed(NULL, fds, 4242) || http_systemd_passed(text, NULL, 4242) ||
	    http_systemd_passed(text, fds, 0))
		abort();
	free(text);
	return 0;
}
