/* Runs in: every process at its start: it picks the program a command runs. */
/*
 * main.c: the command table. Each command is one program's entry point: the worker
 * (src/worker/), a one-shot command (src/cli/), or the dashboard (src/web/). Each command
 * parses its own options and prints its own usage with --help.
 */

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "leasekeeper.h"
#include "log.h"
#include "runcmd.h"
#include "usage.h"
#include "web.h"

/* One command: its name, its entry point, and its line in `leasekeeper --help`. */
struct main_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis;
	const char *summary;
};

static const struct main_cmd main_cmds[] = {
    {"run", runcmd_main, "run [-c FILE] [-v]", "run the worker (foreground)"},
    {"check", check_main, "check [-c FILE]", "validate the configuration, print the jobs"},
    {"next", next_main, "next [-c FILE] [-n K] JOB", "the next K fire times of a job"},
    {"status", status_main, "status [-c FILE | --zk HOSTS] [--json]",
     "the cluster as ZooKeeper sees it"},
    {"logs", logs_main, "logs [-c FILE | --zk HOSTS] [--run ID | --last N] JOB",
     "the output's end of a job's recent runs"},
    {"exec", exec_main, "exec [-c FILE | --zk HOSTS] [--leases N] NAME -- CMD [ARGS...]",
     "run one command under a lease"},
    {"set-leases", setleases_main, "set-leases [-c FILE | --zk HOSTS] JOB N",
     "change the cluster's lease count of a job"},
    {"run-now", runnow_main, "run-now [-c FILE | --zk HOSTS] [--wait] JOB",
     "one run of a job now, on one worker"},
    {"pause", control_pause, "pause [-c FILE | --zk HOSTS] [--stop-running] JOB",
     "pause a job cluster-wide"},
    {"resume", control_resume, "resume [-c FILE | --zk HOSTS] JOB", "resume a paused job"},
    {"drain", control_drain, "drain [-c FILE | --zk HOSTS] [--wait] [NODE]",
     "a worker takes no new lease"},
    {"undrain", control_undrain, "undrain [-c FILE | --zk HOSTS] [NODE]",
     "a drained worker takes leases again"},
    {"forget", control_forget, "forget [-c FILE | --zk HOSTS] [--force] JOB",
     "delete the records of a gone job"},
    {"init-auth", initauth_main, "init-auth [--user NAME] [--force] FILE",
     "write a new random ZooKeeper credential file (mode 0600)"},
    {"web", web_main, "web [-c FILE | --zk HOSTS] [--listen HOST:PORT]",
     "serve the read-only dashboard of the cluster"},
};

/* Print the list of commands; the usage exit status when it answers a mistake. */
static int
main_usage(FILE *f)
{
	size_t i;

	fputs("usage: leasekeeper COMMAND [OPTIONS]\n\n", f);
	for (i = 0; i < sizeof main_cmds / sizeof main_cmds[0]; i++)
		fprintf(f, "  %s\n      %s\n", main_cmds[i].synopsis, main_cmds[i].summary);
	fputs("  version\n      print the version\n\n"
	      "FILE defaults to " LEASEKEEPER_DEFAULT_CONFIG ". `leasekeeper COMMAND --help` "
	      "prints a command's options. See leasekeeper(1).\n",
	      f);
	return f == stdout ? 0 : EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	static char name[64];
	const char *cmd;
	size_t i;

	log_init(-1, "main");
	if (argc < 2)
		return main_usage(stderr);
	cmd = argv[1];
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("leasekeeper %s\n", LEASEKEEPER_VERSION);
		return 0;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
		return main_usage(stdout);
	for (i = 0; i < sizeof main_cmds / sizeof main_cmds[0]; i++) {
		if (strcmp(cmd, main_cmds[i].name) != 0)
			continue;
		/* getopt names the program in its messages: "leasekeeper check: invalid option". */
		snprintf(name, sizeof name, "leasekeeper %s", cmd);
		argv[1] = name;
		return main_cmds[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "leasekeeper: unknown command \"%s\"\n", cmd);
	return usage_hint("");
}
