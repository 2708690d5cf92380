/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: every process at its start: it picks the program a command runs. */
/*
 * main.c: the command table. Each command is one program's entry point: the worker
 * (src/worker/), a one-shot command (src/cli/), or the dashboard (src/web/). Each command
 * parses its own options and prints its own usage with --help.
 */

#include <sys/mman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "leasekeeper.h"
#include "log.h"
#include "runcmd.h"
#include "usage.h"
#include "utf8.h"
#include "web.h"

/* One command: its name, its entry point, and its line in `leasekeeper --help`. */
struct main_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis;
	const char *summary;
	int json; /* takes --json (-j): then what it says on stderr is one JSON object */
};

static const struct main_cmd main_cmds[] = {
    {"run", runcmd_main, "run [-c FILE] [-v]", "run the worker (foreground)", 0},
    {"check", check_main, "check [-c FILE]", "validate the configuration, print the jobs", 1},
    {"next", next_main, "next [-c FILE] [-n K] JOB", "the next K fire times of a job", 1},
    {"status", status_main, "status [-c FILE | --zk HOSTS] [--json]",
     "the cluster as ZooKeeper sees it", 1},
    {"logs", logs_main, "logs [-c FILE | --zk HOSTS] [--run ID | --last N | --follow] JOB",
     "the output's end of a job's recent runs, or its run in progress", 1},
    {"exec", exec_main,
     "exec [-c FILE | --zk HOSTS] [--leases N | --read | --write] NAME -- CMD [ARGS...]",
     "run one command under a lease", 0},
    {"set-leases", setleases_main, "set-leases [-c FILE | --zk HOSTS] JOB N",
     "change the cluster's lease count of a job", 0},
    {"run-now", runnow_main, "run-now [-c FILE | --zk HOSTS] [--wait] JOB",
     "one run of a job now, on one worker", 1},
    {"stop", stop_main, "stop [-c FILE | --zk HOSTS] [--run RUN_ID] [--kill] [--no-restart] JOB",
     "end a job's run under way, wherever it runs", 1},
    {"pause", control_pause, "pause [-c FILE | --zk HOSTS] [--stop-running] JOB",
     "pause a job cluster-wide", 1},
    {"resume", control_resume, "resume [-c FILE | --zk HOSTS] JOB", "resume a paused job", 1},
    {"drain", control_drain, "drain [-c FILE | --zk HOSTS] [--wait] [NODE]",
     "a worker takes no new lease", 1},
    {"undrain", control_undrain, "undrain [-c FILE | --zk HOSTS] [NODE]",
     "a drained worker takes leases again", 1},
    {"forget", control_forget, "forget [-c FILE | --zk HOSTS] [--force] JOB",
     "delete the records of a gone job", 1},
    {"init-auth", initauth_main, "init-auth [--user NAME] [--force] FILE",
     "write a new random ZooKeeper credential file (mode 0600)", 0},
    {"web", web_main, "web [-c FILE | --zk HOSTS] [--listen HOST:PORT]",
     "serve the read-only dashboard of the cluster", 0},
};

/* Print the list of commands; the usage exit status when it answers a mistake. */
static int
main_usage(FILE *f)
{
	size_t i;

	fputs("usage: leasekeeper COMMAND [OPTIONS]\n\n", f);
	for (i = 0; i < sizeof main_cmds / sizeof main_cmds[0]; i++)
		fprintf(f, "  %s\n      %s\n", main_cmds[i].synopsis, main_cmds[i].summary);
	fputs("  version\n      print the version\n\nWith --json (one JSON object on stdout; "
	      "errors as one on stderr):",
	      f);
	for (i = 0; i < sizeof main_cmds / sizeof main_cmds[0]; i++)
		if (main_cmds[i].json)
			fprintf(f, " %s", main_cmds[i].name);
	fputs(".\nFILE defaults to " LEASEKEEPER_DEFAULT_CONFIG ". `leasekeeper COMMAND --help` "
	      "prints a command's options. See leasekeeper(1).\n",
	      f);
	return f == stdout ? 0 : EXIT_USAGE;
}

/* Whether the command line asks for JSON (--json or -j before any "--"). */
static int
main_wants_json(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0)
			return 1;
	return 0;
}

/* Whether a captured stderr line is a log line (it starts with a timestamp, "2026-..."). */
static int
main_json_log_line(const char *s)
{
	return s[0] >= '0' && s[0] <= '9' && strlen(s) > 4 && s[4] == '-';
}

/* Whether a captured stderr line is a note or a warning ("leasekeeper drain: note: ..."). */
static int
main_json_aside(const char *s)
{
	const char *colon = strchr(s, ':');

	return colon != NULL &&
	       (strncmp(colon, ": note: ", 8) == 0 || strncmp(colon, ": warning: ", 11) == 0);
}

/*
 * The line that says what happened: for an error (failed), the first line that is neither a
 * log line nor a note or warning printed before it; else the first that is not a log line;
 * else the first.
 */
static json_t *
main_json_headline(json_t *lines, int failed)
{
	const char *s;
	json_t *line;
	size_t i;

	if (failed)
		json_array_foreach(lines, i, line) {
			s = json_string_value(line);
			if (s != NULL && !main_json_log_line(s) && !main_json_aside(s))
				return line;
		}
	json_array_foreach(lines, i, line) {
		s = json_string_value(line);
		if (s != NULL && !main_json_log_line(s))
			return line;
	}
	return json_array_get(lines, 0);
}

/*
 * Run a command that was asked for JSON: what it writes on stderr (its errors, warnings and
 * log lines, from any code) is kept aside, then written as one JSON object,
 * {"command", "exit_status", "error" or "warning": the line that says what happened, "lines":
 * all of them},
 * so that a script reads stdout and stderr alike. The exit status is the command's.
 */
static int
main_json_run(const struct main_cmd *cmd, int argc, char **argv)
{
	int saved, fd, rc;
	char *text = NULL, *line, *next, *valid;
	size_t len = 0, cap = 0;
	ssize_t n;
	json_t *o, *lines;

	fflush(stderr);
	if ((fd = memfd_create("leasekeeper-stderr", MFD_CLOEXEC)) < 0 || (saved = dup(2)) < 0)
		return cmd->fn(argc, argv); /* no room to capture: plain text */
	dup2(fd, 2);
	rc = cmd->fn(argc, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	lseek(fd, 0, SEEK_SET);
	do {
		if (cap - len < 4096)
			text = realloc(text, cap += 65536);
		if (text == NULL)
			abort();
		n = read(fd, text + len, cap - len - 1);
		len += n > 0 ? (size_t)n : 0;
	} while (n > 0);
	close(fd);
	text[len] = '\0';
	if (len == 0) {
		free(text);
		return rc;
	}
	lines = json_array();
	for (line = text; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		valid = utf8_valid(line, strlen(line));
		json_array_append_new(lines, json_string(valid));
		free(valid);
	}
	o = json_pack("{s:s, s:i, s:O, s:o}", "command", cmd->name, "exit_status", rc,
	              rc != 0 ? "error" : "warning", main_json_headline(lines, rc != 0), "lines",
	              lines);
	if (o != NULL)
		json_dumpf(o, stderr, JSON_COMPACT | JSON_ENSURE_ASCII);
	fputc('\n', stderr);
	json_decref(o);
	free(text);
	return rc;
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
		if (main_cmds[i].json && main_wants_json(argc - 1, argv + 1))
			return main_json_run(&main_cmds[i], argc - 1, argv + 1);
		return main_cmds[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "leasekeeper: unknown command \"%s\"\n", cmd);
	return usage_hint("");
}
