/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot commands and `leasekeeper web`. */
/* target.c: where a command finds the cluster: -c FILE or --zk HOSTS, --root, --auth-file. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authfile.h"
#include "config.h"
#include "leasekeeper.h"
#include "target.h"
#include "znode.h"

/* Take one of the common options (-c, --zk, --root, --auth-file); 1 if ch was one. */
int
target_option(int ch, const char *arg, struct target_opts *o)
{
	switch (ch) {
	case 'c':
		o->file = arg;
		return 1;
	case 'z':
		o->hosts = arg;
		return 1;
	case 'r':
		o->root = arg;
		return 1;
	case 'A':
		o->auth_file = arg;
		return 1;
	}
	return 0;
}

/* Resolve the options into t (the caller frees t->cfg and t->auth); 0, or an exit status
 * after saying why on stderr, as "leasekeeper CMD: ...". */
int
target_resolve(struct target_opts *o, const char *cmd, struct target *t)
{
	struct config_errors errors = {NULL, 0};
	char *cause;
	size_t i;

	memset(t, 0, sizeof *t);
	/* A connect string that cannot parse would only be retried until the timeout. */
	if (o->hosts != NULL && !config_valid_hosts(o->hosts, &cause)) {
		fprintf(stderr, "leasekeeper %s: --zk: %s\n", cmd, cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (o->root != NULL && !znode_valid_path(o->root, &cause)) {
		fprintf(stderr, "leasekeeper %s: --root: %s\n", cmd, cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (o->file == NULL && o->hosts == NULL) {
		o->file = LEASEKEEPER_DEFAULT_CONFIG;
		if (access(o->file, R_OK) != 0) {
			fprintf(stderr, "leasekeeper %s: give -c FILE or --zk HOSTS\n", cmd);
			return EXIT_USAGE;
		}
	}
	if (o->file != NULL) {
		if (config_load_opts(o->file, &t->cfg, &errors, CONFIG_LOAD_ALLOW_NO_JOBS) != 0) {
			for (i = 0; i < errors.n; i++)
				fprintf(stderr, "%s\n", errors.lines[i]);
			config_errors_free(&errors);
			return EXIT_CONFIG;
		}
		config_errors_free(&errors);
	}
	/* --auth-file overrides the configuration's credentials; refused like auth_file. */
	if (o->auth_file != NULL && authfile_read(o->auth_file, &t->auth, &cause) != 0) {
		fprintf(stderr, "leasekeeper %s: --auth-file: %s\n", cmd, cause);
		free(cause);
		config_free(t->cfg);
		t->cfg = NULL;
		return EXIT_CONFIG;
	}
	t->hosts = o->hosts != NULL ? o->hosts : t->cfg->hosts;
	t->root = o->root != NULL ? o->root : t->cfg != NULL ? t->cfg->root : "/leasekeeper";
	return 0;
}
