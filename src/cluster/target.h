/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot commands and `leasekeeper web`. */
/* target.h: where a command finds the cluster. */
#ifndef TARGET_H
#define TARGET_H

struct config;

/* The --help lines of the common options, for every command that takes them. */
#define TARGET_OPTIONS_HELP                                                                        \
	"  -c, --config FILE     read ZooKeeper's address and credentials from the worker's\n"     \
	"                        configuration (default " LEASEKEEPER_DEFAULT_CONFIG ")\n"         \
	"      --zk HOSTS        ZooKeeper's connect string (host:port,...) instead of -c\n"       \
	"      --root PATH       the cluster's root node (default: the configuration's, or\n"      \
	"                        /leasekeeper)\n"                                                  \
	"      --auth-file FILE  a digest credential file (user:password), instead of the\n"       \
	"                        configuration's auth_file\n"                                      \
	"  -h, --help            this help\n"

/* The common options: -c FILE or --zk HOSTS, --root and --auth-file. */
struct target_opts {
	const char *file;
	const char *hosts;
	const char *root;
	const char *auth_file;
};

/* What they resolve to. */
struct target {
	struct config *cfg; /* or NULL with --zk */
	const char *hosts;
	const char *root;
	char *auth; /* --auth-file's credentials, or NULL: cfg's */
};

int target_option(int ch, const char *arg, struct target_opts *);
int target_resolve(struct target_opts *, const char *cmd, struct target *);

#endif
