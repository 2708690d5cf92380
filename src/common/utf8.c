/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/*
 * utf8.c: UTF-8 text: decoding one character, and quoting untrusted text for messages.
 *
 * Configuration values and data read from ZooKeeper end up in JSON (which jansson refuses
 * unless it is UTF-8) and in error and log lines (where raw control bytes could rewrite a
 * terminal or forge a log line). So anything quoted from outside goes through utf8_quote,
 * which escapes what is not plainly printable and cuts long text short.
 */

#include <stdio.h>
#include <string.h>

#include "utf8.h"
#include "xmalloc.h"

/*
 * The length (1-4) of the well-formed UTF-8 character at s[0..len), with its code point in
 * *cp; 0 if the bytes there are not one (overlong forms and surrogates are not).
 */
size_t
utf8_char(const char *s, size_t len, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t c;
	size_t n, i;

	if (len == 0)
		return 0;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] < 0xc2)
		return 0;
	if (p[0] < 0xe0) {
		n = 2;
		c = p[0] & 0x1f;
	} else if (p[0] < 0xf0) {
		n = 3;
		c = p[0] & 0x0f;
	} else if (p[0] < 0xf5) {
		n = 4;
		c = p[0] & 0x07;
	} else
		return 0;
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Whether a code point may be shown as itself: printable, not a format or bidi control. */
static int
utf8_plain(uint32_t cp)
{
	if (cp < 0x80)
		return cp >= 0x20 && cp < 0x7f;
	if (cp < 0xa0 || cp == 0xad)
		return 0;
	if (cp >= 0x2010 && cp <= 0x2027)
		return 1; /* dashes, quotes and bullets */
	if ((cp >= 0x2000 && cp <= 0x206f) || (cp >= 0xd800 && cp <= 0xf8ff) ||
	    (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xfff0 && cp <= 0xffff) ||
	    (cp >= 0xe0000 && cp <= 0xe007f) || cp >= 0xf0000)
		return 0; /* spacing, bidi and format controls, private use, specials, tags */
	return 1;
}

/* How many characters (a byte that is not UTF-8 counts as one) s[0..len) holds. */
static size_t
utf8_count(const char *s, size_t len)
{
	size_t off = 0, n, count = 0;
	uint32_t cp;

	while (off < len) {
		n = utf8_char(s + off, len - off, &cp);
		off += n == 0 ? 1 : n;
		count++;
	}
	return count;
}

/*
 * Write the escaped form of one character (n bytes at s, code point cp; n == 0 for a byte
 * that is not UTF-8) at out, with '"' escaped too if quoted; return its length (at most
 * UTF8_ESCAPE_MAX).
 */
static size_t
utf8_escape_char(char *out, const char *s, size_t n, uint32_t cp, int quoted)
{
	if (n == 0)
		return (size_t)sprintf(out, "\\x%02x", (unsigned char)s[0]);
	if ((cp == '"' && quoted) || cp == '\\') {
		out[0] = '\\';
		out[1] = (char)cp;
		return 2;
	}
	if (cp == '\t')
		return (size_t)sprintf(out, "\\t");
	if (cp == '\n')
		return (size_t)sprintf(out, "\\n");
	if (cp == '\r')
		return (size_t)sprintf(out, "\\r");
	if (!utf8_plain(cp) && cp < 0x80)
		return (size_t)sprintf(out, "\\x%02x", (unsigned)cp);
	if (!utf8_plain(cp))
		return (size_t)sprintf(out, "\\u{%04X}", (unsigned)cp);
	memcpy(out, s, n);
	return n;
}

/*
 * s[0..len) in double quotes for a message: '"' and '\' escaped with '\', tab, newline
 * and carriage return as \t \n \r, other ASCII controls and bytes that are not UTF-8 as
 * \xNN, other control and invisible characters as \u{XXXX}. Text of more than
 * UTF8_QUOTE_MAX characters keeps its start and its end (where a path names its file)
 * around "..." (caller frees).
 */
char *
utf8_quote(const char *s, size_t len)
{
	size_t off = 0, n, used = 0, index = 0, total = utf8_count(s, len), head, tail_from;
	char *out = xmalloc(UTF8_QUOTE_MAX * (UTF8_ESCAPE_MAX + 2) + 8);
	uint32_t cp;

	head = total > UTF8_QUOTE_MAX ? UTF8_QUOTE_MAX / 3 : total;
	tail_from = total > UTF8_QUOTE_MAX ? total - (UTF8_QUOTE_MAX - head) : total;
	out[used++] = '"';
	for (; off < len; off += n == 0 ? 1 : n, index++) {
		n = utf8_char(s + off, len - off, &cp);
		if (index == head && head != tail_from) {
			memcpy(out + used, "...", 3);
			used += 3;
		}
		if (index >= head && index < tail_from)
			continue;
		used += utf8_escape_char(out + used, s + off, n, cp, 1);
	}
	out[used++] = '"';
	out[used] = '\0';
	return out;
}

/*
 * The whole of s, escaped as utf8_quote does but without quotes ('"' stays as it is), for
 * a table whose cells come from outside (caller frees).
 */
char *
utf8_escape(const char *s)
{
	size_t len = strlen(s), off, n, used = 0;
	char *out = xmalloc(len * UTF8_ESCAPE_MAX + 1);
	uint32_t cp;

	for (off = 0; off < len; off += n == 0 ? 1 : n) {
		n = utf8_char(s + off, len - off, &cp);
		used += utf8_escape_char(out + used, s + off, n, cp, 0);
	}
	out[used] = '\0';
	return out;
}

/* utf8_quote of a NUL-terminated string (caller frees). */
char *
utf8_quote_str(const char *s)
{
	return utf8_quote(s, strlen(s));
}

/*
 * s[0..len) as valid UTF-8 (caller frees): each byte that does not start a well-formed
 * character, and NUL, becomes U+FFFD; a character cut at the very start (the end of an
 * output, cut anywhere) is dropped.
 */
char *
utf8_valid(const char *s, size_t len)
{
	size_t off = 0, n, used = 0;
	char *out = xmalloc(len * 3 + 1);
	uint32_t cp;

	while (off < len && ((unsigned char)s[off] & 0xc0) == 0x80 && off < 3)
		off++;
	for (; off < len; off += n == 0 ? 1 : n) {
		n = utf8_char(s + off, len - off, &cp);
		if (n == 0 || cp == 0) {
			memcpy(out + used, "\xef\xbf\xbd", 3);
			used += 3;
			continue;
		}
		memcpy(out + used, s + off, n);
		used += n;
	}
	out[used] = '\0';
	return out;
}
