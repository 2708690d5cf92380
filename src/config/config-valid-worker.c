/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * config-valid-worker.c: the second pass of config_load for the worker's own sections:
 * [zookeeper], [worker], [safety] and [http] resolved into struct config, with every default
 * filled in and every value and combination checked; each problem names its fix.
 */

#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authfile.h"
#include "config-int.h"
#include "duration.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define CONFIG_DEFAULT_ROOT               "/leasekeeper"
#define CONFIG_DEFAULT_JOBS               "jobs/*.ini"
#define CONFIG_DEFAULT_UNHEALTHY_AFTER    3     /* host start failures in a row */
#define CONFIG_DEFAULT_UNHEALTHY_PROBE_MS 30000 /* a trial start at most this often */
#define CONFIG_DEFAULT_STATE_DIR          "/var/lib/leasekeeper"

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

/* A digest id key of [zookeeper] (reader, operator): USER:BASE64, with credentials; or NULL. */
static char *
config_resolve_digest_id(struct config_ctx *ctx, const struct config_sec *zk, const char *key,
                         const char *who)
{
	const struct config_kv *kv = config_kv_find(zk, key);

	if (kv == NULL)
		return NULL;
	if (!authfile_valid_digest_id(kv->value))
		config_error_kv(ctx, zk, kv,
		                "bad %s: write %s's digest id, USER:BASE64 of 28 characters, as "
		                "`leasekeeper init-auth --user USER FILE` prints it",
		                key, who);
	else if (config_kv_find(zk, "auth") == NULL && config_kv_find(zk, "auth_file") == NULL)
		config_error_kv(ctx, zk, kv,
		                "%s needs credentials: without auth_file (or auth) every node is "
		                "open to every client already; add auth_file",
		                key);
	return xstrdup(kv->value);
}
/*
 * Resolve [zookeeper]: hosts, root, session_timeout and the credentials. Returns what
 * config_get_duration said of session_timeout (0 unset, 1 good), -1 if it is bad.
 */
static int
config_resolve_zookeeper(struct config_ctx *ctx, struct config *cfg)
{
	struct config_sec *zk = ctx->worker[CONFIG_ZOOKEEPER];
	struct config_kv *kv, *kv_t;
	char *why, a[32];
	int ok_t;

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
	cfg->reader = config_resolve_digest_id(ctx, zk, "reader", "the read-only identity");
	cfg->operator_id = config_resolve_digest_id(ctx, zk, "operator", "the operator identity");
	return ok_t;
}

/* Resolve [worker]: the node id, where jobs and state live, and the defaults of every job. */
static void
config_resolve_worker_section(struct config_ctx *ctx, struct config *cfg)
{
	struct config_sec *wk = ctx->worker[CONFIG_WORKER];
	char host[HOST_NAME_MAX + 1], *why;
	struct config_kv *kv;

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
	config_get_bool(ctx, wk, "allow_open_control", &cfg->allow_open_control);
	config_get_bool(ctx, wk, "allow_open_output", &cfg->allow_open_output);
	cfg->on_shutdown = CONFIG_SHUTDOWN_TERMINATE;
	config_get_on_shutdown(ctx, wk, &cfg->on_shutdown);
	config_get_tick_claim(ctx, wk, &cfg->tick_claim);
	cfg->unhealthy_after = CONFIG_DEFAULT_UNHEALTHY_AFTER;
	config_get_int(ctx, wk, "unhealthy_after", 0, 1000, " (0: never unhealthy)", NULL,
	               &cfg->unhealthy_after);
	cfg->unhealthy_probe_ms = CONFIG_DEFAULT_UNHEALTHY_PROBE_MS;
	if (config_get_duration(ctx, wk, "unhealthy_probe", &cfg->unhealthy_probe_ms) == 1 &&
	    cfg->unhealthy_probe_ms < 1000)
		config_error_kv(ctx, wk, config_kv_find(wk, "unhealthy_probe"),
		                "unhealthy_probe is too short: write 1s or more (how often an "
		                "unhealthy worker takes a trial start)");
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
}

/*
 * Resolve [safety]: safety_margin and kill_grace, which must leave half of the session
 * timeout (checked when session_timeout is good, ok_t >= 0).
 */
static void
config_resolve_safety(struct config_ctx *ctx, struct config *cfg, int ok_t)
{
	struct config_sec *sf = ctx->worker[CONFIG_SAFETY];
	struct config_kv *kv_t = config_kv_find(ctx->worker[CONFIG_ZOOKEEPER], "session_timeout");
	struct config_kv *kv_m, *kv_g;
	char a[32], b[32], c[32], d[32];
	int ok_m, ok_g;

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
}

/* Resolve [http]: the status page's listen address (none when unset or empty). */
static void
config_resolve_http(struct config_ctx *ctx, struct config *cfg)
{
	struct config_sec *ht = ctx->worker[CONFIG_HTTP];
	struct config_kv *kv;

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

/* Resolve [zookeeper], [worker], [safety] and [http], with their defaults. */
void
config_resolve_worker(struct config_ctx *ctx, struct config *cfg)
{
	int ok_t = config_resolve_zookeeper(ctx, cfg);

	config_resolve_worker_section(ctx, cfg);
	config_resolve_safety(ctx, cfg, ok_t);
	config_resolve_http(ctx, cfg);
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
