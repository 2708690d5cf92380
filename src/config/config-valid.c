/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * config-valid.c: the second pass of config_load, the readers of values that the worker's
 * sections and the jobs share: booleans, durations, integers, sizes, hooks, limits,
 * on_shutdown, time zones and pass_env, each problem reported with its fix. The sections
 * are resolved in config-valid-worker.c and config-valid-job.c.
 */

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config-int.h"
#include "duration.h"
#include "schedule.h"
#include "utf8.h"
#include "xmalloc.h"

/* The least memory_max or memory_high: below it a run is OOM-killed as it starts. */
#define CONFIG_MIN_MEMORY (1024 * 1024)
/* cpu_max: 1% (a quota of 1 ms per 100 ms, the kernel's least) to 100000% (1000 CPUs). */
#define CONFIG_MAX_CPU_PERCENT 100000
/* tasks_max: the kernel's most pids. */
#define CONFIG_MAX_TASKS 4194304

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
int
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
int
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
int
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
 * Read on_failure, on_success, on_missed and hook_timeout over defaults (NULL: none; the
 * strings are copied). "none" turns a default of [worker] off.
 */
void
config_get_hooks(struct config_ctx *ctx, const struct config_sec *sec,
                 const struct config_hooks *defaults, struct config_hooks *out)
{
	static const char *keys[3] = {"on_failure", "on_success", "on_missed"};
	char **slots[3] = {&out->on_failure, &out->on_success, &out->on_missed};
	const char *from[3] = {NULL, NULL, NULL};
	struct config_kv *kv;
	uint64_t ms;
	char a[32];
	int i;

	if (defaults != NULL) {
		from[0] = defaults->on_failure;
		from[1] = defaults->on_success;
		from[2] = defaults->on_missed;
	}
	for (i = 0; i < 3; i++) {
		if ((kv = config_kv_find(sec, keys[i])) != NULL)
			from[i] = strcmp(kv->value, "none") != 0 ? kv->value : NULL;
		*slots[i] = from[i] != NULL ? xstrdup(from[i]) : NULL;
	}
	out->timeout_ms = defaults != NULL ? defaults->timeout_ms : CONFIG_DEFAULT_HOOK_TIMEOUT_MS;
	if (config_get_duration(ctx, sec, "hook_timeout", &ms) != 1)
		return;
	if (ms < 1000 || ms > CONFIG_MAX_HOOK_TIMEOUT_MS) {
		duration_format(ms, a, sizeof a);
		config_error_kv(ctx, sec, config_kv_find(sec, "hook_timeout"),
		                "hook_timeout = %s is out of range: write 1s to 1h, e.g. "
		                "hook_timeout = 30s (a hook is killed after it)",
		                a);
		return;
	}
	out->timeout_ms = ms;
}

/*
 * Read one limit key of sec into *out (left as it is when the key is absent). "max" is no
 * limit, so that a job can lift a default of [worker]. 0 set or absent, -1 bad (reported).
 */
static int
config_get_limit(struct config_ctx *ctx, const struct config_sec *sec, int i, uint64_t *out)
{
	const char *key = config_limit_keys[i];
	struct config_kv *kv = config_kv_find(sec, key);
	unsigned long long n;
	char *cause, *end;
	uint64_t v;

	if (kv == NULL)
		return 0;
	if (strcmp(kv->value, "max") == 0 && i != 4) {
		*out = 0;
		return 0;
	}
	switch (i) {
	case 0: /* memory_max */
	case 1: /* memory_high */
		if (config_parse_size(kv->value, &v, &cause) != 0) {
			config_error_kv(ctx, sec, kv, "%s: %s, or max for no limit", key, cause);
			free(cause);
			return -1;
		}
		if (v < CONFIG_MIN_MEMORY) {
			config_error_kv(ctx, sec, kv,
			                "%s = %s is too small: a run needs at least 1M to start; "
			                "write e.g. %s = 512M, or max for no limit",
			                key, config_q(ctx, kv->value), key);
			return -1;
		}
		*out = v;
		return 0;
	case 2: /* cpu_max */
		errno = 0;
		n = strtoull(kv->value, &end, 10);
		if (!isdigit((unsigned char)kv->value[0]) || strcmp(end, "%") != 0 || errno != 0 ||
		    n < 1 || n > CONFIG_MAX_CPU_PERCENT) {
			config_error_kv(ctx, sec, kv,
			                "bad cpu_max %s: write a share of one CPU from 1%% to "
			                "%d%%, e.g. cpu_max = 50%% (half a CPU) or cpu_max = 200%% "
			                "(two CPUs), or max for no limit",
			                config_q(ctx, kv->value), CONFIG_MAX_CPU_PERCENT);
			return -1;
		}
		*out = n;
		return 0;
	default: /* tasks_max, io_weight */
		errno = 0;
		n = strtoull(kv->value, &end, 10);
		if (!isdigit((unsigned char)kv->value[0]) || *end != '\0' || errno != 0 || n < 1 ||
		    n > (i == 3 ? CONFIG_MAX_TASKS : 10000)) {
			if (i == 3)
				config_error_kv(ctx, sec, kv,
				                "bad tasks_max %s: write the most processes and "
				                "threads a run may have, from 1 to %d, e.g. "
				                "tasks_max = 512, or max for no limit",
				                config_q(ctx, kv->value), CONFIG_MAX_TASKS);
			else
				config_error_kv(
				    ctx, sec, kv,
				    "bad io_weight %s: write a weight from 1 to 10000 "
				    "(100 is the kernel's default), e.g. io_weight = 50",
				    config_q(ctx, kv->value));
			return -1;
		}
		*out = n;
		return 0;
	}
}

/*
 * Read the limit keys of sec over defaults (NULL: none) into out, and check that they
 * agree: memory_high above memory_max would never act.
 */
void
config_get_limits(struct config_ctx *ctx, const struct config_sec *sec,
                  const struct config_limits *defaults, enum config_cgroups cgroups,
                  struct config_limits *out)
{
	int bad = 0;
	char a[32], b[32];

	int i;
	struct config_kv *kv;

	if (defaults != NULL)
		*out = *defaults;
	else
		memset(out, 0, sizeof *out);
	bad |= config_get_limit(ctx, sec, 0, &out->memory_max);
	bad |= config_get_limit(ctx, sec, 1, &out->memory_high);
	config_get_limit(ctx, sec, 2, &out->cpu_max);
	config_get_limit(ctx, sec, 3, &out->tasks_max);
	config_get_limit(ctx, sec, 4, &out->io_weight);
	if (bad == 0 && out->memory_max != 0 && out->memory_high >= out->memory_max &&
	    (config_kv_find(sec, "memory_high") != NULL ||
	     config_kv_find(sec, "memory_max") != NULL))
		config_error_kv(
		    ctx, sec,
		    config_kv_find(sec, "memory_high") != NULL ? config_kv_find(sec, "memory_high")
		                                               : config_kv_find(sec, "memory_max"),
		    "memory_high (%s) is not below memory_max (%s), so it would never act: lower "
		    "memory_high (the point where the run is throttled and reclaimed) or raise "
		    "memory_max (the point where the OOM killer ends it)",
		    config_limit_format(1, out->memory_high, a, sizeof a),
		    config_limit_format(0, out->memory_max, b, sizeof b));
	for (i = 0; i < CONFIG_LIMIT_KEYS && cgroups == CONFIG_CGROUPS_OFF; i++) {
		if ((kv = config_kv_find(sec, config_limit_keys[i])) != NULL &&
		    strcmp(kv->value, "max") != 0)
			config_error_kv(
			    ctx, sec, kv,
			    "%s needs a cgroup per run, and [worker] cgroups = off: set "
			    "cgroups = auto (or required), or remove %s",
			    config_limit_keys[i], config_limit_keys[i]);
	}
}

/* Read an on_shutdown key: 0 not set, 1 set, -1 bad (reported). */
int
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
int
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

/* Whether name is a shell identifier: a letter or '_', then letters, digits and '_'. */
int
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
 * Check and collect a pass_env line: the worker's variables a job gets, separated by spaces
 * or commas, each a NAME or a PREFIX* pattern (LC_*). "none" passes nothing (a job's way to
 * drop the [worker] default).
 */
void
config_resolve_pass_env(struct config_ctx *ctx, const struct config_sec *sec,
                        const struct config_kv *kv, char ***out)
{
	const char *p = kv->value, *w;
	char **names, *word;
	size_t n = 0, len, nlen, j;

	names = xcalloc(1, sizeof *names);
	*out = names;
	if (strcmp(kv->value, "none") == 0)
		return;
	for (;;) {
		p += strspn(p, " \t,");
		if (*p == '\0')
			break;
		w = p;
		len = strcspn(p, " \t,");
		p += len;
		word = xstrndup(w, len);
		nlen = word[len - 1] == '*' ? len - 1 : len;
		if (nlen == 0)
			config_error_kv(
			    ctx, sec, kv,
			    "pass_env = * would hand the worker's whole environment to "
			    "the job, which is what pass_env exists to prevent: name the "
			    "variables the job needs, e.g. pass_env = HTTP_PROXY LC_*");
		else if (!config_valid_identifier(word, nlen))
			config_error_kv(ctx, sec, kv,
			                "bad pass_env name %s: use letters, digits and '_', not "
			                "starting with a digit, and end it with '*' to pass every "
			                "variable that starts with the rest, e.g. pass_env = "
			                "HTTP_PROXY LC_*",
			                config_q(ctx, word));
		else if (nlen >= 12 && strncmp(word, "LEASEKEEPER_", 12) == 0)
			config_error_kv(ctx, sec, kv,
			                "pass_env %s uses the reserved prefix LEASEKEEPER_ "
			                "(leasekeeper sets those itself): remove it",
			                word);
		else {
			for (j = 0; j < n && strcmp(names[j], word) != 0; j++)
				;
			if (j == n) {
				names = xreallocarray(names, n + 2, sizeof *names);
				names[n++] = word;
				names[n] = NULL;
				continue;
			}
			config_error_kv(ctx, sec, kv, "pass_env names %s twice: keep one", word);
		}
		free(word);
	}
	*out = names;
}

/* Whether the variable name (len bytes) is one that pass_env names; never LEASEKEEPER_*. */
int
config_pass_env_match(char *const *pass_env, const char *name, size_t len)
{
	size_t plen;

	if (len >= 12 && strncmp(name, "LEASEKEEPER_", 12) == 0)
		return 0;
	for (; pass_env != NULL && *pass_env != NULL; pass_env++) {
		plen = strlen(*pass_env);
		if ((*pass_env)[plen - 1] == '*') {
			if (len >= plen - 1 && strncmp(name, *pass_env, plen - 1) == 0)
				return 1;
		} else if (plen == len && strncmp(name, *pass_env, len) == 0)
			return 1;
	}
	return 0;
}
