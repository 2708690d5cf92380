/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command (`leasekeeper check`). */
/* check.c: `leasekeeper check`: validate the configuration and print what it resolves to. */

#include <sys/socket.h>

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cgroup.h"
#include "cli.h"
#include "config.h"
#include "leasekeeper.h"
#include "usage.h"
#include "runspec.h"
#include "schedule.h"

static const char check_usage[] =
    "usage: leasekeeper check [-c FILE] [--json]\n"
    "\n"
    "Validate the worker's configuration and every job file it names, report every error\n"
    "at once (file:line: the fix), and print the resolved jobs and this host's containment.\n"
    "\n"
    "  -c, --config FILE  the worker's configuration (default " LEASEKEEPER_DEFAULT_CONFIG ")\n"
    "  -j, --json         one JSON object: ok, errors, this host's containment, the jobs\n"
    "  -h, --help         this help\n";

/* check's options: -c FILE, -h. -1 to go on, else the status to exit with. */
static int
check_opts(int argc, char **argv, const char **file, int *as_json)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int ch;

	while ((ch = getopt_long(argc, argv, "c:jh", longopts, NULL)) != -1) {
		if (ch == 'c')
			*file = optarg;
		else if (ch == 'j')
			*as_json = 1;
		else if (ch == 'h') {
			fputs(check_usage, stdout);
			return 0;
		} else
			return usage_hint("check");
	}
	if (optind != argc) {
		fprintf(stderr, "leasekeeper check: unexpected argument \"%s\"\n", argv[optind]);
		return usage_hint("check");
	}
	return -1;
}

/* runspec_unenforced: say that a job's limit is not enforced on this host. */
static void
check_unenforced_cb(const struct config_job *cj, const char *key, const char *value,
                    const char *controller, void *arg)
{
	const struct config *cfg = arg;
	int required = cfg->cgroups == CONFIG_CGROUPS_REQUIRED;

	fprintf(stderr,
	        "%s:%d: %s: job %s: %s = %s %s on this host: the %s controller is not delegated "
	        "to the worker's cgroup; delegate it (under systemd: Delegate=yes, see "
	        "docs/safety.md)%s\n",
	        cj->file, cj->line, required ? "error" : "warning", cj->name, key, value,
	        required ? "cannot be enforced" : "is not enforced", controller,
	        required
	            ? " or remove the limit (cgroups = required runs no job without its limits)"
	            : ", or remove the limit");
}

/* `check`: the limits each job gets on this host, given the controllers runs get. */
static void
check_limits(const struct config *cfg, unsigned controllers, FILE *out)
{
	const struct config_job *cj;
	char value[32];
	uint64_t v;
	size_t j;
	int i, n;

	for (j = 0; j < cfg->njobs; j++) {
		cj = cfg->jobs_list[j];
		n = 0;
		for (i = 0; i < CONFIG_LIMIT_KEYS; i++) {
			if ((v = config_limit_value(&cj->limits, i)) == 0 ||
			    (runspec_controller_bit(config_limit_controllers[i]) & controllers) ==
			        0)
				continue;
			if (n++ == 0)
				fprintf(out, "  enforced         job %s:", cj->name);
			fprintf(out, "%s %s %s", n > 1 ? "," : "", config_limit_keys[i],
			        config_limit_format(i, v, value, sizeof value));
		}
		if (n > 0)
			fprintf(out, "\n");
	}
}

/*
 * `check`: what containment this host gives runs, as `run` would set it up, and which
 * limits it enforces. -1 when cgroups = required cannot be met.
 */
static int
check_cgroups(const struct config *cfg, FILE *out)
{
	char *name, *where, *cause;
	unsigned controllers = 0;
	int rc = 0;

	if (cfg->cgroups == CONFIG_CGROUPS_OFF) {
		fprintf(out, "  containment      process groups (cgroups = off)\n");
		return 0;
	}
	name = cgroup_worker_name(cfg->node_id, cfg->state_dir);
	if (cgroup_probe(name, &where, &controllers, &cause) == 0)
		fprintf(out, "  containment      a cgroup per run under %s\n", where);
	else if (cfg->cgroups == CONFIG_CGROUPS_REQUIRED)
		fprintf(out,
		        "  containment      none: %s; with cgroups = required no job will run\n",
		        cause);
	else
		fprintf(out, "  containment      process groups: %s\n", cause);
	if (where == NULL && cfg->cgroups == CONFIG_CGROUPS_REQUIRED)
		rc = -1;
	check_limits(cfg, controllers, out);
	if (runspec_unenforced(cfg, controllers, check_unenforced_cb, (void *)cfg) > 0 &&
	    cfg->cgroups == CONFIG_CGROUPS_REQUIRED)
		rc = -1;
	free(name);
	free(where);
	free(cause);
	return rc;
}

/* A job as `check --json` shows it: "locks" is every lock it holds for a run, as listed. */
static json_t *
check_job_json(const struct config_job *cj)
{
	json_t *locks = json_array();
	size_t i;

	for (i = 0; i < cj->nlocks; i++)
		json_array_append_new(locks,
		                      json_pack("{s:s, s:s, s:i}", "path", cj->locks[i].znode,
		                                "mode", config_lock_kind_name(cj->locks[i].kind),
		                                "leases", cj->locks[i].leases));
	return json_pack("{s:s, s:s, s:i, s:s, s:s, s:i, s:s, s:o, s:i, s:s?}", "name", cj->name,
	                 "file", cj->file, "line", cj->line, "schedule", cj->schedule, "resolved",
	                 schedule_resolved(cj->sched), "leases", cj->leases, "lock", cj->lock_znode,
	                 "locks", locks, "per_tick", cj->per_tick, "user", cj->user);
}

/* `check --json`: one object on stdout, whatever the outcome; the status as in text. */
static int
check_json(const char *file)
{
	struct config_errors errors = {NULL, 0};
	struct config *cfg = NULL;
	json_t *out = json_pack("{s:s, s:b, s:[], s:[], s:[]}", "config", file, "ok", 0, "errors",
	                        "host", "jobs");
	char *text = NULL, *line, *next;
	size_t i, len = 0;
	FILE *mem;
	int rc = 1;

	if (config_load(file, &cfg, &errors) != 0) {
		for (i = 0; i < errors.n; i++)
			json_array_append_new(json_object_get(out, "errors"),
			                      json_string(errors.lines[i]));
	} else {
		for (i = 0; i < cfg->njobs; i++)
			json_array_append_new(json_object_get(out, "jobs"),
			                      check_job_json(cfg->jobs_list[i]));
		if ((mem = open_memstream(&text, &len)) == NULL)
			abort();
		rc = check_cgroups(cfg, mem) != 0;
		fclose(mem);
		for (line = text; line != NULL && *line != '\0'; line = next) {
			if ((next = strchr(line, '\n')) != NULL)
				*next++ = '\0';
			while (*line == ' ')
				line++;
			json_array_append_new(json_object_get(out, "host"), json_string(line));
		}
		free(text);
		if (rc != 0)
			json_array_append_new(json_object_get(out, "errors"),
			                      json_string("configuration refused on this host: "
			                                  "cgroups = required cannot be met"));
		if (config_auth_warning(cfg) != NULL)
			json_object_set_new(out, "warning", json_string(config_auth_warning(cfg)));
		json_object_set_new(out, "ok", json_boolean(rc == 0));
	}
	config_errors_free(&errors);
	config_free(cfg);
	json_dumpf(out, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
	putchar('\n');
	json_decref(out);
	return rc;
}

/*
 * Warn when [http] listen cannot be bound now (a local user may hold the port): the worker
 * would run its jobs without its status page and retry. A running worker holds it itself.
 */
static void
check_listen(const struct config *cfg)
{
	struct addrinfo hints, *res = NULL;
	char host[256];
	const char *colon;
	size_t n;
	int fd, one = 1, err = 0;

	if (cfg->http_listen == NULL || (colon = strrchr(cfg->http_listen, ':')) == NULL)
		return;
	n = (size_t)(colon - cfg->http_listen);
	if (n >= sizeof host)
		return;
	memcpy(host, cfg->http_listen, n);
	host[n] = '\0';
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || res == NULL)
		return; /* resolution trouble: the worker says so when it binds */
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, res->ai_addr, res->ai_addrlen) != 0)
			err = errno;
		close(fd);
	}
	freeaddrinfo(res);
	if (err != 0)
		fprintf(stderr,
		        "leasekeeper check: warning: [http] listen = %s cannot be bound now (%s): "
		        "unless a running worker holds it, another process does; the worker would "
		        "run its jobs without the status page and retry the bind\n",
		        cfg->http_listen, strerror(err));
}

/* `check`: validate and print the resolved configuration. */
int
check_main(int argc, char **argv)
{
	const char *file = LEASEKEEPER_DEFAULT_CONFIG;
	struct config *cfg;
	int rc, as_json = 0;

	if ((rc = check_opts(argc, argv, &file, &as_json)) >= 0)
		return rc;
	if (as_json)
		return check_json(file);
	if ((cfg = config_load_print(file)) == NULL)
		return 1;
	config_print(cfg, stdout);
	if (check_cgroups(cfg, stdout) != 0) {
		printf("configuration refused on this host: cgroups = required cannot be met (see "
		       "above)\n");
		config_free(cfg);
		return 1;
	}
	if (config_auth_warning(cfg) != NULL)
		fprintf(stderr, "leasekeeper check: warning: %s\n", config_auth_warning(cfg));
	check_listen(cfg);
	printf("configuration OK\n");
	config_free(cfg);
	return 0;
}
