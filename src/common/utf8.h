/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* utf8.h: UTF-8 text: decoding one character, and quoting untrusted text for messages. */
#ifndef UTF8_H
#define UTF8_H

#include <stddef.h>
#include <stdint.h>

/* How many characters utf8_quote keeps of a longer text: its start and end around "...". */
#define UTF8_QUOTE_MAX 64
/* The longest escaped form of one character: "\u{10FFFF}". */
#define UTF8_ESCAPE_MAX 10

size_t utf8_char(const char *s, size_t len, uint32_t *cp);
char *utf8_quote(const char *s, size_t len);
char *utf8_quote_str(const char *s);
char *utf8_escape(const char *s);
char *utf8_valid(const char *s, size_t len);

#endif
