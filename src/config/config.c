/* Runs in: the main process. */
/*
 * config.c: the worker file and its job files, parsed and validated in two passes.
 *
 * The first pass reads every file into sections of raw key = value lines, each with its
 * line number; the second resolves defaults and checks values and how they combine.
 * Every problem becomes one "file:line: message" that names the fix, and loading goes on
 * after each, so that `leasekeeper check` shows them all at once.
 *
 * inih hands its callback neither line numbers nor text it could not parse, cuts section
 * names at 49 and lines at 200 characters, takes " ;" for the start of a comment (which
 * would silently cut "a ; b" in a command) and an indented line for the continuation of
 * the previous value. So our reader lexes each raw line itself: it counts lines, reports
 * malformed ones, tracks the section and keeps the value verbatim, and hands inih only
 * "KEY=" for each good key line; inih's callback then files that key under the section.
 */

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "duration.h"
#include "layout.h"
#include "log.h"
#include "leasekeeper.h"
#include "schedule.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define CONFIG_DEFAULT_ROOT      "/leasekeeper"
#define CONFIG_DEFAULT_JOBS      "jobs/*.ini"
#define CONFIG_DEFAULT_STATE_DIR "/var/lib/leasekeeper"
#define CONFIG_KEY_MAX           48
#define CONFIG_MAX_COMMAND_BYTES 32768
#define CONFIG_MIN_BACKOFF_MS    1000
#define CONFIG_MAX_FILE_BYTES    (4 * 1024 * 1024)
#define CONFIG_KEY_CHARS         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

/* The kinds of section; the worker's come first, in the order of config_sections. */
enum config_kind {
	CONFIG_ZOOKEEPER,
	CONFIG_WORKER,
	CONFIG_SAFETY,
	CONFIG_HTTP,
	CONFIG_JOB,
	CONFIG_NKINDS
};

static const char *config_sections[CONFIG_NKINDS + 1] = {"zookeeper", "worker", "safety",
                                                         "http",      "job",    NULL};

static const char *config_keys_zookeeper[] = {"hosts", "root", "session_timeout", "auth", NULL};
static const char *config_keys_worker[] = {"node_id",         "jobs",        "state_dir",
                                           "allow_root_jobs", "on_shutdown", "timezone",
                                           "allow_no_jobs",   NULL};
static const char *config_keys_safety[] = {"safety_margin", "kill_grace", NULL};
static const char *config_keys_http[] = {"listen", NULL};
static const char *config_keys_job[] = {
    "command",  "shell",         "schedule",     "timezone",        "leases",
    "lock",     "lock_path",     "per_tick",     "start_deadline",  "timeout",
    "retries",  "retry_backoff", "max_failures", "restart_backoff", "kill_grace",
    "user",     "group",         "umask",        "workdir",         "env",
    "log_file", "log_max",       "history",      "on_shutdown",     NULL};

static const char **config_keys[CONFIG_NKINDS] = {config_keys_zookeeper, config_keys_worker,
                                                  config_keys_safety, config_keys_http,
                                                  config_keys_job};

/* One key = value line. */
struct config_kv {
	char *key;
	char *value;
	int line;
};

/* One section: a worker section (all its headers merged) or one [job NAME]. */
struct config_sec {
	enum config_kind kind;
	char *name; /* the job's name */
	size_t file;
	int line;
	int discard; /* a duplicate or badly named job: checked, then dropped */
	int refused; /* lines refused by config_line_ok: a missing key may be one of them */
	struct config_kv *kv;
	size_t nkv;
};

/* One problem, kept apart from its file and line until they are sorted. */
struct config_err {
	size_t file;
	int line; /* 0: about the whole file */
	size_t seq;
	char *text;
};

/* Where the reader stands in the current file. */
enum config_where { CONFIG_WHERE_NONE, CONFIG_WHERE_SECTION, CONFIG_WHERE_SKIP };

/* The state of one config_load. */
struct config_ctx {
	char **files;
	size_t nfiles;
	struct config_err *errs;
	size_t nerrs;
	struct config_sec **secs;
	size_t nsecs;
	struct config_sec *worker[CONFIG_JOB];

	/* the file being read */
	FILE *f;
	size_t file;
	int worker_file;
	int line;
	size_t bytes; /* read so far, against CONFIG_MAX_FILE_BYTES */
	char *raw;
	size_t rawsize;
	enum config_where where;
	struct config_sec *cur;
	const char *key;
	const char *value;

	char **quoted; /* config_q's strings, freed with the context */
	size_t nquoted;
};

static void config_errorv(struct config_ctx *, size_t, int, const char *, va_list)
    __attribute__((format(printf, 4, 0)));
static void config_error(struct config_ctx *, size_t, int, const char *, ...)
    __attribute__((format(printf, 4, 5)));
static void config_error_kv(struct config_ctx *, const struct config_sec *,
                            const struct config_kv *, const char *, ...)
    __attribute__((format(printf, 4, 5)));

/* Input quoted for a message with utf8_quote: escaped, shortened; lives as long as ctx. */
static const char *
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
static void
config_error(struct config_ctx *ctx, size_t file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_errorv(ctx, file, line, fmt, ap);
	va_end(ap);
}

/* Record a problem at a key's line, or at its section's line when kv is NULL. */
static void
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
static struct config_kv *
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
static int
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
	for (i = 0; i < ctx->nsecs; i++) {
		if (strcmp(ctx->secs[i]->name, sec->name) != 0)
			continue;
		config_error(ctx, ctx->file, ctx->line,
		             "duplicate job %s (first defined at %s:%d): rename one of them "
		             "(job names are unique across all job files)",
		             config_q(ctx, sec->name), ctx->files[ctx->secs[i]->file],
		             ctx->secs[i]->line);
		sec->discard = 1;
		break;
	}
	ctx->secs = xreallocarray(ctx->secs, ctx->nsecs + 1, sizeof *ctx->secs);
	ctx->secs[ctx->nsecs++] = sec;
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
static size_t
config_add_file(struct config_ctx *ctx, const char *path)
{
	ctx->files = xreallocarray(ctx->files, ctx->nfiles + 1, sizeof *ctx->files);
	ctx->files[ctx->nfiles] = xstrdup(path);
	return ctx->nfiles++;
}

/* Read one file into sections; -1 if it cannot be read. */
static int
config_read_file(struct config_ctx *ctx, size_t file, int worker_file)
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
	ini_parse_stream(config_reader_cb, ctx, config_handler_cb, ctx);
	if (ferror(ctx->f))
		config_error(ctx, file, ctx->line + 1, "cannot read: %s", strerror(errno));
	fclose(ctx->f);
	ctx->f = NULL;
	return 0;
}

/* Whether text is a boolean; its value in *out. */
static int
config_parse_bool(const char *text, int *out)
{
	static const char *yes[] = {"true", "yes", "on", "1", NULL};
	static const char *no[] = {"false", "no", "off", "0", NULL};
	size_t i;

	for (i = 0; yes[i] != NULL; i++) {
		if (strcasecmp(text, yes[i]) == 0) {
			*out = 1;
			return 1;
		}
		if (strcasecmp(text, no[i]) == 0) {
			*out = 0;
			return 1;
		}
	}
	return 0;
}

/* Read a boolean key: 0 not set, 1 set, -1 bad (reported). */
static int
config_get_bool(struct config_ctx *ctx, const struct config_sec *sec, const char *key, int *out)
{
	struct config_kv *kv = config_kv_find(sec, key);

	if (kv == NULL)
		return 0;
	if (!config_parse_bool(kv->value, out)) {
		config_error_kv(ctx, sec, kv,
		                "bad boolean %s for %s: write true or false (or yes/no, on/off, "
		                "1/0)",
		                config_q(ctx, kv->value), key);
		return -1;
	}
	return 1;
}

/* Read a duration key: 0 not set, 1 set, -1 bad (reported). */
static int
config_get_duration(struct config_ctx *ctx, const struct config_sec *sec, const char *key,
                    uint64_t *out)
{
	struct config_kv *kv = config_kv_find(sec, key);
	char *cause;

	if (kv == NULL)
		return 0;
	if (duration_parse(kv->value, out, &cause) != 0) {
		config_error_kv(ctx, sec, kv, "%s: %s", key, cause);
		free(cause);
		return -1;
	}
	return 1;
}

/*
 * Read an integer key from min to max: 0 not set, 1 set, -1 bad (reported). hint follows
 * a "too small" message, max_why a "too large" one.
 */
static int
config_get_int(struct config_ctx *ctx, const struct config_sec *sec, const char *key, int min,
               int max, const char *hint, const char *max_why, int *out)
{
	struct config_kv *kv = config_kv_find(sec, key);
	long long n;
	char *end;

	if (kv == NULL)
		return 0;
	errno = 0;
	n = strtoll(kv->value, &end, 10);
	if (!isdigit((unsigned char)kv->value[*kv->value == '-' || *kv->value == '+']) ||
	    *end != '\0') {
		config_error_kv(ctx, sec, kv,
		                "bad integer %s for %s: write a whole number, e.g. %s = %d",
		                config_q(ctx, kv->value), key, key, min > 1 ? min : 1);
		return -1;
	}
	if ((errno == ERANGE && n > 0) || n > max) {
		config_error_kv(ctx, sec, kv, "%s = %s is too large: the most is %d%s", key,
		                config_q(ctx, kv->value), max, max_why != NULL ? max_why : "");
		return -1;
	}
	if (n < min) {
		config_error_kv(ctx, sec, kv, "%s = %lld is too small: it must be at least %d%s",
		                key, n, min, hint != NULL ? hint : "");
		return -1;
	}
	*out = (int)n;
	return 1;
}

/*
 * Read a back-off key (the first delay before a retry or restart, doubled each time) of at
 * least CONFIG_MIN_BACKOFF_MS: shorter ones make storms of runs and ZooKeeper writes.
 */
static void
config_get_backoff(struct config_ctx *ctx, const struct config_sec *sec, const char *key,
                   const char *what, const char *storm, uint64_t *out)
{
	uint64_t ms;
	char a[32];

	if (config_get_duration(ctx, sec, key, &ms) != 1)
		return;
	if (ms < CONFIG_MIN_BACKOFF_MS) {
		duration_format(ms, a, sizeof a);
		config_error_kv(ctx, sec, config_kv_find(sec, key),
		                "%s = %s is too short: with no pause %s; write at least %s = 1s "
		                "(the first %s delay, doubled after each failure)",
		                key, a, storm, key, what);
		return;
	}
	*out = ms;
}

/* Read an on_shutdown key: 0 not set, 1 set, -1 bad (reported). */
static int
config_get_on_shutdown(struct config_ctx *ctx, const struct config_sec *sec,
                       enum config_on_shutdown *out)
{
	struct config_kv *kv = config_kv_find(sec, "on_shutdown");

	if (kv == NULL)
		return 0;
	if (strcmp(kv->value, "terminate") == 0)
		*out = CONFIG_SHUTDOWN_TERMINATE;
	else if (strcmp(kv->value, "wait") == 0)
		*out = CONFIG_SHUTDOWN_WAIT;
	else {
		config_error_kv(ctx, sec, kv,
		                "bad on_shutdown %s: write terminate (stop running jobs, then "
		                "exit) or wait (let running jobs finish first)",
		                config_q(ctx, kv->value));
		return -1;
	}
	return 1;
}

/* Check that tz names a time zone, by parsing a daily schedule in it. */
static int
config_check_zone(struct config_ctx *ctx, const struct config_sec *sec, const struct config_kv *kv)
{
	struct schedule *s;
	char *cause;

	if (schedule_parse("0 0 * * *", kv->value, &s, &cause) != 0) {
		config_error_kv(ctx, sec, kv, "timezone: %s", cause);
		free(cause);
		return -1;
	}
	schedule_free(s);
	return 0;
}

/* Join a relative path to dir ("." joins to nothing); absolute paths stay. */
static char *
config_join(const char *dir, const char *path)
{
	char *s;

	if (path[0] == '/' || strcmp(dir, ".") == 0)
		return xstrdup(path);
	xasprintf(&s, "%s/%s", dir, path);
	return s;
}

/* The directory part of path, "." when it has none. */
static char *
config_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

/*
 * An absolute form of dir, without touching the file system beyond getcwd; NULL if the
 * working directory is gone (a reload must then fail, not end the worker).
 */
static char *
config_absolute(const char *dir)
{
	char cwd[PATH_MAX], *s;

	if (dir[0] == '/')
		return xstrdup(dir);
	if (getcwd(cwd, sizeof cwd) == NULL)
		return NULL;
	if (strcmp(dir, ".") == 0)
		return xstrdup(cwd);
	if (strncmp(dir, "./", 2) == 0)
		dir += 2;
	xasprintf(&s, "%s/%s", cwd, dir);
	return s;
}

/* parts[0..n) joined with '/', after a leading '/' when absolute; "." or "/" when empty. */
static char *
config_join_parts(int absolute, char **parts, size_t n)
{
	size_t i, len = 2, off;
	char *out;

	for (i = 0; i < n; i++)
		len += strlen(parts[i]) + 1;
	out = xmalloc(len);
	off = (size_t)snprintf(out, len, "%s", absolute ? "/" : "");
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i > 0 ? "/" : "", parts[i]);
	if (off == 0)
		snprintf(out, len, ".");
	return out;
}

/*
 * Tidy a path for messages and listings: drop "." elements and fold "DIR/.." where DIR is
 * a real directory (not a symbolic link, through which ".." would lead elsewhere).
 */
static char *
config_clean_path(const char *path)
{
	char *copy = xstrdup(path), *tok, *save, *prefix, *out, **parts;
	size_t n = 0;
	int absolute = path[0] == '/';
	struct stat st;

	parts = xcalloc(strlen(path) + 1, sizeof *parts);
	for (tok = strtok_r(copy, "/", &save); tok != NULL; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0 && n > 0 && strcmp(parts[n - 1], "..") != 0) {
			prefix = config_join_parts(absolute, parts, n);
			if (lstat(prefix, &st) == 0 && S_ISDIR(st.st_mode)) {
				free(prefix);
				n--;
				continue;
			}
			free(prefix);
		}
		parts[n++] = tok;
	}
	out = config_join_parts(absolute, parts, n);
	free(parts);
	free(copy);
	return out;
}

/* qsort's comparison of two strings. */
static int
config_strcmp_cb(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Whether path, which [worker] jobs matched, is a job file to read: a regular file other
 * than the worker file itself. Anything else it matched (a dangling or looping symbolic
 * link, a directory, a device) is an error naming it, never silently skipped.
 */
static int
config_is_job_file(struct config_ctx *ctx, int line, const char *path, const struct stat *worker)
{
	struct stat st;
	char *q;

	if (stat(path, &st) != 0) {
		q = utf8_quote_str(path);
		config_error(ctx, 0, line,
		             "jobs: %s matched but cannot be read (%s): fix or remove it (a "
		             "dangling or looping symbolic link?)",
		             q, strerror(errno));
		free(q);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		q = utf8_quote_str(path);
		config_error(ctx, 0, line,
		             "jobs: %s is %s, not a job file: point jobs at .ini files, or rename "
		             "or move it",
		             q, S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
		free(q);
		return 0;
	}
	return !(st.st_dev == worker->st_dev && st.st_ino == worker->st_ino);
}

/* The directory glob could not read, for the error; glob takes no user pointer. */
static char *config_glob_failed;

/*
 * glob's error callback: a directory that does not exist matches nothing, but one that
 * cannot be read (GLOB_ERR would also stop at missing ones) stops the expansion and is
 * remembered for the error.
 */
static int
config_glob_error_cb(const char *path, int error)
{
	if (error == ENOENT || error == ENOTDIR)
		return 0;
	if (config_glob_failed == NULL)
		xasprintf(&config_glob_failed, "%s (%s)", path, strerror(error));
	return 1;
}

/*
 * Expand [worker] jobs into a sorted list of files: a glob (matching nothing is fine), a
 * directory (its *.ini files) or one file, relative to the worker file's directory.
 */
static void
config_find_job_files(struct config_ctx *ctx, struct config *cfg, const struct config_kv *kv,
                      const char *dir)
{
	char *joined = config_join(dir, cfg->jobs), *pattern = config_clean_path(joined);
	char *path, **names = NULL, *q;
	size_t nnames = 0, i, len;
	struct stat st, worker;
	struct dirent *de;
	glob_t g;
	DIR *d;
	int rc, line = kv != NULL ? kv->line : 0;

	if (stat(cfg->file, &worker) != 0)
		memset(&worker, 0, sizeof worker);
	q = utf8_quote_str(pattern);
	if (strpbrk(cfg->jobs, "*?[") != NULL) {
		config_glob_failed = NULL;
		rc = glob(pattern, 0, config_glob_error_cb, &g);
		if (rc == 0) {
			for (i = 0; i < g.gl_pathc; i++) {
				if (!config_is_job_file(ctx, line, g.gl_pathv[i], &worker))
					continue;
				names = xreallocarray(names, nnames + 1, sizeof *names);
				names[nnames++] = xstrdup(g.gl_pathv[i]);
			}
		} else if (rc == GLOB_ABORTED)
			config_error(
			    ctx, 0, line,
			    "jobs: cannot expand %s: cannot read the directory %s: fix its "
			    "permissions, or narrow the pattern",
			    q, config_glob_failed != NULL ? config_glob_failed : "(unknown)");
		else if (rc != GLOB_NOMATCH)
			config_error(ctx, 0, line, "jobs: cannot expand %s: out of memory", q);
		free(config_glob_failed);
		config_glob_failed = NULL;
		globfree(&g);
	} else if (stat(pattern, &st) != 0) {
		config_error(ctx, 0, line,
		             "jobs: %s does not exist (%s): create it, or point jobs at a file, "
		             "a directory or a glob such as \"jobs/*.ini\" (relative to %s)",
		             q, strerror(errno), cfg->dir);
	} else if (S_ISDIR(st.st_mode)) {
		if ((d = opendir(pattern)) == NULL) {
			config_error(ctx, 0, line, "jobs: cannot read directory %s: %s", q,
			             strerror(errno));
		} else {
			while ((de = readdir(d)) != NULL) {
				len = strlen(de->d_name);
				if (de->d_name[0] == '.' || len < 5 ||
				    strcmp(de->d_name + len - 4, ".ini") != 0)
					continue;
				path = config_join(pattern, de->d_name);
				if (!config_is_job_file(ctx, line, path, &worker)) {
					free(path);
					continue;
				}
				names = xreallocarray(names, nnames + 1, sizeof *names);
				names[nnames++] = path;
			}
			closedir(d);
			if (nnames > 1)
				qsort(names, nnames, sizeof *names, config_strcmp_cb);
		}
	} else if (config_is_job_file(ctx, line, pattern, &worker)) {
		names = xreallocarray(names, 1, sizeof *names);
		names[nnames++] = xstrdup(pattern);
	}
	free(q);
	free(pattern);
	free(joined);
	cfg->job_files = names;
	cfg->njob_files = nnames;
}

/* Whether text[0..len) is a host name: dot-separated labels of letters, digits and '-'. */
static int
config_valid_hostname(const char *text, size_t len)
{
	size_t i, label = 0, digits_dots = 0;

	if (len == 0 || len > 253)
		return 0;
	for (i = 0; i < len; i++) {
		if (text[i] == '.') {
			if (label == 0 || text[i - 1] == '-')
				return 0;
			label = 0;
			digits_dots++;
			continue;
		}
		if (!isalnum((unsigned char)text[i]) && text[i] != '-' && text[i] != '_')
			return 0;
		if ((label == 0 && text[i] == '-') || ++label > 63)
			return 0;
		if (isdigit((unsigned char)text[i]))
			digits_dots++;
	}
	if (label == 0 && text[len - 1] == '.')
		return 0;          /* a trailing dot, or an empty last label */
	return digits_dots != len; /* all digits and dots: a bad IPv4 address, not a name */
}

/* Whether text[0..len) is an IPv4 address, an [IPv6] address or a host name. */
static int
config_valid_host(const char *text, size_t len)
{
	char buf[64];
	struct in6_addr a6;
	struct in_addr a4;

	if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
		if (len - 2 >= sizeof buf)
			return 0;
		memcpy(buf, text + 1, len - 2);
		buf[len - 2] = '\0';
		return inet_pton(AF_INET6, buf, &a6) == 1;
	}
	if (len < sizeof buf && strspn(text, "0123456789.") >= len) {
		memcpy(buf, text, len);
		buf[len] = '\0';
		return inet_pton(AF_INET, buf, &a4) == 1;
	}
	return config_valid_hostname(text, len);
}

/*
 * Check HOST:PORT at text[0..len): NULL if good, else what is wrong (a static string).
 * IPv6 addresses are written in brackets, "[::1]:2181".
 */
static const char *
config_host_port_problem(const char *text, size_t len)
{
	const char *colon = len > 0 ? memrchr(text, ':', len) : NULL;
	size_t plen, i;
	long port = 0;

	if (len == 0)
		return "an empty host (two commas, or a comma at an end)";
	if (colon == NULL || (text[0] == '[' && (colon == text || colon[-1] != ']')))
		return "a host without \":PORT\"";
	plen = (size_t)(text + len - colon - 1);
	if (plen == 0 || plen > 5)
		return plen == 0 ? "an empty port" : "a port outside 1-65535";
	for (i = 0; i < plen; i++) {
		if (!isdigit((unsigned char)colon[1 + i]))
			return "a port that is not a number";
		port = port * 10 + (colon[1 + i] - '0');
	}
	if (port < 1 || port > 65535)
		return "a port outside 1-65535";
	if (!config_valid_host(text, (size_t)(colon - text)))
		return "a host that is not a host name, an IPv4 address or an [IPv6] address";
	return NULL;
}

/*
 * Whether hosts is a ZooKeeper connect string, "HOST:PORT[,HOST:PORT...][/chroot]"; if
 * not, *cause says why. The client takes everything from the first '/' as the chroot, so
 * a '/' before the last host would silently swallow the hosts after it.
 */
int
config_valid_hosts(const char *hosts, char **cause)
{
	const char *slash = strchr(hosts, '/'), *p, *end, *why, *list_end;
	char *q, *qh, *whyp;

	list_end = slash != NULL ? slash : hosts + strlen(hosts);
	q = utf8_quote_str(hosts);
	if (slash != NULL && strchr(slash, ',') != NULL) {
		xasprintf(cause,
		          "bad hosts %s: a '/' comes before the last host, so the hosts after it "
		          "would become part of the chroot; write the chroot once, after the last "
		          "host, e.g. \"zk1:2181,zk2:2181/leasekeeper\"",
		          q);
		free(q);
		return 0;
	}
	for (p = hosts;; p = end + 1) {
		end = memchr(p, ',', (size_t)(list_end - p));
		if (end == NULL)
			end = list_end;
		if ((why = config_host_port_problem(p, (size_t)(end - p))) != NULL) {
			qh = utf8_quote(p, (size_t)(end - p));
			xasprintf(cause,
			          "bad hosts %s: %s is %s; write HOST:PORT[,HOST:PORT...][/chroot] "
			          "with ports 1-65535, e.g. \"zk1:2181,zk2:2181,zk3:2181\"",
			          q, qh, why);
			free(qh);
			free(q);
			return 0;
		}
		if (end == list_end)
			break;
	}
	free(q);
	if (slash != NULL && !znode_valid_path(slash, &whyp)) {
		xasprintf(cause, "bad chroot in hosts: %s", whyp);
		free(whyp);
		return 0;
	}
	return 1;
}

/* Whether listen is HOST:PORT (an IPv4 address, a host name or [IPv6]) with a port 1-65535. */
static int
config_valid_listen(const char *listen)
{
	return config_host_port_problem(listen, strlen(listen)) == NULL;
}

/* Resolve [zookeeper], [worker], [safety] and [http], with their defaults. */
static void
config_resolve_worker(struct config_ctx *ctx, struct config *cfg)
{
	struct config_sec *zk = ctx->worker[CONFIG_ZOOKEEPER], *wk = ctx->worker[CONFIG_WORKER];
	struct config_sec *sf = ctx->worker[CONFIG_SAFETY], *ht = ctx->worker[CONFIG_HTTP];
	struct config_kv *kv, *kv_t, *kv_m, *kv_g;
	char host[HOST_NAME_MAX + 1], *why, a[32], b[32], c[32], d[32];
	int ok_t, ok_m, ok_g;

	/* [zookeeper] */
	if ((kv = config_kv_find(zk, "hosts")) == NULL) {
		if (zk == NULL)
			config_error(ctx, 0, 0,
			             "no [zookeeper] section: add one with hosts = HOST:PORT, e.g. "
			             "hosts = zk1:2181,zk2:2181,zk3:2181");
		else
			config_error(
			    ctx, 0, zk->line,
			    "[zookeeper] has no hosts: add hosts = HOST:PORT, e.g. hosts = "
			    "zk1:2181,zk2:2181,zk3:2181");
	} else if (!config_valid_hosts(kv->value, &why)) {
		config_error_kv(ctx, zk, kv, "%s", why);
		free(why);
	} else
		cfg->hosts = xstrdup(kv->value);
	if ((kv = config_kv_find(zk, "root")) != NULL) {
		if (!znode_valid_path(kv->value, &why)) {
			config_error_kv(ctx, zk, kv, "bad root %s", why);
			free(why);
		}
		cfg->root = xstrdup(kv->value);
	} else
		cfg->root = xstrdup(CONFIG_DEFAULT_ROOT);
	cfg->session_timeout_ms = 10000;
	kv_t = config_kv_find(zk, "session_timeout");
	ok_t = config_get_duration(ctx, zk, "session_timeout", &cfg->session_timeout_ms);
	if (ok_t == 1 && (cfg->session_timeout_ms < 1000 || cfg->session_timeout_ms > 60000)) {
		duration_format(cfg->session_timeout_ms, a, sizeof a);
		config_error_kv(
		    ctx, zk, kv_t,
		    "session_timeout = %s is outside 1s..60s: pick a value in that range, "
		    "e.g. 10s",
		    a);
		ok_t = -1;
	}
	if ((kv = config_kv_find(zk, "auth")) != NULL) {
		if (kv->value[0] == ':' || strchr(kv->value, ':') == NULL)
			config_error_kv(ctx, zk, kv,
			                "bad auth: write USER:PASSWORD (ZooKeeper digest "
			                "authentication), e.g. auth = leasekeeper:secret");
		cfg->auth = xstrdup(kv->value);
	}

	/* [worker] */
	if ((kv = config_kv_find(wk, "node_id")) != NULL) {
		if (!config_valid_name(kv->value, "node_id", &why)) {
			config_error_kv(ctx, wk, kv, "bad node_id %s", why);
			free(why);
		}
		cfg->node_id = xstrdup(kv->value);
	} else {
		if (gethostname(host, sizeof host) != 0)
			host[0] = '\0';
		host[sizeof host - 1] = '\0';
		if (!config_valid_name(host, "node_id", &why)) {
			config_error(ctx, 0, wk != NULL ? wk->line : 0,
			             "the host name cannot be the node_id (%s): set node_id in "
			             "[worker]",
			             why);
			free(why);
		}
		cfg->node_id = xstrdup(host);
	}
	kv = config_kv_find(wk, "jobs");
	cfg->jobs = xstrdup(kv != NULL ? kv->value : CONFIG_DEFAULT_JOBS);
	if ((kv = config_kv_find(wk, "state_dir")) != NULL) {
		why = config_join(cfg->dir, kv->value);
		cfg->state_dir = config_clean_path(why);
		free(why);
	} else
		cfg->state_dir = xstrdup(CONFIG_DEFAULT_STATE_DIR);
	config_get_bool(ctx, wk, "allow_root_jobs", &cfg->allow_root_jobs);
	config_get_bool(ctx, wk, "allow_no_jobs", &cfg->allow_no_jobs);
	cfg->on_shutdown = CONFIG_SHUTDOWN_TERMINATE;
	config_get_on_shutdown(ctx, wk, &cfg->on_shutdown);
	if ((kv = config_kv_find(wk, "timezone")) != NULL && config_check_zone(ctx, wk, kv) == 0)
		cfg->timezone = xstrdup(kv->value);

	/* [safety] */
	cfg->safety_margin_ms = 1000;
	cfg->kill_grace_ms = 2000;
	kv_m = config_kv_find(sf, "safety_margin");
	kv_g = config_kv_find(sf, "kill_grace");
	ok_m = config_get_duration(ctx, sf, "safety_margin", &cfg->safety_margin_ms);
	ok_g = config_get_duration(ctx, sf, "kill_grace", &cfg->kill_grace_ms);
	if (ok_m == 1 && cfg->safety_margin_ms == 0) {
		config_error_kv(ctx, sf, kv_m,
		                "safety_margin must be more than 0: it is the time kept between "
		                "the lease deadline and the earliest moment the server may expire "
		                "the session, e.g. 1s");
		ok_m = -1;
	}
	if (ok_g == 1 && cfg->kill_grace_ms == 0) {
		config_error_kv(
		    ctx, sf, kv_g,
		    "kill_grace must be more than 0: jobs need time between SIGTERM and "
		    "SIGKILL to stop cleanly, e.g. 2s");
		ok_g = -1;
	}
	if (ok_t >= 0 && ok_m >= 0 && ok_g >= 0 &&
	    cfg->safety_margin_ms + cfg->kill_grace_ms > cfg->session_timeout_ms / 2) {
		duration_format(cfg->safety_margin_ms, a, sizeof a);
		duration_format(cfg->kill_grace_ms, b, sizeof b);
		duration_format(cfg->safety_margin_ms + cfg->kill_grace_ms, c, sizeof c);
		duration_format(cfg->session_timeout_ms, d, sizeof d);
		config_error(
		    ctx, 0,
		    kv_m != NULL ? kv_m->line
		                 : (kv_g != NULL ? kv_g->line : (kv_t != NULL ? kv_t->line : 0)),
		    "safety_margin (%s) + kill_grace (%s) = %s is more than half of "
		    "session_timeout (%s): the worker heartbeats every session_timeout/3 and "
		    "jobs get SIGTERM at last answer + session_timeout - safety_margin - "
		    "kill_grace, so with less than half the timeout left one late heartbeat "
		    "kills every job; lower safety_margin or kill_grace, or raise "
		    "session_timeout",
		    a, b, c, d);
	}

	/* [http] */
	if ((kv = config_kv_find(ht, "listen")) != NULL && kv->value[0] != '\0') {
		if (!config_valid_listen(kv->value))
			config_error_kv(
			    ctx, ht, kv,
			    "bad listen %s: write HOST:PORT, e.g. listen = "
			    "127.0.0.1:9187 (leave it empty to turn the status page off)",
			    config_q(ctx, kv->value));
		cfg->http_listen = xstrdup(kv->value);
	}
}

/* Parse a size: plain bytes or a number with K, M or G (powers of 1024), e.g. "10M". */
int
config_parse_size(const char *text, uint64_t *bytes, char **cause)
{
	const char *p = text;
	uint64_t n = 0, mult = 1;
	int digits = 0;
	char *q;

	while (isdigit((unsigned char)*p)) {
		if (n > UINT64_MAX / 10 - 9)
			goto too_big;
		n = n * 10 + (uint64_t)(*p++ - '0');
		digits++;
	}
	if (digits == 0)
		goto bad;
	switch (toupper((unsigned char)*p)) {
	case 'K':
		mult = 1024;
		break;
	case 'M':
		mult = 1024 * 1024;
		break;
	case 'G':
		mult = 1024 * 1024 * 1024;
		break;
	case '\0':
		break;
	default:
		goto bad;
	}
	if (mult != 1) {
		p++;
		if (strcasecmp(p, "iB") == 0)
			p += 2;
		else if (toupper((unsigned char)*p) == 'B')
			p++;
	}
	if (*p != '\0')
		goto bad;
	if (n > UINT64_MAX / mult)
		goto too_big;
	*bytes = n * mult;
	return 0;

bad:
	q = utf8_quote_str(text);
	xasprintf(cause,
	          "bad size %s: write bytes or a number with K, M or G, e.g. \"10M\" or "
	          "\"512K\"",
	          q);
	free(q);
	return -1;
too_big:
	q = utf8_quote_str(text);
	xasprintf(cause, "size %s is too large", q);
	free(q);
	return -1;
}

/* Append one word to a NULL-terminated argv. */
static void
config_argv_add(char ***argv, size_t *n, const char *word, size_t len)
{
	*argv = xreallocarray(*argv, *n + 2, sizeof **argv);
	(*argv)[(*n)++] = xstrndup(word, len);
	(*argv)[*n] = NULL;
}

/*
 * Split a command on whitespace into a NULL-terminated argv. Single quotes keep everything
 * up to the next single quote; double quotes do too, except that \" and \\ stand for " and
 * \; outside quotes a backslash keeps the next character. Quoted and bare parts next to each
 * other make one word, and "" makes an empty word.
 */
int
config_split_command(const char *text, char ***argv, char **cause)
{
	char **out = NULL, *word = xmalloc(strlen(text) + 1), *q;
	const char *p = text, *open;
	size_t n = 0, len;
	int in_word;

	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0')
			break;
		len = 0;
		in_word = 0;
		while (*p != '\0' && !isspace((unsigned char)*p)) {
			in_word = 1;
			if (*p == '\'') {
				open = p++;
				while (*p != '\0' && *p != '\'')
					word[len++] = *p++;
				if (*p == '\0')
					goto unbalanced;
				p++;
			} else if (*p == '"') {
				open = p++;
				while (*p != '\0' && *p != '"') {
					if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
						p++;
					word[len++] = *p++;
				}
				if (*p == '\0')
					goto unbalanced;
				p++;
			} else if (*p == '\\') {
				if (p[1] == '\0') {
					xasprintf(
					    cause,
					    "command ends with a lone backslash: remove it or "
					    "quote it as '\\\\'");
					goto fail;
				}
				word[len++] = p[1];
				p += 2;
			} else
				word[len++] = *p++;
		}
		if (in_word)
			config_argv_add(&out, &n, word, len);
	}
	free(word);
	if (n == 0) {
		*cause = xstrdup("command is empty: give the program to run and its arguments");
		config_free_argv(out);
		return -1;
	}
	if (*out[0] == '\0') {
		*cause = xstrdup("the program to run is an empty word (''): name the program, e.g. "
		                 "command = /usr/bin/backup --full");
		config_free_argv(out);
		return -1;
	}
	*argv = out;
	return 0;

unbalanced:
	q = utf8_quote_str(open);
	xasprintf(cause,
	          "unbalanced %c quote at %s: close it, or set shell = true to let "
	          "/bin/sh read the command",
	          *open, q);
	free(q);
fail:
	free(word);
	config_free_argv(out);
	return -1;
}

/* Free a NULL-terminated argv. */
void
config_free_argv(char **argv)
{
	char **p;

	if (argv == NULL)
		return;
	for (p = argv; *p != NULL; p++)
		free(*p);
	free(argv);
}

/* The name of an on_shutdown value, as written in the config. */
const char *
config_on_shutdown_name(enum config_on_shutdown how)
{
	return how == CONFIG_SHUTDOWN_WAIT ? "wait" : "terminate";
}

/* Free one job. */
static void
config_job_free(struct config_job *job)
{
	if (job == NULL)
		return;
	free(job->name);
	free(job->file);
	free(job->command);
	config_free_argv(job->argv);
	free(job->schedule);
	schedule_free(job->sched);
	free(job->timezone);
	free(job->zone);
	free(job->lock);
	free(job->lock_path);
	free(job->lock_znode);
	free(job->user);
	free(job->group);
	free(job->workdir);
	config_free_argv(job->env);
	free(job->log_file);
	free(job);
}

/* Whether name is a shell identifier: a letter or '_', then letters, digits and '_'. */
static int
config_valid_identifier(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || isdigit((unsigned char)name[0]))
		return 0;
	for (i = 0; i < len; i++) {
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return 0;
	}
	return 1;
}

/*
 * A job's command, arguments and environment travel to the supervisor in one message of
 * at most 64 KiB, with leasekeeper's own variables and settings: keep them to 32 KiB.
 */
static void
config_check_size(struct config_ctx *ctx, const struct config_sec *sec,
                  const struct config_job *job)
{
	size_t i, total = 0;

	for (i = 0; job->argv != NULL && job->argv[i] != NULL; i++)
		total += strlen(job->argv[i]) + 2;
	for (i = 0; i < job->nenv; i++)
		total += strlen(job->env[i]) + 2;
	if (total > CONFIG_MAX_COMMAND_BYTES)
		config_error_kv(ctx, sec, config_kv_find(sec, "command"),
		                "the command and env of job \"%s\" take %zu bytes; the most is %d: "
		                "move long data into a file that the command reads",
		                job->name, total, CONFIG_MAX_COMMAND_BYTES);
}

/* Check and collect the env lines of a job. */
static void
config_resolve_env(struct config_ctx *ctx, const struct config_sec *sec, struct config_job *job)
{
	const struct config_kv *kv;
	const char *eq;
	size_t i, j, klen;

	job->env = xcalloc(1, sizeof *job->env);
	for (i = 0; i < sec->nkv; i++) {
		kv = &sec->kv[i];
		if (strcmp(kv->key, "env") != 0)
			continue;
		if ((eq = strchr(kv->value, '=')) == NULL) {
			config_error_kv(ctx, sec, kv,
			                "bad env %s: write env = KEY=VALUE, e.g. env = "
			                "PATH=/usr/bin:/bin",
			                config_q(ctx, kv->value));
			continue;
		}
		klen = (size_t)(eq - kv->value);
		if (!config_valid_identifier(kv->value, klen)) {
			config_error_kv(ctx, sec, kv,
			                "bad env name \"%.*s\": use letters, digits and '_', not "
			                "starting with a digit, e.g. env = MY_VAR=1",
			                (int)klen, kv->value);
			continue;
		}
		if (strncmp(kv->value, "LEASEKEEPER_", 12) == 0) {
			config_error_kv(
			    ctx, sec, kv,
			    "env %.*s uses the reserved prefix LEASEKEEPER_ (leasekeeper "
			    "sets those itself): rename it",
			    (int)klen, kv->value);
			continue;
		}
		for (j = 0; j < job->nenv; j++) {
			if (strncmp(job->env[j], kv->value, klen + 1) == 0)
				break;
		}
		if (j != job->nenv) {
			config_error_kv(ctx, sec, kv, "env %.*s is set twice in [job %s]: keep one",
			                (int)klen, kv->value, job->name);
			continue;
		}
		job->env = xreallocarray(job->env, job->nenv + 2, sizeof *job->env);
		job->env[job->nenv++] = xstrdup(kv->value);
		job->env[job->nenv] = NULL;
	}
}

/* Check and resolve user, group and whether the job would run as root. */
static void
config_resolve_user(struct config_ctx *ctx, const struct config *cfg, const struct config_sec *sec,
                    struct config_job *job)
{
	const struct config_kv *kv_u = config_kv_find(sec, "user");
	const struct config_kv *kv_g = config_kv_find(sec, "group");
	struct passwd *pw;
	struct group *gr;
	int root = -1;

	job->uid = (uid_t)-1;
	job->gid = (gid_t)-1;
	if (kv_u != NULL) {
		job->user = xstrdup(kv_u->value);
		if ((pw = getpwnam(kv_u->value)) == NULL)
			config_error_kv(ctx, sec, kv_u,
			                "unknown user %s: create the account or fix the name",
			                config_q(ctx, kv_u->value));
		else {
			job->uid = pw->pw_uid;
			job->gid = pw->pw_gid;
			root = pw->pw_uid == 0;
			if (geteuid() != 0 && pw->pw_uid != geteuid())
				config_error_kv(
				    ctx, sec, kv_u,
				    "user = %s needs a worker running as root (this one "
				    "runs as uid %ld): run the worker as root, or remove "
				    "user to run the job as the worker's own user",
				    kv_u->value, (long)geteuid());
		}
	} else
		root = geteuid() == 0;
	if (kv_g != NULL) {
		job->group = xstrdup(kv_g->value);
		if ((gr = getgrnam(kv_g->value)) == NULL)
			config_error_kv(ctx, sec, kv_g,
			                "unknown group %s: create the group or fix the name",
			                config_q(ctx, kv_g->value));
		else
			job->gid = gr->gr_gid;
	}
	if (root == 1 && !cfg->allow_root_jobs)
		config_error_kv(
		    ctx, sec, kv_u,
		    "job \"%s\" would run as root%s: set user = NAME in [job %s] to run "
		    "it as an unprivileged user, or set allow_root_jobs = true in "
		    "[worker] if it really must run as root",
		    job->name, kv_u != NULL ? "" : " (no user is set and the worker runs as root)",
		    job->name);
}

/* Report a key set on a job of the wrong kind. */
static void
config_misplaced(struct config_ctx *ctx, const struct config_sec *sec, const char *key,
                 int continuous)
{
	const struct config_kv *kv = config_kv_find(sec, key);

	if (kv == NULL)
		return;
	if (continuous)
		config_error_kv(ctx, sec, kv,
		                "%s applies only to scheduled jobs (cron or @every) and job \"%s\" "
		                "is @continuous: remove it (an @continuous job uses max_failures "
		                "and restart_backoff)",
		                key, sec->name);
	else
		config_error_kv(ctx, sec, kv,
		                "%s applies only to @continuous jobs and job \"%s\" runs on a "
		                "schedule: remove it (a scheduled job uses retries and "
		                "retry_backoff)",
		                key, sec->name);
}

/* Resolve one [job NAME] section; NULL (with errors reported) when it cannot be built. */
static struct config_job *
config_resolve_job(struct config_ctx *ctx, const struct config *cfg, const struct config_sec *sec)
{
	struct config_job *job = xcalloc(1, sizeof *job);
	const struct config_kv *kv, *kv2;
	char *cause, a[32], b[32], *end;
	int ok_sched = 0, ok_leases, ok_tick, continuous = 0;
	long mask;

	job->name = xstrdup(sec->name);
	job->file = xstrdup(ctx->files[sec->file]);
	job->line = sec->line;

	/* command */
	job->shell = 1;
	config_get_bool(ctx, sec, "shell", &job->shell);
	if ((kv = config_kv_find(sec, "command")) == NULL && sec->refused == 0)
		config_error_kv(ctx, sec, NULL,
		                "job \"%s\" has no command: add command = ... to [job %s], e.g. "
		                "command = echo hello",
		                job->name, job->name);
	else if (kv != NULL) {
		job->command = xstrdup(kv->value);
		if (!job->shell) {
			if (config_split_command(job->command, &job->argv, &cause) != 0) {
				config_error_kv(ctx, sec, kv, "%s", cause);
				free(cause);
			}
		} else {
			job->argv = xcalloc(4, sizeof *job->argv);
			job->argv[0] = xstrdup("/bin/sh");
			job->argv[1] = xstrdup("-c");
			job->argv[2] = xstrdup(job->command);
		}
	}

	/* schedule and zone */
	if ((kv = config_kv_find(sec, "timezone")) != NULL) {
		job->timezone = xstrdup(kv->value);
		if (config_check_zone(ctx, sec, kv) == 0)
			job->zone = xstrdup(kv->value);
	} else if (cfg->timezone != NULL)
		job->zone = xstrdup(cfg->timezone);
	kv = config_kv_find(sec, "schedule");
	job->schedule = xstrdup(kv != NULL ? kv->value : "@continuous");
	/* a bad zone is reported once, at its own line; job->zone is then NULL */
	if (schedule_parse(job->schedule, job->zone, &job->sched, &cause) != 0) {
		config_error_kv(ctx, sec, kv, "schedule: %s", cause);
		free(cause);
		job->sched = NULL;
	} else {
		ok_sched = 1;
		continuous = schedule_kind(job->sched) == SCHEDULE_CONTINUOUS;
		if (schedule_never(job->sched))
			config_error_kv(
			    ctx, sec, kv,
			    "schedule \"%s\" can never fire: no month it names has the "
			    "days of month it names (such as 30 February or 31 April); fix "
			    "the day or the month (for the last day of a month, run on "
			    "28-31 and test the date in the command)",
			    schedule_text(job->sched));
	}

	/* lease and lock */
	job->leases = 1;
	ok_leases = config_get_int(
	    ctx, sec, "leases", 1, LK_MAX_LEASES,
	    " (1 is a mutex, more is a semaphore with that many leases)",
	    ", the same limit as in set-leases, exec and the job record in ZooKeeper: lower it",
	    &job->leases);
	kv = config_kv_find(sec, "lock");
	kv2 = config_kv_find(sec, "lock_path");
	if (kv != NULL) {
		if (!znode_valid_name(kv->value, &cause)) {
			config_error_kv(ctx, sec, kv, "bad lock %s", cause);
			free(cause);
		}
		job->lock = xstrdup(kv->value);
	} else
		job->lock = xstrdup(job->name);
	if (kv2 != NULL) {
		if (!znode_valid_path(kv2->value, &cause)) {
			config_error_kv(ctx, sec, kv2, "bad lock_path %s", cause);
			free(cause);
		}
		job->lock_path = xstrdup(kv2->value);
		if (kv != NULL)
			config_error_kv(
			    ctx, sec, kv2,
			    "both lock (line %d) and lock_path are set: keep one (lock "
			    "names a lock under %s, lock_path is a full ZooKeeper path)",
			    kv->line, cfg->root);
		job->lock_znode = xstrdup(kv2->value);
	} else
		job->lock_znode = layout_lock_path(cfg->root, job->lock, NULL, job->leases);
	job->per_tick = 1;
	ok_tick =
	    config_get_int(ctx, sec, "per_tick", 1, LK_MAX_LEASES, NULL, NULL, &job->per_tick);
	if (ok_tick == 1 && ok_leases >= 0 && job->per_tick > job->leases)
		config_error_kv(ctx, sec, config_kv_find(sec, "per_tick"),
		                "per_tick = %d is more than leases = %d, so a tick could never be "
		                "run: lower per_tick or raise leases",
		                job->per_tick, job->leases);
	job->start_deadline_ms = 60000;
	if (config_get_duration(ctx, sec, "start_deadline", &job->start_deadline_ms) == 1 &&
	    job->start_deadline_ms == 0)
		config_error_kv(
		    ctx, sec, config_kv_find(sec, "start_deadline"),
		    "start_deadline must be more than 0: it is how long a tick may wait "
		    "for a lease before it counts as missed, e.g. 1m");

	/* runs, retries and restarts */
	if ((kv = config_kv_find(sec, "timeout")) != NULL && strcmp(kv->value, "0") != 0 &&
	    strcmp(kv->value, "none") != 0)
		config_get_duration(ctx, sec, "timeout", &job->timeout_ms);
	config_get_int(ctx, sec, "retries", 0, INT_MAX, NULL, NULL, &job->retries);
	job->retry_backoff_ms = 10000;
	config_get_backoff(ctx, sec, "retry_backoff", "retry",
	                   "a failed run is tried again at once, and again",
	                   &job->retry_backoff_ms);
	job->max_failures = 5;
	config_get_int(ctx, sec, "max_failures", 1, INT_MAX, NULL, NULL, &job->max_failures);
	job->restart_backoff_ms = 1000;
	config_get_backoff(ctx, sec, "restart_backoff", "restart",
	                   "a failing job is restarted, and its lease handed over, thousands of "
	                   "times a minute",
	                   &job->restart_backoff_ms);
	job->kill_grace_ms = cfg->kill_grace_ms;
	if (config_get_duration(ctx, sec, "kill_grace", &job->kill_grace_ms) == 1) {
		kv = config_kv_find(sec, "kill_grace");
		if (job->kill_grace_ms == 0)
			config_error_kv(
			    ctx, sec, kv,
			    "kill_grace must be more than 0: the job needs time between "
			    "SIGTERM and SIGKILL to stop cleanly, e.g. 2s");
		else if (cfg->safety_margin_ms + job->kill_grace_ms > cfg->session_timeout_ms / 2) {
			duration_format(job->kill_grace_ms, a, sizeof a);
			duration_format(cfg->session_timeout_ms / 2 - cfg->safety_margin_ms, b,
			                sizeof b);
			config_error_kv(
			    ctx, sec, kv,
			    "kill_grace (%s) is too long for this session: at most %s "
			    "(session_timeout/2 - safety_margin). At the lease deadline the "
			    "job gets SIGTERM kill_grace early, and the heartbeat runs every "
			    "session_timeout/3, so a longer grace would stop the job after "
			    "one late heartbeat; lower kill_grace or raise session_timeout",
			    a, b);
		}
	}
	if (ok_sched && continuous) {
		config_misplaced(ctx, sec, "per_tick", 1);
		config_misplaced(ctx, sec, "retries", 1);
		config_misplaced(ctx, sec, "retry_backoff", 1);
		config_misplaced(ctx, sec, "start_deadline", 1);
	} else if (ok_sched) {
		config_misplaced(ctx, sec, "max_failures", 0);
		config_misplaced(ctx, sec, "restart_backoff", 0);
	}

	/* process */
	config_resolve_user(ctx, cfg, sec, job);
	job->umask = -1;
	if ((kv = config_kv_find(sec, "umask")) != NULL) {
		errno = 0;
		mask = strtol(kv->value, &end, 8);
		if (strspn(kv->value, "01234567") != strlen(kv->value) || *end != '\0' ||
		    errno != 0 || mask > 0777)
			config_error_kv(ctx, sec, kv,
			                "bad umask %s: write an octal mode from 0 to 0777, e.g. "
			                "umask = 022",
			                config_q(ctx, kv->value));
		else
			job->umask = (int)mask;
	}
	if ((kv = config_kv_find(sec, "workdir")) != NULL) {
		if (kv->value[0] != '/')
			config_error_kv(ctx, sec, kv,
			                "workdir %s is not absolute: write a full path, e.g. "
			                "workdir = /srv/app",
			                config_q(ctx, kv->value));
		job->workdir = xstrdup(kv->value);
	}
	config_resolve_env(ctx, sec, job);
	config_check_size(ctx, sec, job);

	/* output and records */
	if ((kv = config_kv_find(sec, "log_file")) != NULL) {
		if (kv->value[0] != '/')
			config_error_kv(ctx, sec, kv,
			                "log_file %s is not absolute: write a full path, or leave "
			                "it out for %s/jobs/%s.log",
			                config_q(ctx, kv->value), cfg->state_dir, job->name);
		job->log_file = xstrdup(kv->value);
	} else
		xasprintf(&job->log_file, "%s/jobs/%s.log", cfg->state_dir, job->name);
	job->log_max_bytes = 10 * 1024 * 1024;
	if ((kv = config_kv_find(sec, "log_max")) != NULL) {
		if (config_parse_size(kv->value, &job->log_max_bytes, &cause) != 0) {
			config_error_kv(ctx, sec, kv, "log_max: %s", cause);
			free(cause);
		} else if (job->log_max_bytes == 0)
			config_error_kv(ctx, sec, kv,
			                "log_max must be more than 0: it caps the log before it is "
			                "rotated, e.g. log_max = 10M");
	}
	job->history = 20;
	config_get_int(ctx, sec, "history", 0, INT_MAX, NULL, NULL, &job->history);
	job->on_shutdown = cfg->on_shutdown;
	config_get_on_shutdown(ctx, sec, &job->on_shutdown);
	return job;
}

/* Jobs that share a lock must agree on the number of leases. */
static void
config_check_locks(struct config_ctx *ctx, struct config *cfg, struct config_sec **secs)
{
	struct config_job *a, *b;
	size_t i, j;
	int same;

	for (j = 1; j < cfg->njobs; j++) {
		b = cfg->jobs_list[j];
		for (i = 0; i < j; i++) {
			a = cfg->jobs_list[i];
			if (a->lock_path != NULL || b->lock_path != NULL)
				same = a->lock_path != NULL && b->lock_path != NULL &&
				       strcmp(a->lock_path, b->lock_path) == 0;
			else
				same = strcmp(a->lock, b->lock) == 0;
			if (!same || a->leases == b->leases)
				continue;
			config_error_kv(
			    ctx, secs[j], config_kv_find(secs[j], "leases"),
			    "job \"%s\" shares %s \"%s\" with job \"%s\" (%s:%d) but has "
			    "leases = %d where \"%s\" has leases = %d: jobs that share a "
			    "lock must agree on leases, so set the same number or give "
			    "one of them its own lock",
			    b->name, b->lock_path != NULL ? "lock_path" : "lock",
			    b->lock_path != NULL ? b->lock_path : b->lock, a->name, a->file,
			    a->line, b->leases, a->name, a->leases);
			break;
		}
	}
}

/*
 * A configuration without jobs is refused unless it says so: a job file that went missing
 * or a jobs pattern that matches nothing would otherwise stop every job on a reload.
 */
static void
config_no_jobs(struct config_ctx *ctx, const struct config *cfg, const struct config_kv *kv)
{
	struct config_sec *wk = ctx->worker[CONFIG_WORKER];
	char *q = utf8_quote_str(cfg->jobs);

	config_error(ctx, 0, kv != NULL ? kv->line : (wk != NULL ? wk->line : 0),
	             "no jobs: jobs = %s found %zu job file%s and no [job NAME] section, so this "
	             "worker would run nothing (and a reload would stop every job): fix jobs or "
	             "add a job, or set allow_no_jobs = true in [worker] if a worker without jobs "
	             "is what you want",
	             q, cfg->njob_files, cfg->njob_files == 1 ? "" : "s");
	free(q);
}

/* Free a section. */
static void
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
 * Load the worker file and every job file it names. Returns 0 with *out set, or -1 with
 * every problem in errors (each "file:line: message") and *out NULL.
 */
int
config_load(const char *file, struct config **out, struct config_errors *errors)
{
	struct config_ctx ctx;
	struct config *cfg = xcalloc(1, sizeof *cfg);
	struct config_sec **kept = NULL;
	struct config_job *job;
	struct config_err *e;
	struct config_kv *kv;
	char *dir, *path;
	size_t i, nerrs;
	int k;

	memset(&ctx, 0, sizeof ctx);
	errors->lines = NULL;
	errors->n = 0;
	*out = NULL;

	cfg->file = xstrdup(file);
	dir = config_dirname(file);
	path = config_absolute(dir);
	config_add_file(&ctx, file);
	if (path == NULL) {
		config_error(
		    &ctx, 0, 0,
		    "cannot resolve the relative path: the working directory is gone (%s); "
		    "give the configuration file as an absolute path",
		    strerror(errno));
		free(path);
		goto done;
	}
	cfg->dir = config_clean_path(path);
	free(path);
	if (config_read_file(&ctx, 0, 1) != 0)
		goto done;
	config_resolve_worker(&ctx, cfg);
	kv = config_kv_find(ctx.worker[CONFIG_WORKER], "jobs");
	nerrs = ctx.nerrs;
	config_find_job_files(&ctx, cfg, kv, dir);
	for (i = 0; i < cfg->njob_files; i++)
		config_read_file(&ctx, config_add_file(&ctx, cfg->job_files[i]), 0);
	if (ctx.nsecs == 0 && !cfg->allow_no_jobs && ctx.nerrs == nerrs)
		config_no_jobs(&ctx, cfg, kv);

	kept = xcalloc(ctx.nsecs, sizeof *kept);
	for (i = 0; i < ctx.nsecs; i++) {
		job = config_resolve_job(&ctx, cfg, ctx.secs[i]);
		if (ctx.secs[i]->discard) {
			config_job_free(job);
			continue;
		}
		cfg->jobs_list =
		    xreallocarray(cfg->jobs_list, cfg->njobs + 1, sizeof *cfg->jobs_list);
		kept[cfg->njobs] = ctx.secs[i];
		cfg->jobs_list[cfg->njobs++] = job;
	}
	config_check_locks(&ctx, cfg, kept);

done:
	if (ctx.nerrs > 1)
		qsort(ctx.errs, ctx.nerrs, sizeof *ctx.errs, config_err_cmp_cb);
	errors->lines = xcalloc(ctx.nerrs, sizeof *errors->lines);
	for (i = 0; i < ctx.nerrs; i++) {
		e = &ctx.errs[i];
		if (e->line > 0)
			xasprintf(&errors->lines[i], "%s:%d: %s", ctx.files[e->file], e->line,
			          e->text);
		else
			xasprintf(&errors->lines[i], "%s: %s", ctx.files[e->file], e->text);
		free(e->text);
	}
	errors->n = ctx.nerrs;
	free(ctx.errs);
	for (i = 0; i < ctx.nsecs; i++)
		config_sec_free(ctx.secs[i]);
	free(ctx.secs);
	for (k = 0; k < CONFIG_JOB; k++)
		config_sec_free(ctx.worker[k]);
	for (i = 0; i < ctx.nfiles; i++)
		free(ctx.files[i]);
	free(ctx.files);
	free(ctx.raw);
	for (i = 0; i < ctx.nquoted; i++)
		free(ctx.quoted[i]);
	free(ctx.quoted);
	free(kept);
	free(dir);
	if (errors->n != 0) {
		config_free(cfg);
		return -1;
	}
	*out = cfg;
	return 0;
}

/* Free a configuration and its jobs. */
void
config_free(struct config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->njobs; i++)
		config_job_free(cfg->jobs_list[i]);
	free(cfg->jobs_list);
	for (i = 0; i < cfg->njob_files; i++)
		free(cfg->job_files[i]);
	free(cfg->job_files);
	free(cfg->file);
	free(cfg->dir);
	free(cfg->hosts);
	free(cfg->root);
	free(cfg->auth);
	free(cfg->node_id);
	free(cfg->jobs);
	free(cfg->state_dir);
	free(cfg->timezone);
	free(cfg->http_listen);
	free(cfg);
}

/* Free the problems config_load reported. */
void
config_errors_free(struct config_errors *errors)
{
	size_t i;

	for (i = 0; i < errors->n; i++)
		free(errors->lines[i]);
	free(errors->lines);
	errors->lines = NULL;
	errors->n = 0;
}

/* The job called name, or NULL. */
struct config_job *
config_find_job(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->njobs; i++) {
		if (strcmp(cfg->jobs_list[i]->name, name) == 0)
			return cfg->jobs_list[i];
	}
	return NULL;
}

/* Whether two strings, either of which may be NULL, are equal. */
static int
config_str_equal(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Whether two NULL-terminated string arrays are equal. */
static int
config_argv_equal(char *const *a, char *const *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	for (; *a != NULL && *b != NULL; a++, b++) {
		if (strcmp(*a, *b) != 0)
			return 0;
	}
	return *a == NULL && *b == NULL;
}

/*
 * Whether two jobs would run the same way, so that a reload may keep the job and its lease.
 * Where a job was written (file, line) does not count.
 */
int
config_job_equal(const struct config_job *a, const struct config_job *b)
{
	if (!config_str_equal(a->name, b->name) || !config_str_equal(a->command, b->command) ||
	    a->shell != b->shell || !config_argv_equal(a->argv, b->argv))
		return 0;
	if (a->sched == NULL || b->sched == NULL) {
		if (a->sched != b->sched || !config_str_equal(a->schedule, b->schedule))
			return 0;
	} else if (schedule_kind(a->sched) != schedule_kind(b->sched) ||
	           strcmp(schedule_text(a->sched), schedule_text(b->sched)) != 0)
		return 0;
	if (!config_str_equal(a->timezone, b->timezone) || !config_str_equal(a->zone, b->zone))
		return 0;
	if (a->leases != b->leases || !config_str_equal(a->lock, b->lock) ||
	    !config_str_equal(a->lock_path, b->lock_path) ||
	    !config_str_equal(a->lock_znode, b->lock_znode) || a->per_tick != b->per_tick ||
	    a->start_deadline_ms != b->start_deadline_ms)
		return 0;
	if (a->timeout_ms != b->timeout_ms || a->retries != b->retries ||
	    a->retry_backoff_ms != b->retry_backoff_ms || a->max_failures != b->max_failures ||
	    a->restart_backoff_ms != b->restart_backoff_ms || a->kill_grace_ms != b->kill_grace_ms)
		return 0;
	if (!config_str_equal(a->user, b->user) || !config_str_equal(a->group, b->group) ||
	    a->uid != b->uid || a->gid != b->gid || a->umask != b->umask ||
	    !config_str_equal(a->workdir, b->workdir) || a->nenv != b->nenv ||
	    !config_argv_equal(a->env, b->env))
		return 0;
	return config_str_equal(a->log_file, b->log_file) && a->log_max_bytes == b->log_max_bytes &&
	       a->history == b->history && a->on_shutdown == b->on_shutdown;
}

/* Print a word of an argv, quoted when the shell would need it. */
static void
config_print_word(const char *word, FILE *f)
{
	const char *p;

	if (*word != '\0' && strpbrk(word, " \t\n'\"\\$`*?[]{}()<>|&;#~") == NULL) {
		fputs(word, f);
		return;
	}
	fputc('\'', f);
	for (p = word; *p != '\0'; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

/* Print a size the way it would be written: 10M, 512K, 1000. */
static void
config_print_size(uint64_t bytes, FILE *f)
{
	if (bytes != 0 && bytes % (1024 * 1024 * 1024) == 0)
		fprintf(f, "%lluG", (unsigned long long)(bytes >> 30));
	else if (bytes != 0 && bytes % (1024 * 1024) == 0)
		fprintf(f, "%lluM", (unsigned long long)(bytes >> 20));
	else if (bytes != 0 && bytes % 1024 == 0)
		fprintf(f, "%lluK", (unsigned long long)(bytes >> 10));
	else
		fprintf(f, "%llu", (unsigned long long)bytes);
}

/* Print one resolved job. */
static void
config_print_job(const struct config *cfg, const struct config_job *job, FILE *f)
{
	char d1[32], d2[32];
	struct passwd *pw;
	char **p;
	int continuous = job->sched != NULL && schedule_kind(job->sched) == SCHEDULE_CONTINUOUS;

	fprintf(f, "\njob %s (%s:%d)\n", job->name, job->file, job->line);
	fprintf(f, "  schedule         %s",
	        job->sched != NULL ? schedule_text(job->sched) : job->schedule);
	if (job->sched != NULL && schedule_kind(job->sched) == SCHEDULE_CRON)
		fprintf(f, " (time zone %s)", job->zone != NULL ? job->zone : "local");
	fputc('\n', f);
	if (job->leases == 1)
		fprintf(f, "  leases           1: mutex, at most one host runs it\n");
	else
		fprintf(f, "  leases           %d: semaphore, at most %d hosts run it at once\n",
		        job->leases, job->leases);
	fprintf(f, "  lock             %s%s\n", job->lock_znode,
	        job->lock_path != NULL ? " (lock_path)" : "");
	if (!continuous) {
		duration_format(job->start_deadline_ms, d1, sizeof d1);
		fprintf(f, "  per tick         %d host%s, must start within %s\n", job->per_tick,
		        job->per_tick == 1 ? "" : "s", d1);
	}
	fprintf(f, "  command          ");
	for (p = job->argv; p != NULL && *p != NULL; p++) {
		if (p != job->argv)
			fputc(' ', f);
		config_print_word(*p, f);
	}
	fputc('\n', f);
	if (job->user != NULL)
		fprintf(f, "  run as           %s", job->user);
	else if ((pw = getpwuid(geteuid())) != NULL)
		fprintf(f, "  run as           %s (the worker's user)", pw->pw_name);
	else
		fprintf(f, "  run as           uid %ld (the worker's user)", (long)geteuid());
	if (job->group != NULL)
		fprintf(f, ", group %s", job->group);
	if (job->umask != -1)
		fprintf(f, ", umask %03o", (unsigned)job->umask);
	fputc('\n', f);
	if (job->workdir != NULL)
		fprintf(f, "  workdir          %s\n", job->workdir);
	else if (job->user != NULL)
		fprintf(f, "  workdir          the home directory of %s\n", job->user);
	else
		fprintf(f, "  workdir          %s\n", cfg->state_dir);
	for (p = job->env; p != NULL && *p != NULL; p++)
		fprintf(f, "  env              %s\n", *p);
	if (job->timeout_ms == 0)
		fprintf(f, "  timeout          none\n");
	else {
		duration_format(job->timeout_ms, d1, sizeof d1);
		fprintf(f, "  timeout          %s\n", d1);
	}
	if (continuous) {
		duration_format(job->restart_backoff_ms, d1, sizeof d1);
		fprintf(f,
		        "  restarts         back-off from %s; hand the lease over after %d "
		        "failures in a row\n",
		        d1, job->max_failures);
	} else {
		duration_format(job->retry_backoff_ms, d1, sizeof d1);
		fprintf(f, "  retries          %d, back-off from %s\n", job->retries, d1);
	}
	duration_format(job->kill_grace_ms, d2, sizeof d2);
	fprintf(f, "  kill_grace       %s\n", d2);
	fprintf(f, "  log              %s, up to ", job->log_file);
	config_print_size(job->log_max_bytes, f);
	fprintf(f, "\n  history          %d runs\n", job->history);
	fprintf(f, "  on_shutdown      %s\n", config_on_shutdown_name(job->on_shutdown));
}

/* Print the worker settings and every resolved job, for `leasekeeper check`. */
void
config_print(const struct config *cfg, FILE *f)
{
	char d1[32], d2[32], d3[32];
	const char *colon;
	size_t i;

	duration_format(cfg->session_timeout_ms, d1, sizeof d1);
	fprintf(f, "worker %s (%s)\n", cfg->node_id, cfg->file);
	fprintf(f, "  zookeeper        %s\n", cfg->hosts);
	fprintf(f, "  root             %s\n", cfg->root);
	fprintf(f, "  session_timeout  %s\n", d1);
	if (cfg->auth != NULL) {
		colon = strchr(cfg->auth, ':');
		fprintf(f, "  auth             digest as %.*s\n",
		        (int)(colon != NULL ? colon - cfg->auth : (ptrdiff_t)strlen(cfg->auth)),
		        cfg->auth);
	}
	fprintf(f, "  jobs             %s (%zu file%s, %zu job%s)\n", cfg->jobs, cfg->njob_files,
	        cfg->njob_files == 1 ? "" : "s", cfg->njobs, cfg->njobs == 1 ? "" : "s");
	fprintf(f, "  state_dir        %s\n", cfg->state_dir);
	fprintf(f, "  allow_root_jobs  %s\n", cfg->allow_root_jobs ? "true" : "false");
	if (cfg->allow_no_jobs)
		fprintf(f, "  allow_no_jobs    true\n");
	fprintf(f, "  on_shutdown      %s\n", config_on_shutdown_name(cfg->on_shutdown));
	fprintf(f, "  timezone         %s\n", cfg->timezone != NULL ? cfg->timezone : "local");
	duration_format(cfg->safety_margin_ms, d2, sizeof d2);
	duration_format(cfg->kill_grace_ms, d3, sizeof d3);
	fprintf(f, "  safety           safety_margin %s, kill_grace %s\n", d2, d3);
	fprintf(f, "  http             %s\n", cfg->http_listen != NULL ? cfg->http_listen : "off");
	for (i = 0; i < cfg->njobs; i++)
		config_print_job(cfg, cfg->jobs_list[i], f);
}
