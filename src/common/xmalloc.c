/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* xmalloc.c: allocation that ends the process on exhaustion. */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xmalloc.h"

/* malloc, or exit. */
void *
xmalloc(size_t size)
{
	void *p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		fatalx("out of memory allocating %zu bytes", size);
	return p;
}

/* calloc, or exit. */
void *
xcalloc(size_t n, size_t size)
{
	void *p;

	if (n == 0 || size == 0)
		n = size = 1;
	if ((p = calloc(n, size)) == NULL)
		fatalx("out of memory allocating %zu x %zu bytes", n, size);
	return p;
}

/* realloc, or exit. */
void *
xrealloc(void *old, size_t size)
{
	void *p;

	if (size == 0)
		size = 1;
	if ((p = realloc(old, size)) == NULL)
		fatalx("out of memory allocating %zu bytes", size);
	return p;
}

/* realloc of n elements with an overflow check, or exit. */
void *
xreallocarray(void *old, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		fatalx("allocation overflow: %zu x %zu bytes", n, size);
	return xrealloc(old, n * size);
}

/* strdup, or exit. */
char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

/* strndup, or exit. */
char *
xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* asprintf, or exit; returns the length. */
int
xasprintf(char **out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatalx("out of memory formatting a string");
	return n;
}
