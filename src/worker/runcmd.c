/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* runcmd.c: `leasekeeper run`: the command line of the worker, which worker.c then runs. */

#include <getopt.h>
#include <stdio.h>

#include "config.h"
#include "leasekeeper.h"
#include "usage.h"
#include "log.h"
#include "runcmd.h"
#include "worker.h"

static const char runcmd_usage[] =
    "usage: leasekeeper run [-c FILE] [-v]\n"
    "\n"
    "Run the worker in the foreground: take leases and run this host's jobs until SIGTERM;\n"
    "SIGHUP reloads the configuration. Under systemd: Type=notify.\n"
    "\n"
    "  -c, --config FILE  the worker's configuration (default " LEASEKEEPER_DEFAULT_CONFIG ")\n"
    "  -v, --verbose      log debug lines too\n"
    "  -h, --help         this help\n";

/* run's options: -c FILE, -v (again for more), -h. -1 to go on, else the status to exit with. */
static int
runcmd_opts(int argc, char **argv, const char **file, int *verbose)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"verbose", no_argument, NULL, 'v'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int ch;

	while ((ch = getopt_long(argc, argv, "c:vh", longopts, NULL)) != -1) {
		if (ch == 'c')
			*file = optarg;
		else if (ch == 'v')
			(*verbose)++;
		else if (ch == 'h') {
			fputs(runcmd_usage, stdout);
			return 0;
		} else
			return usage_hint("run");
	}
	if (optind != argc) {
		fprintf(stderr, "leasekeeper run: unexpected argument \"%s\"\n", argv[optind]);
		return usage_hint("run");
	}
	return -1;
}

/* `run`: the daemon. */
int
runcmd_main(int argc, char **argv)
{
	const char *file = LEASEKEEPER_DEFAULT_CONFIG;
	struct config *cfg;
	int verbose = 0, rc;

	if ((rc = runcmd_opts(argc, argv, &file, &verbose)) >= 0)
		return rc;
	log_init(verbose, "main");
	if ((cfg = config_load_print(file)) == NULL)
		return EXIT_CONFIG;
	rc = worker_run(file, cfg);
	config_free(cfg);
	return rc;
}
