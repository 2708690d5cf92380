/* Runs in: the main process. */
/*
 * config-valid.c: the second pass of config_load: the sections resolved into struct config
 * and struct config_job, with every default filled in and every value and combination
 * checked; each problem names its fix.
 */

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authfile.h"
#include "config-int.h"
#include "duration.h"
#include "layout.h"
#include "leasekeeper.h"
#include "proto.h"
#include "schedule.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define CONFIG_DEFAULT_ROOT      "/leasekeeper"
#define CONFIG_DEFAULT_JOBS      "jobs/*.ini"
#define CONFIG_DEFAULT_STATE_DIR "/var/lib/leasekeeper"
#define CONFIG_MAX_COMMAND_BYTES 32768
#define CONFIG_MIN_BACKOFF_MS    1000

static void config_resolve_pass_env(struct config_ctx *, const struct config_sec *,
                                    const struct config_kv *, char ***);
static int config_parse_size(const char *text, uint64_t *bytes, char **cause);

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

/*
 * Read on_failure, on_success, on_missed and hook_timeout over defaults (NULL: none; the
 * strings are copied). "none" turns a default of [worker] off.
 */
static void
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

/* Read [worker] cgroups (default auto). */
static void
config_get_cgroups(struct config_ctx *ctx, const struct config_sec *sec, enum config_cgroups *out)
{
	struct config_kv *kv = config_kv_find(sec, "cgroups");

	*out = CONFIG_CGROUPS_AUTO;
	if (kv == NULL || strcmp(kv->value, "auto") == 0)
		return;
	if (strcmp(kv->value, "required") == 0)
		*out = CONFIG_CGROUPS_REQUIRED;
	else if (strcmp(kv->value, "off") == 0)
		*out = CONFIG_CGROUPS_OFF;
	else
		config_error_kv(ctx, sec, kv,
		                "bad cgroups %s: write auto (a cgroup v2 per run where the host "
		                "has one, else process groups), required (refuse to run jobs "
		                "without one) or off (process groups only)",
		                config_q(ctx, kv->value));
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
static void
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

/* Read [worker] tick_claim: ranked (the default) or contend (for benchmarks). */
static void
config_get_tick_claim(struct config_ctx *ctx, const struct config_sec *sec,
                      enum config_tick_claim *out)
{
	struct config_kv *kv = config_kv_find(sec, "tick_claim");

	*out = CONFIG_TICK_RANKED;
	if (kv == NULL || strcmp(kv->value, "ranked") == 0)
		return;
	if (strcmp(kv->value, "contend") == 0)
		*out = CONFIG_TICK_CONTEND;
	else
		config_error_kv(ctx, sec, kv,
		                "bad tick_claim %s: write ranked (the default: the first worker in "
		                "rank claims each tick, the others step in only if it does not) or "
		                "contend (every worker contends at every tick; for benchmarks)",
		                config_q(ctx, kv->value));
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

/*
 * [zookeeper] auth_file: the credentials read from a file of their own (relative to the
 * worker file's directory), which authfile_read refuses unless only we can read it, in a
 * directory (and under directories) only root can change when the worker runs as root.
 */
static void
config_resolve_auth_file(struct config_ctx *ctx, struct config *cfg, const struct config_sec *zk)
{
	struct config_kv *kv = config_kv_find(zk, "auth_file");
	char *joined, *cause;

	if (kv == NULL)
		return;
	if (config_kv_find(zk, "auth") != NULL) {
		config_error_kv(ctx, zk, kv,
		                "auth and auth_file are both set: keep one (auth_file keeps the "
		                "password out of this file)");
		return;
	}
	if (kv->value[0] == '\0') {
		config_error_kv(ctx, zk, kv,
		                "auth_file is empty: name a file holding USER:PASSWORD, e.g. "
		                "auth_file = /etc/leasekeeper/zk.auth");
		return;
	}
	joined = config_join(cfg->dir, kv->value);
	cfg->auth_file = config_clean_path(joined);
	free(joined);
	if (authfile_read(cfg->auth_file, &cfg->auth, &cause) != 0) {
		config_error_kv(ctx, zk, kv, "auth_file: %s", cause);
		free(cause);
	}
	config_perm_auth_file(ctx, zk, kv, cfg->auth_file);
}

/* Resolve [zookeeper], [worker], [safety] and [http], with their defaults. */
void
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
		if (!authfile_valid_auth(kv->value))
			config_error_kv(ctx, zk, kv,
			                "bad auth: write USER:PASSWORD (ZooKeeper digest "
			                "authentication), e.g. auth = leasekeeper:secret");
		else
			config_perm_secret(ctx, zk, kv);
		cfg->auth = xstrdup(kv->value);
	}
	config_resolve_auth_file(ctx, cfg, zk);
	if (config_get_bool(ctx, zk, "require_acl", &cfg->require_acl) == 1 && cfg->require_acl &&
	    config_kv_find(zk, "auth") == NULL && config_kv_find(zk, "auth_file") == NULL)
		config_error_kv(ctx, zk, config_kv_find(zk, "require_acl"),
		                "require_acl = true needs credentials: without auth_file (or auth) "
		                "every node leasekeeper creates is open to every client; add "
		                "auth_file = /etc/leasekeeper/zk.auth (see docs/security.md)");

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
	config_get_tick_claim(ctx, wk, &cfg->tick_claim);
	config_get_cgroups(ctx, wk, &cfg->cgroups);
	config_get_hooks(ctx, wk, NULL, &cfg->hooks);
	config_get_limits(ctx, wk, NULL, cfg->cgroups, &cfg->limits);
	if ((kv = config_kv_find(wk, "timezone")) != NULL && config_check_zone(ctx, wk, kv) == 0)
		cfg->timezone = xstrdup(kv->value);
	if ((kv = config_kv_find(wk, "pass_env")) != NULL)
		config_resolve_pass_env(ctx, wk, kv, &cfg->pass_env);
	else
		cfg->pass_env = xcalloc(1, sizeof *cfg->pass_env);
	config_resolve_labels(ctx, cfg, wk);

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
static int
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
static int
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

/*
 * Check and collect a pass_env line: the worker's variables a job gets, separated by spaces
 * or commas, each a NAME or a PREFIX* pattern (LC_*). "none" passes nothing (a job's way to
 * drop the [worker] default).
 */
static void
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
struct config_job *
config_resolve_job(struct config_ctx *ctx, const struct config *cfg, const struct config_sec *sec)
{
	struct config_job *job = xcalloc(1, sizeof *job);
	const struct config_kv *kv, *kv2;
	char *cause, a[32], b[32], *end;
	int ok_sched = 0, ok_leases, ok_tick, continuous = 0;
	long mask;
	size_t n;

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
	if (schedule_parse_job(job->schedule, job->zone, job->name, &job->sched, &cause) != 0) {
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
	if (config_get_duration(ctx, sec, "jitter", &job->jitter_ms) == 1 && ok_sched &&
	    schedule_set_jitter(job->sched, job->jitter_ms, &cause) != 0) {
		config_error_kv(ctx, sec, config_kv_find(sec, "jitter"), "%s", cause);
		free(cause);
	}
	config_resolve_constraint(ctx, sec, job);
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
	if ((kv = config_kv_find(sec, "pass_env")) != NULL)
		config_resolve_pass_env(ctx, sec, kv, &job->pass_env);
	else {
		for (n = 0; cfg->pass_env != NULL && cfg->pass_env[n] != NULL; n++)
			;
		job->pass_env = xcalloc(n + 1, sizeof *job->pass_env);
		while (n-- > 0)
			job->pass_env[n] = xstrdup(cfg->pass_env[n]);
	}
	config_check_size(ctx, sec, job);
	config_get_limits(ctx, sec, &cfg->limits, cfg->cgroups, &job->limits);

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
	config_perm_log(ctx, sec, kv, job->log_file);
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
	config_get_hooks(ctx, sec, &cfg->hooks, &job->hooks);
	job->record_output = CONFIG_DEFAULT_RECORD_OUTPUT;
	if ((kv = config_kv_find(sec, "record_output")) != NULL) {
		if (config_parse_size(kv->value, &job->record_output, &cause) != 0) {
			config_error_kv(ctx, sec, kv, "record_output: %s", cause);
			free(cause);
		} else if (job->record_output > PROTO_MAX_TAIL)
			config_error_kv(ctx, sec, kv,
			                "record_output %s is more than %dK: run records stay small "
			                "in ZooKeeper; the whole output is in log_file. Write at "
			                "most record_output = %dK, or 0 to keep none",
			                config_q(ctx, kv->value), PROTO_MAX_TAIL / 1024,
			                PROTO_MAX_TAIL / 1024);
	}
	job->on_shutdown = cfg->on_shutdown;
	config_get_on_shutdown(ctx, sec, &job->on_shutdown);
	return job;
}

/* Jobs share a lock: both by lock_path, or both by lock (a lock_path never equals a lock). */
static int
config_lock_key_cmp(const struct config_job *a, const struct config_job *b)
{
	if ((a->lock_path != NULL) != (b->lock_path != NULL))
		return a->lock_path != NULL ? 1 : -1;
	return a->lock_path != NULL ? strcmp(a->lock_path, b->lock_path) : strcmp(a->lock, b->lock);
}

static const struct config *config_lock_sort; /* qsort has no context argument */

/* qsort: by lock, then by the order of the files. */
static int
config_lock_cmp_cb(const void *x, const void *y)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	int c = config_lock_key_cmp(config_lock_sort->jobs_list[i], config_lock_sort->jobs_list[j]);

	return c != 0 ? c : (i > j) - (i < j);
}

/* Jobs that share a lock must agree on the number of leases. */
void
config_check_locks(struct config_ctx *ctx, struct config *cfg, struct config_sec **secs)
{
	struct config_job *a, *b;
	size_t *order, i, j, k, end;

	/* By lock, then by order in the files: O(n log n), not a pass over every pair. */
	order = xcalloc(cfg->njobs + 1, sizeof *order);
	for (i = 0; i < cfg->njobs; i++)
		order[i] = i;
	config_lock_sort = cfg;
	qsort(order, cfg->njobs, sizeof *order, config_lock_cmp_cb);
	config_lock_sort = NULL;
	for (k = 0; k < cfg->njobs; k = end) {
		for (end = k + 1;
		     end < cfg->njobs &&
		     config_lock_key_cmp(cfg->jobs_list[order[k]], cfg->jobs_list[order[end]]) == 0;
		     end++)
			;
		/* Each job of a lock against the first earlier one with other leases. */
		for (j = k + 1; j < end; j++) {
			b = cfg->jobs_list[order[j]];
			for (i = k; i < j; i++) {
				a = cfg->jobs_list[order[i]];
				if (a->leases == b->leases)
					continue;
				config_error_kv(
				    ctx, secs[order[j]], config_kv_find(secs[order[j]], "leases"),
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
	free(order);
}

/*
 * A configuration without jobs is refused unless it says so: a job file that went missing
 * or a jobs pattern that matches nothing would otherwise stop every job on a reload.
 */
void
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
