/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process and `leasekeeper exec`. */
/*
 * runspec.c: what one run needs (command, environment, user, directory, log, grace,
 * limits), built in one place for the worker's jobs and for `exec`, so that every command
 * sees the same LEASEKEEPER_* environment.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "runspec.h"

/* Add one formatted entry. */
static void runspec_addf(struct proto_spec *, enum proto_tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
runspec_addf(struct proto_spec *spec, enum proto_tag tag, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
	proto_spec_add(spec, tag, s);
	free(s);
}

/*
 * What a job takes from the worker's environment, before its env lines (which win, being
 * later): LANG and TZ if set, and the variables its pass_env names. The supervisor starts
 * the job from a clean environment (child.c) and adds these.
 */
static void
runspec_pass_env(const struct runspec *rs, struct proto_spec *spec)
{
	extern char **environ;
	const char *v, *eq;
	char **e;

	if ((v = getenv("LANG")) != NULL)
		runspec_addf(spec, PROTO_TAG_ENV, "LANG=%s", v);
	if ((v = getenv("TZ")) != NULL)
		runspec_addf(spec, PROTO_TAG_ENV, "TZ=%s", v);
	for (e = environ; e != NULL && *e != NULL; e++) {
		if ((eq = strchr(*e, '=')) != NULL && eq != *e &&
		    config_pass_env_match(rs->pass_env, *e, (size_t)(eq - *e)))
			proto_spec_add(spec, PROTO_TAG_ENV, *e);
	}
}

/* The supervisor's message for a run (free it with proto_spec_free). */
void
runspec_build(const struct runspec *rs, struct proto_spec *spec)
{
	char tick[40];
	size_t i;

	proto_spec_add(spec, PROTO_TAG_NAME, rs->name);
	if (rs->run_id != NULL)
		proto_spec_add(spec, PROTO_TAG_RUN_ID, rs->run_id);
	for (i = 0; rs->argv[i] != NULL; i++)
		proto_spec_add(spec, PROTO_TAG_ARG, rs->argv[i]);
	if (rs->inherit_env)
		proto_spec_add(spec, PROTO_TAG_INHERIT_ENV, "");
	else
		runspec_pass_env(rs, spec);
	for (i = 0; i < rs->nenv; i++)
		proto_spec_add(spec, PROTO_TAG_ENV, rs->env[i]);
	runspec_addf(spec, PROTO_TAG_ENV, "LEASEKEEPER_JOB=%s", rs->name);
	runspec_addf(spec, PROTO_TAG_ENV, "LEASEKEEPER_NODE=%s", rs->node_id);
	for (i = 0; rs->facts != NULL && rs->facts[i] != NULL; i++)
		proto_spec_add(spec, PROTO_TAG_ENV, rs->facts[i]);
	if (rs->hook_ms > 0)
		runspec_addf(spec, PROTO_TAG_HOOK, "%llu", (unsigned long long)rs->hook_ms);
	else {
		/* A hook holds no lease: no fence or deadline of its own. */
		runspec_addf(spec, PROTO_TAG_ENV, "LEASEKEEPER_FENCE=%lld", (long long)rs->fence);
		if (rs->fences != NULL)
			runspec_addf(spec, PROTO_TAG_ENV, "LEASEKEEPER_FENCES=%s", rs->fences);
		runspec_addf(spec, PROTO_TAG_ENV, "LEASEKEEPER_LEASES=%d", rs->leases);
		runspec_addf(spec, PROTO_TAG_ENV, "LEASEKEEPER_DEADLINE_MS=%d", rs->deadline_ms);
		if (rs->run_id != NULL)
			runspec_addf(spec, PROTO_TAG_ENV, "LEASEKEEPER_RUN_ID=%s", rs->run_id);
	}
	if (rs->tick >= 0) {
		clock_iso8601((uint64_t)rs->tick * 1000, tick, sizeof tick);
		tick[19] = 'Z'; /* whole seconds: 2026-01-02T03:04:05Z */
		tick[20] = '\0';
		runspec_addf(spec, PROTO_TAG_ENV, "LEASEKEEPER_TICK=%s", tick);
	}
	if (rs->workdir != NULL)
		proto_spec_add(spec, PROTO_TAG_WORKDIR, rs->workdir);
	if (rs->user != NULL)
		proto_spec_add(spec, PROTO_TAG_USER, rs->user);
	if (rs->group != NULL)
		proto_spec_add(spec, PROTO_TAG_GROUP, rs->group);
	if (rs->umask >= 0)
		runspec_addf(spec, PROTO_TAG_UMASK, "%o", (unsigned)rs->umask);
	if (rs->log_file != NULL) {
		proto_spec_add(spec, PROTO_TAG_LOG, rs->log_file);
		runspec_addf(spec, PROTO_TAG_LOG_MAX, "%llu",
		             (unsigned long long)rs->log_max_bytes);
		if (rs->record_output > 0)
			runspec_addf(spec, PROTO_TAG_TAIL, "%llu",
			             (unsigned long long)rs->record_output);
	}
	runspec_addf(spec, PROTO_TAG_GRACE, "%llu", (unsigned long long)rs->kill_grace_ms);
	proto_spec_add_limits(spec, &rs->limits);
}

/* The enum proto_controller bit of a controller's name, or 0. */
unsigned
runspec_controller_bit(const char *name)
{
	return strcmp(name, "memory") == 0 ? PROTO_CTL_MEMORY
	       : strcmp(name, "cpu") == 0  ? PROTO_CTL_CPU
	       : strcmp(name, "pids") == 0 ? PROTO_CTL_PIDS
	       : strcmp(name, "io") == 0   ? PROTO_CTL_IO
	                                   : 0;
}

/* Every limit of cfg's jobs that the controllers runs get cannot enforce. */
int
runspec_unenforced(const struct config *cfg, unsigned controllers, runspec_limit_cb cb, void *arg)
{
	const struct config_job *cj;
	char value[32];
	uint64_t v;
	size_t j;
	int i, n = 0;

	for (j = 0; j < cfg->njobs; j++) {
		cj = cfg->jobs_list[j];
		for (i = 0; i < CONFIG_LIMIT_KEYS; i++) {
			if ((v = config_limit_value(&cj->limits, i)) == 0 ||
			    (runspec_controller_bit(config_limit_controllers[i]) & controllers) !=
			        0)
				continue;
			n++;
			if (cb != NULL)
				cb(cj, config_limit_keys[i],
				   config_limit_format(i, v, value, sizeof value),
				   config_limit_controllers[i], arg);
		}
	}
	return n;
}
