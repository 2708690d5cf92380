/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * config-read.c: the first pass of config_load: the files, read into sections of raw
 * key = value lines, and the problems found on the way, collected as "file:line: message".
 *
 * inih hands its callback neither line numbers nor text it could not parse, cuts section
 * names at 49 and lines at 200 characters, takes " ;" for the start of a comment (which
 * would silently cut "a ; b" in a command) and an indented line for the continuation of
 * the previous value. So our reader lexes each raw line itself: it counts lines, reports
 * malformed ones, tracks the section and keeps the value verbatim, and hands inih only
 * "KEY=" for each good key line; inih's callback then files that key under the section.
 */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config-int.h"
#include "log.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define CONFIG_KEY_MAX        48
#define CONFIG_MAX_FILE_BYTES (4 * 1024 * 1024)
#define CONFIG_KEY_CHARS      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

static const char *config_sections[CONFIG_NKINDS + 1] = {"zookeeper", "worker", "safety",
                                                         "http",      "job",    NULL};

static const char *config_keys_zookeeper[] = {"hosts",  "root",      "session_timeout",
                                              "auth",   "auth_file", "require_acl",
                                              "reader", "operator",  NULL};
static const char *config_keys_worker[] = {"node_id",
                                           "jobs",
                                           "state_dir",
                                           "allow_root_jobs",
                                           "on_shutdown",
                                           "timezone",
                                           "allow_no_jobs",
                                           "pass_env",
                                           "cgroups",
                                           "memory_max",
                                           "memory_high",
                                           "cpu_max",
                                           "tasks_max",
                                           "io_weight",
                                           "tick_claim",
                                           "unhealthy_after",
                                           "unhealthy_probe",
                                           "labels",
                                           "on_failure",
                                           "on_success",
                                           "on_missed",
                                           "hook_timeout",
                                           "allow_open_control",
                                           "allow_open_output",
                                           NULL};
static const char *config_keys_safety[] = {"safety_margin", "kill_grace", NULL};
static const char *config_keys_http[] = {"listen", NULL};
static const char *config_keys_job[] = {"command",
                                        "shell",
                                        "schedule",
                                        "timezone",
                                        "leases",
                                        "lock",
                                        "lock_path",
                                        "lock_mode",
                                        "locks",
                                        "per_tick",
                                        "start_deadline",
                                        "timeout",
                                        "retries",
                                        "retry_backoff",
                                        "max_failures",
                                        "restart_backoff",
                                        "kill_grace",
                                        "user",
                                        "group",
                                        "umask",
                                        "workdir",
                                        "env",
                                        "log_file",
                                        "log_max",
                                        "history",
                                        "on_shutdown",
                                        "pass_env",
                                        "memory_max",
                                        "memory_high",
                                        "cpu_max",
                                        "tasks_max",
                                        "io_weight",
                                        "jitter",
                                        "constraint",
                                        "record_output",
                                        "on_failure",
                                        "on_success",
                                        "on_missed",
                                        "hook_timeout",
                                        "params",
                                        "catch_up",
                                        "catch_up_limit",
                                        "overlap",
                                        "after",
                                        NULL};

static const char **config_keys[CONFIG_NKINDS] = {config_keys_zookeeper, config_keys_worker,
                                                  config_keys_safety, config_keys_http,
                                                  config_keys_job};

static void config_errorv(struct config_ctx *, size_t, int, const char *, va_list)
    __attribute__((format(printf, 4, 0)));

/* Input quoted for a message with utf8_quote: escaped, shortened; lives as long as ctx. */
const char *
config_q(struct config_ctx *ctx, const char *s)
{
	ctx->quoted = xreallocarray(ctx->quoted, ctx->nquoted + 1, sizeof *ctx->quoted);
	return ctx->quoted[ctx->nquoted++] = utf8_quote_str(s);
}

/* Record a problem at file:line. */
static void
config_errorv(struct config_ctx *ctx, size_t file, int line, const char *fmt, va_list ap)
{
	struct config_err *e;

	ctx->errs = xreallocarray(ctx->errs, ctx->nerrs + 1, sizeof *ctx->errs);
	e = &ctx->errs[ctx->nerrs];
	e->file = file;
	e->line = line;
	e->seq = ctx->nerrs++;
	if (vasprintf(&e->text, fmt, ap) == -1)
		fatalx("out of memory formatting a string");
}

/* Record a problem at file:line. */
void
config_error(struct config_ctx *ctx, size_t file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_errorv(ctx, file, line, fmt, ap);
	va_end(ap);
}

/* Record a problem at a key's line, or at its section's line when kv is NULL. */
void
config_error_kv(struct config_ctx *ctx, const struct config_sec *sec, const struct config_kv *kv,
                const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_errorv(ctx, sec->file, kv != NULL ? kv->line : sec->line, fmt, ap);
	va_end(ap);
}

/* Order problems by file, then line, then discovery. */
static int
config_err_cmp_cb(const void *a, const void *b)
{
	const struct config_err *ea = a, *eb = b;

	if (ea->file != eb->file)
		return ea->file < eb->file ? -1 : 1;
	if (ea->line != eb->line)
		return ea->line < eb->line ? -1 : 1;
	return ea->seq < eb->seq ? -1 : (ea->seq > eb->seq);
}

/* Levenshtein distance between two short names, ignoring case. */
static size_t
config_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, *row, prev, tmp, best;

	if (la > 64 || lb > 64)
		return SIZE_MAX;
	row = xcalloc(lb + 1, sizeof *row);
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			tmp = row[j];
			best = prev + (tolower((unsigned char)a[i - 1]) !=
			               tolower((unsigned char)b[j - 1]));
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	best = row[lb];
	free(row);
	return best;
}

/* The candidate nearest to word, if it is close enough to be a likely typo; else NULL. */
static const char *
config_nearest(const char *word, const char *const *candidates)
{
	const char *best = NULL;
	size_t d, bestd = SIZE_MAX, limit;

	for (; *candidates != NULL; candidates++) {
		d = config_distance(word, *candidates);
		limit = strlen(*candidates) / 3;
		if (limit < 1)
			limit = 1;
		if (limit > 3)
			limit = 3;
		if (d <= limit && d < bestd) {
			best = *candidates;
			bestd = d;
		}
	}
	return best;
}

/* Whether key is one of keys. */
static int
config_key_in(const char *key, const char *const *keys)
{
	for (; *keys != NULL; keys++) {
		if (strcmp(key, *keys) == 0)
			return 1;
	}
	return 0;
}

/* How a section is written in messages: [zookeeper] or [job NAME]. */
static char *
config_sec_title(const struct config_sec *sec)
{
	char *s;

	if (sec->kind == CONFIG_JOB)
		xasprintf(&s, "[job %s]", sec->name);
	else
		xasprintf(&s, "[%s]", config_sections[sec->kind]);
	return s;
}

/* The first line that sets key in sec, or NULL. */
struct config_kv *
config_kv_find(const struct config_sec *sec, const char *key)
{
	size_t i;

	if (sec == NULL)
		return NULL;
	for (i = 0; i < sec->nkv; i++) {
		if (strcmp(sec->kv[i].key, key) == 0)
			return &sec->kv[i];
	}
	return NULL;
}

/* Report a key that sec does not know, with the likely fix. */
static void
config_unknown_key(struct config_ctx *ctx, const struct config_sec *sec, const char *key)
{
	char *title = config_sec_title(sec);
	const char *near;
	int k;

	near = config_nearest(key, config_keys[sec->kind]);
	if (near != NULL) {
		config_error(ctx, ctx->file, ctx->line,
		             "unknown key %s in %s: did you mean \"%s\"?", config_q(ctx, key),
		             title, near);
		goto out;
	}
	for (k = 0; k < CONFIG_NKINDS; k++) {
		if (k == (int)sec->kind || !config_key_in(key, config_keys[k]))
			continue;
		if (k == CONFIG_JOB)
			config_error(ctx, ctx->file, ctx->line,
			             "unknown key %s in %s: it is a job setting, so put it in a "
			             "[job NAME] section",
			             config_q(ctx, key), title);
		else
			config_error(ctx, ctx->file, ctx->line,
			             "unknown key %s in %s: it belongs in [%s]%s",
			             config_q(ctx, key), title, config_sections[k],
			             sec->kind == CONFIG_JOB ? ", in the worker file" : "");
		goto out;
	}
	config_error(ctx, ctx->file, ctx->line,
	             "unknown key %s in %s: remove it (see docs/configuration.md for the keys)",
	             config_q(ctx, key), title);
out:
	free(title);
}

/* Whether name can name a job or a worker: one ZooKeeper node name; if not, *cause says why. */
int
config_valid_name(const char *name, const char *what, char **cause)
{
	char *q;

	if (strchr(name, '/') != NULL) {
		q = utf8_quote_str(name);
		xasprintf(cause,
		          "%s contains '/': a %s is one ZooKeeper node name, so use letters, "
		          "digits, '-', '_' and '.'",
		          q, what);
		free(q);
		return 0;
	}
	return znode_valid_name(name, cause);
}

/* The slot of name in ctx->byname: its own, or the empty one where it belongs (FNV-1a). */
static size_t
config_byname_slot(const struct config_ctx *ctx, const char *name)
{
	uint32_t h = 2166136261u;
	size_t k;

	for (k = 0; name[k] != '\0'; k++)
		h = (h ^ (unsigned char)name[k]) * 16777619u;
	for (k = h & (ctx->nbyname - 1); ctx->byname[k] != 0; k = (k + 1) & (ctx->nbyname - 1)) {
		if (strcmp(ctx->secs[ctx->byname[k] - 1]->name, name) == 0)
			break;
	}
	return k;
}

/* The first job section named name, or ctx->nsecs if none: one lookup, not a pass. */
static size_t
config_byname(const struct config_ctx *ctx, const char *name)
{
	size_t k;

	if (ctx->nbyname == 0)
		return ctx->nsecs;
	k = config_byname_slot(ctx, name);
	return ctx->byname[k] != 0 ? ctx->byname[k] - 1 : ctx->nsecs;
}

/* Index job section i by its name, growing the table to keep it at most half full. */
static void
config_byname_add(struct config_ctx *ctx, size_t i)
{
	size_t n;

	if (2 * (i + 1) > ctx->nbyname) {
		free(ctx->byname);
		ctx->nbyname = ctx->nbyname == 0 ? 64 : ctx->nbyname * 2;
		while (2 * (i + 1) > ctx->nbyname)
			ctx->nbyname *= 2;
		ctx->byname = xcalloc(ctx->nbyname, sizeof *ctx->byname);
		for (n = 0; n < i; n++) {
			if (config_byname(ctx, ctx->secs[n]->name) == ctx->nsecs)
				ctx->byname[config_byname_slot(ctx, ctx->secs[n]->name)] = n + 1;
		}
	}
	ctx->byname[config_byname_slot(ctx, ctx->secs[i]->name)] = i + 1;
}

/* Start a section from the text between the brackets of its header. */
static void
config_open_section(struct config_ctx *ctx, const char *text)
{
	const char *word_end = text, *rest;
	const char *near;
	char *word, *why;
	struct config_sec *sec;
	size_t i;
	int k;

	while (*word_end != '\0' && !isspace((unsigned char)*word_end))
		word_end++;
	word = xstrndup(text, (size_t)(word_end - text));
	for (rest = word_end; isspace((unsigned char)*rest); rest++)
		;
	ctx->where = CONFIG_WHERE_SKIP;
	ctx->cur = NULL;

	for (k = 0; k < CONFIG_NKINDS; k++) {
		if (strcmp(word, config_sections[k]) == 0)
			break;
	}
	if (k == CONFIG_NKINDS) {
		near = config_nearest(word, config_sections);
		if (near != NULL && strcmp(near, "job") == 0 && *rest != '\0')
			config_error(ctx, ctx->file, ctx->line,
			             "unknown section [%s]: did you mean [job %s]?", text, rest);
		else if (near != NULL && strcmp(near, "job") != 0 && *rest == '\0')
			config_error(ctx, ctx->file, ctx->line,
			             "unknown section [%s]: did you mean [%s]?", text, near);
		else if (ctx->worker_file)
			config_error(ctx, ctx->file, ctx->line,
			             "unknown section [%s]: use [zookeeper], [worker], [safety], "
			             "[http] or [job NAME]",
			             text);
		else
			config_error(
			    ctx, ctx->file, ctx->line,
			    "unknown section [%s]: a job file holds [job NAME] sections only",
			    text);
		goto out;
	}

	if (k != CONFIG_JOB) {
		if (!ctx->worker_file) {
			config_error(
			    ctx, ctx->file, ctx->line,
			    "section [%s] belongs in the worker file (%s), not in a job file: "
			    "move it there",
			    word, ctx->files[0]);
			goto out;
		}
		if (*rest != '\0') {
			config_error(ctx, ctx->file, ctx->line,
			             "section [%s] takes no name: write [%s]", text, word);
		}
		if (ctx->worker[k] == NULL) {
			sec = xcalloc(1, sizeof *sec);
			sec->kind = (enum config_kind)k;
			sec->file = ctx->file;
			sec->line = ctx->line;
			ctx->worker[k] = sec;
		}
		ctx->cur = ctx->worker[k];
		ctx->where = CONFIG_WHERE_SECTION;
		goto out;
	}

	if (*rest == '\0') {
		config_error(ctx, ctx->file, ctx->line,
		             "section [job] has no name: write [job NAME], e.g. [job backup]");
		goto out;
	}
	sec = xcalloc(1, sizeof *sec);
	sec->kind = CONFIG_JOB;
	sec->name = xstrdup(rest);
	sec->file = ctx->file;
	sec->line = ctx->line;
	if (!config_valid_name(sec->name, "job name", &why)) {
		config_error(ctx, ctx->file, ctx->line, "bad job name %s", why);
		free(why);
		sec->discard = 1;
	}
	if ((i = config_byname(ctx, sec->name)) < ctx->nsecs) {
		config_error(ctx, ctx->file, ctx->line,
		             "duplicate job %s (first defined at %s:%d): rename one of them "
		             "(job names are unique across all job files)",
		             config_q(ctx, sec->name), ctx->files[ctx->secs[i]->file],
		             ctx->secs[i]->line);
		sec->discard = 1;
	}
	ctx->secs = xreallocarray(ctx->secs, ctx->nsecs + 1, sizeof *ctx->secs);
	ctx->secs[ctx->nsecs++] = sec;
	if (i == ctx->nsecs - 1)
		config_byname_add(ctx, ctx->nsecs - 1);
	ctx->cur = sec;
	ctx->where = CONFIG_WHERE_SECTION;
out:
	free(word);
}

/* Lex a "[...]" line. */
static void
config_lex_section(struct config_ctx *ctx, char *s)
{
	char *end, *text, *after;

	if ((end = strchr(s, ']')) == NULL) {
		config_error(ctx, ctx->file, ctx->line,
		             "section header %s has no closing ']': write [NAME]",
		             config_q(ctx, s));
		ctx->where = CONFIG_WHERE_SKIP;
		ctx->cur = NULL;
		return;
	}
	*end = '\0';
	for (after = end + 1; isspace((unsigned char)*after); after++)
		;
	if (*after != '\0' && *after != '#' && *after != ';')
		config_error(ctx, ctx->file, ctx->line,
		             "unexpected text %s after the section header: put it on a line of "
		             "its own, or start a comment with '#'",
		             config_q(ctx, after));
	for (text = s + 1; isspace((unsigned char)*text); text++)
		;
	for (end = text + strlen(text); end > text && isspace((unsigned char)end[-1]); end--)
		*(end - 1) = '\0';
	if (*text == '\0') {
		config_error(ctx, ctx->file, ctx->line,
		             "empty section header []: write [NAME], e.g. [job backup]");
		ctx->where = CONFIG_WHERE_SKIP;
		ctx->cur = NULL;
		return;
	}
	config_open_section(ctx, text);
}

/* Lex a line that is neither blank, comment nor header; 1 if it is a good KEY = VALUE. */
static int
config_lex_key(struct config_ctx *ctx, char *s)
{
	char *eq, *key_end, *value, *p;

	if ((eq = strchr(s, '=')) == NULL) {
		/* "key: value", as some other formats write it */
		p = s + strspn(s, CONFIG_KEY_CHARS);
		if (p != s && p[strspn(p, " \t")] == ':')
			config_error(ctx, ctx->file, ctx->line,
			             "expected KEY = VALUE, got %s: write '=' between the key "
			             "and the value",
			             config_q(ctx, s));
		else
			config_error(ctx, ctx->file, ctx->line,
			             "expected KEY = VALUE, a [SECTION] header or a comment, got "
			             "%s: fix or remove the line (comments start with '#')",
			             config_q(ctx, s));
		return 0;
	}
	for (key_end = eq; key_end > s && isspace((unsigned char)key_end[-1]); key_end--)
		;
	*key_end = '\0';
	for (value = eq + 1; isspace((unsigned char)*value); value++)
		;
	if (*s == '\0') {
		config_error(ctx, ctx->file, ctx->line, "no key before '=': write KEY = VALUE");
		return 0;
	}
	if (ctx->where == CONFIG_WHERE_NONE) {
		config_error(ctx, ctx->file, ctx->line,
		             "key %s is outside any section: put it under a header such as "
		             "%s",
		             config_q(ctx, s),
		             ctx->worker_file ? "[zookeeper], [worker] or [job NAME]"
		                              : "[job NAME]");
		return 0;
	}
	if (ctx->where == CONFIG_WHERE_SKIP)
		return 0;
	if (s[strspn(s, CONFIG_KEY_CHARS)] != '\0' || strlen(s) > CONFIG_KEY_MAX) {
		config_unknown_key(ctx, ctx->cur, s);
		return 0;
	}
	ctx->key = s;
	ctx->value = value;
	return 1;
}

/*
 * Whether the raw line s[0..len) is text we can keep: no NUL (C strings would cut the
 * value there), no control characters but tab, and UTF-8 (every value may end up in
 * JSON). Comments may hold anything but NUL. If not, report it, quoted and escaped.
 */
static int
config_line_ok(struct config_ctx *ctx, const char *s, size_t len)
{
	const char *p = s, *nul = memchr(s, '\0', len);
	size_t off, n;
	uint32_t cp;
	char *q;

	while (p < s + len && isspace((unsigned char)*p))
		p++;
	if (nul == NULL && (p == s + len || *p == '#' || *p == ';'))
		return 1;
	for (off = 0; off < len; off += n) {
		if ((n = utf8_char(s + off, len - off, &cp)) == 0)
			break;
		if ((cp < 0x20 && cp != '\t' && !(cp == '\n' && off == len - 1) &&
		     !(cp == '\r' && off >= len - 2)) ||
		    cp == 0x7f)
			break;
	}
	if (off >= len)
		return 1;
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r') && len - 1 > off)
		len--;
	q = utf8_quote(s, len);
	if (n == 0)
		config_error(ctx, ctx->file, ctx->line,
		             "byte \\x%02x at column %zu is not UTF-8, in %s: save the file as "
		             "UTF-8 (values go into ZooKeeper as JSON, which must be UTF-8)",
		             (unsigned char)s[off], off + 1, q);
	else
		config_error(ctx, ctx->file, ctx->line,
		             "control character \\x%02x at column %zu in %s: remove it (a value "
		             "may hold tabs but no other control characters, and no NUL, which "
		             "would cut it short)",
		             (unsigned)cp, off + 1, q);
	free(q);
	return 0;
}

/*
 * inih's reader: read one raw line, lex it, and hand inih "KEY=" for a good key line and
 * an empty line otherwise, so inih's callback runs exactly once per key we accept.
 */
static char *
config_reader_cb(char *str, int num, void *stream)
{
	struct config_ctx *ctx = stream;
	char *s, *end;
	ssize_t len;
	int good = 0;

	if (ctx->budget == 0) {
		ctx->paused = 1; /* an end for inih; the next call goes on from here */
		return NULL;
	}
	ctx->budget--;
	if ((len = getline(&ctx->raw, &ctx->rawsize, ctx->f)) == -1)
		return NULL;
	if ((ctx->bytes += (size_t)len) > CONFIG_MAX_FILE_BYTES) {
		config_error(ctx, ctx->file, ctx->line + 1,
		             "the file grew past %d bytes while it was read: read stops here",
		             CONFIG_MAX_FILE_BYTES);
		return NULL;
	}
	ctx->line++;
	s = ctx->raw;
	if (ctx->line == 1 && len >= 3 && strncmp(s, "\xef\xbb\xbf", 3) == 0) {
		s += 3;
		len -= 3;
	}
	if (!config_line_ok(ctx, s, (size_t)len)) {
		/* the keys under a header we could not read must not join the section before */
		if (s[strspn(s, " \t")] == '[') {
			ctx->where = CONFIG_WHERE_SKIP;
			ctx->cur = NULL;
		} else if (ctx->cur != NULL)
			ctx->cur->refused++;
		snprintf(str, (size_t)num, "\n");
		return str;
	}
	for (end = s + strlen(s); end > s && isspace((unsigned char)end[-1]); end--)
		;
	*end = '\0';
	while (isspace((unsigned char)*s))
		s++;
	if (*s == '[')
		config_lex_section(ctx, s);
	else if (*s != '\0' && *s != '#' && *s != ';')
		good = config_lex_key(ctx, s);
	if (good)
		snprintf(str, (size_t)num, "%s=\n", ctx->key);
	else
		snprintf(str, (size_t)num, "\n");
	return str;
}

/* inih's callback: file the key the reader just lexed under the current section. */
static int
config_handler_cb(void *user, const char *section, const char *name, const char *value)
{
	struct config_ctx *ctx = user;
	struct config_sec *sec = ctx->cur;
	struct config_kv *kv;
	char *title;

	(void)section;
	(void)value;
	if (sec == NULL || strcmp(name, ctx->key) != 0)
		fatalx("%s:%d: config reader and inih disagree", ctx->files[ctx->file], ctx->line);

	if (!config_key_in(name, config_keys[sec->kind])) {
		config_unknown_key(ctx, sec, name);
		return 1;
	}
	title = config_sec_title(sec);
	if (*ctx->value == '\0' && strcmp(name, "listen") != 0) {
		config_error(ctx, ctx->file, ctx->line,
		             "%s in %s has no value: give one, or remove the line to get the "
		             "default",
		             name, title);
		goto out;
	}
	/* a section lies within one file: worker sections are only read from the worker file */
	if (strcmp(name, "env") != 0 && (kv = config_kv_find(sec, name)) != NULL) {
		config_error(ctx, ctx->file, ctx->line,
		             "duplicate key \"%s\" in %s (first set at line %d): keep one "
		             "(only env may repeat)",
		             name, title, kv->line);
		goto out;
	}
	sec->kv = xreallocarray(sec->kv, sec->nkv + 1, sizeof *sec->kv);
	kv = &sec->kv[sec->nkv++];
	kv->key = xstrdup(name);
	kv->value = xstrdup(ctx->value);
	kv->line = ctx->line;
out:
	free(title);
	return 1;
}

/* Add a file to the list that errors refer to; returns its index. */
size_t
config_add_file(struct config_ctx *ctx, const char *path)
{
	ctx->files = xreallocarray(ctx->files, ctx->nfiles + 1, sizeof *ctx->files);
	ctx->files[ctx->nfiles] = xstrdup(path);
	return ctx->nfiles++;
}

/* Open one file to read into sections (config_read_some); -1 if it cannot be read. */
int
config_read_open(struct config_ctx *ctx, size_t file, int worker_file)
{
	const char *path = ctx->files[file];
	struct stat st;
	int fd;

	/* O_NONBLOCK: a FIFO put in the file's place must not stop the event loop on reload */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1) {
		config_error(ctx, file, 0, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			config_error(ctx, file, 0, "is a directory: name the .ini file");
		else
			config_error(
			    ctx, file, 0,
			    "is not a regular file (a device, FIFO or socket): name the .ini "
			    "file");
		close(fd);
		return -1;
	}
	if (st.st_size > CONFIG_MAX_FILE_BYTES) {
		config_error(ctx, file, 0,
		             "is %lld bytes; the most is %d: is it the right file? Split the jobs "
		             "over several files",
		             (long long)st.st_size, CONFIG_MAX_FILE_BYTES);
		close(fd);
		return -1;
	}
	config_perm_file(ctx, file, worker_file, fd, &st);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == -1 ||
	    (ctx->f = fdopen(fd, "r")) == NULL) {
		config_error(ctx, file, 0, "cannot read: %s", strerror(errno));
		close(fd);
		return -1;
	}
	ctx->bytes = 0;
	ctx->file = file;
	ctx->worker_file = worker_file;
	ctx->line = 0;
	ctx->where = CONFIG_WHERE_NONE;
	ctx->cur = NULL;
	return 0;
}

/*
 * Read at most lines more lines of the file open; 1 once it is read whole (and closed). A
 * file may be read in several calls: the reader's state (the section, the line number) is
 * the context's, and inih keeps none across lines that it is handed.
 */
int
config_read_some(struct config_ctx *ctx, size_t lines)
{
	ctx->budget = lines;
	ctx->paused = 0;
	ini_parse_stream(config_reader_cb, ctx, config_handler_cb, ctx);
	if (ctx->paused && !ferror(ctx->f))
		return 0;
	if (ferror(ctx->f))
		config_error(ctx, ctx->file, ctx->line + 1, "cannot read: %s", strerror(errno));
	fclose(ctx->f);
	ctx->f = NULL;
	return 1;
}

/* Read one file into sections; -1 if it cannot be read. */
int
config_read_file(struct config_ctx *ctx, size_t file, int worker_file)
{
	if (config_read_open(ctx, file, worker_file) != 0)
		return -1;
	config_read_some(ctx, SIZE_MAX);
	return 0;
}

/* Free a section. */
void
config_sec_free(struct config_sec *sec)
{
	size_t i;

	if (sec == NULL)
		return;
	for (i = 0; i < sec->nkv; i++) {
		free(sec->kv[i].key);
		free(sec->kv[i].value);
	}
	free(sec->kv);
	free(sec->name);
	free(sec);
}

/*
 * End a load: its problems sorted by file, line and discovery into errors, each
 * "file:line: message", and everything the reader held freed.
 */
void
config_ctx_finish(struct config_ctx *ctx, struct config_errors *errors)
{
	struct config_err *e;
	size_t i;
	int k;

	if (ctx->nerrs > 1)
		qsort(ctx->errs, ctx->nerrs, sizeof *ctx->errs, config_err_cmp_cb);
	errors->lines = xcalloc(ctx->nerrs, sizeof *errors->lines);
	for (i = 0; i < ctx->nerrs; i++) {
		e = &ctx->errs[i];
		if (e->line > 0)
			xasprintf(&errors->lines[i], "%s:%d: %s", ctx->files[e->file], e->line,
			          e->text);
		else
			xasprintf(&errors->lines[i], "%s: %s", ctx->files[e->file], e->text);
		free(e->text);
	}
	errors->n = ctx->nerrs;
	free(ctx->errs);
	for (i = 0; i < ctx->nsecs; i++)
		config_sec_free(ctx->secs[i]);
	free(ctx->secs);
	free(ctx->byname);
	free(ctx->log_dir_ok);
	for (k = 0; k < CONFIG_JOB; k++)
		config_sec_free(ctx->worker[k]);
	for (i = 0; i < ctx->nfiles; i++)
		free(ctx->files[i]);
	free(ctx->files);
	free(ctx->raw);
	for (i = 0; i < ctx->nquoted; i++)
		free(ctx->quoted[i]);
	free(ctx->quoted);
	free(ctx->seen);
}
