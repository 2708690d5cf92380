/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the web process (`leasekeeper web`). */
/*
 * webdoc.c: the pure parts of `leasekeeper web` that read outside input: which listen
 * addresses it takes (Host headers: http_host_ok in src/http/http.c), whether a request
 * carries the dashboard's token, and cutting the strings of a view that ZooKeeper filled
 * (anyone's to write) down to a bound. No network, no logging: the fuzzer drives them.
 */

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "utf8.h"
#include "webdoc.h"
#include "xmalloc.h"

/* Whether HOST (of HOST:PORT, maybe in brackets) is a loopback address or localhost. */
int
webdoc_loopback(const char *listen)
{
	char host[256];
	const char *colon = strrchr(listen, ':');
	size_t n = colon != NULL ? (size_t)(colon - listen) : strlen(listen);
	unsigned char addr[16];

	if (n >= sizeof host)
		return 0;
	memcpy(host, listen, n);
	host[n] = '\0';
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	if (strcmp(host, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, host, addr) == 1)
		return addr[0] == 127;
	if (inet_pton(AF_INET6, host, addr) == 1)
		return memcmp(addr, &in6addr_loopback, sizeof in6addr_loopback) == 0;
	return 0;
}

/* Whether v[0..len) is token, compared in time that does not depend on where they differ. */
static int
webdoc_same(const char *v, size_t len, const char *token)
{
	size_t n = strlen(token), i;
	unsigned char diff = (unsigned char)(len != n);

	for (i = 0; i < n; i++)
		diff |= (unsigned char)(token[i] ^ (i < len ? v[i] : 0));
	return diff == 0 && n > 0;
}

/* Whether the list (items separated by sep, blanks around them) has name=token. */
static int
webdoc_find(const char *list, char sep, const char *name, const char *token)
{
	const char *p = list, *end, *eq;
	size_t n = strlen(name);

	while (*p != '\0') {
		while (*p == ' ' || *p == '\t')
			p++;
		end = strchr(p, sep);
		if (end == NULL)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq != NULL && (size_t)(eq - p) == n && memcmp(p, name, n) == 0) {
			size_t len = (size_t)(end - eq - 1);

			while (len > 0 && (eq[len] == ' ' || eq[len] == '\t'))
				len--;
			if (webdoc_same(eq + 1, len, token))
				return 1;
		}
		p = *end == '\0' ? end : end + 1;
	}
	return 0;
}

/*
 * Whether a request carries the dashboard's token: 2 in the URI's query (?token=T: the
 * page then sets the cookie), 1 in the cookie WEBDOC_COOKIE or an "Authorization: Bearer T"
 * header, 0 if not. Any argument but token may be NULL.
 */
int
webdoc_token_ok(const char *uri, const char *cookie, const char *authorization, const char *token)
{
	const char *query = uri != NULL ? strchr(uri, '?') : NULL;
	char *q;
	int ok;

	if (query != NULL) {
		q = xstrdup(query + 1);
		q[strcspn(q, "#")] = '\0';
		ok = webdoc_find(q, '&', "token", token);
		free(q);
		if (ok)
			return 2;
	}
	if (cookie != NULL && webdoc_find(cookie, ';', WEBDOC_COOKIE, token))
		return 1;
	if (authorization != NULL && strncmp(authorization, "Bearer ", 7) == 0 &&
	    webdoc_same(authorization + 7, strlen(authorization + 7), token))
		return 1;
	return 0;
}

/* A string cut to at most max bytes, on a character's boundary, with "..." after it. */
static json_t *
webdoc_cut(const char *s, size_t len, size_t max)
{
	size_t at = 0, n;
	uint32_t cp;
	char *text;
	json_t *out;

	while (at < len) {
		n = utf8_char(s + at, len - at, &cp);
		if (n == 0 || at + n > max)
			break;
		at += n;
	}
	text = xmalloc(at + 4);
	memcpy(text, s, at);
	memcpy(text + at, "...", 4);
	out = json_stringn(text, at + 3);
	free(text);
	return out != NULL ? out : json_string("...");
}

/* Cut every string of v longer than max bytes. */
void
webdoc_trim(json_t *v, size_t max)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, key, item) {
			if (json_is_string(item) && json_string_length(item) > max)
				json_object_set_new(v, key,
				                    webdoc_cut(json_string_value(item),
				                               json_string_length(item), max));
			else
				webdoc_trim(item, max);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item) {
			if (json_is_string(item) && json_string_length(item) > max)
				json_array_set_new(v, i,
				                   webdoc_cut(json_string_value(item),
				                              json_string_length(item), max));
			else
				webdoc_trim(item, max);
		}
	}
}
