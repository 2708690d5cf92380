/* SPDX-License-Identifier: Apache-2.0 */
/* test_config.c: the worker and job files: every error names its file, line and fix. */

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "posixacl.h"
#include "schedule.h"

/* Five lines; cases that add worker settings start at line 6. */
#define BASE                                                                                       \
	"[zookeeper]\n"                                                                            \
	"hosts = 127.0.0.1:2181\n"                                                                 \
	"[worker]\n"                                                                               \
	"node_id = t\n"                                                                            \
	"allow_root_jobs = true\n"

/* The same without allow_root_jobs: four lines. */
#define BASE_NOROOT                                                                                \
	"[zookeeper]\n"                                                                            \
	"hosts = 127.0.0.1:2181\n"                                                                 \
	"[worker]\n"                                                                               \
	"node_id = t\n"

static char tdir[256];

static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(tdir, sizeof tdir, "/tmp/lk-test-config-XXXXXX");
	if (mkdtemp(tdir) == NULL)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	return nftw(tdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Write tdir/name (creating its directory), or fail the test. */
static void
put(const char *name, const char *text)
{
	char path[PATH_MAX], *slash;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", tdir, name);
	for (slash = strchr(path + strlen(tdir) + 1, '/'); slash != NULL;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	/* as root, a file others can read or write is refused (config-perm.c) */
	assert_int_equal(chmod(path, 0600), 0);
}

/* tdir/name in a static buffer. */
static const char *
at(const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/%s", tdir, name);
	return path;
}

/* Load tdir/name; print the errors when verbose. */
static int
load(const char *name, struct config **cfg, struct config_errors *errors)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/%s", tdir, name);
	return config_load(path, cfg, errors);
}

/* Whether some error starts with tdir/file:line: and contains every one of want (NULL-ended). */
static int
has_error(const struct config_errors *errors, const char *file, int line, ...)
{
	char prefix[PATH_MAX + 64];
	const char *want;
	va_list ap;
	size_t i;
	int ok;

	if (line > 0)
		snprintf(prefix, sizeof prefix, "%s/%s:%d: ", tdir, file, line);
	else
		snprintf(prefix, sizeof prefix, "%s/%s: ", tdir, file);
	for (i = 0; i < errors->n; i++) {
		if (strncmp(errors->lines[i], prefix, strlen(prefix)) != 0)
			continue;
		ok = 1;
		va_start(ap, line);
		while ((want = va_arg(ap, const char *)) != NULL) {
			if (strstr(errors->lines[i], want) == NULL)
				ok = 0;
		}
		va_end(ap);
		if (ok)
			return 1;
	}
	return 0;
}

static void
dump(const struct config_errors *errors)
{
	size_t i;

	for (i = 0; i < errors->n; i++)
		fprintf(stderr, "  got: %s\n", errors->lines[i]);
}

/* One broken configuration and the one error it must produce. */
struct bad_case {
	const char *name;
	const char *worker; /* NULL: BASE */
	const char *job;    /* jobs/a.ini, or NULL for none */
	const char *file;   /* where the error is: "worker.ini" or "jobs/a.ini" */
	int line;           /* 0: about the whole file */
	const char *what;   /* part of the message saying what is wrong */
	const char *fix;    /* part of the message saying how to fix it */
	int root_only;      /* meaningful only when the test runs as root */
};

static const struct bad_case bad_cases[] = {
    /* [worker] unhealthy_after, unhealthy_probe (issue 20) */
    {"unhealthy_after negative", BASE "unhealthy_after = -1\n", NULL, "worker.ini", 6,
     "unhealthy_after = -1 is too small: it must be at least 0", "(0: never unhealthy)", 0},
    {"unhealthy_after too large", BASE "unhealthy_after = 5000\n", NULL, "worker.ini", 6,
     "unhealthy_after = \"5000\" is too large: the most is 1000", "1000", 0},
    {"unhealthy_probe too short", BASE "unhealthy_probe = 200ms\n", NULL, "worker.ini", 6,
     "unhealthy_probe is too short", "write 1s or more", 0},
    /* [zookeeper] */
    {"typo in key", "[zookeeper]\nhosts = h:1\nsesion_timeout = 10s\n", NULL, "worker.ini", 3,
     "unknown key \"sesion_timeout\" in [zookeeper]", "did you mean \"session_timeout\"?", 0},
    {"duration without unit", BASE "[zookeeper]\nsession_timeout = 10\n", NULL, "worker.ini", 7,
     "session_timeout: duration \"10\" has no unit", "e.g. \"10s\"", 0},
    {"duration with bad unit", BASE "[zookeeper]\nsession_timeout = 10sec\n", NULL, "worker.ini", 7,
     "session_timeout: duration \"10sec\" has an unknown unit", "use ms, s, m, h or d", 0},
    {"session timeout too short", BASE "[zookeeper]\nsession_timeout = 500ms\n", NULL, "worker.ini",
     7, "session_timeout = 500ms is outside 1s..60s", "e.g. 10s", 0},
    {"session timeout too long", BASE "[zookeeper]\nsession_timeout = 2m\n", NULL, "worker.ini", 7,
     "session_timeout = 2m is outside 1s..60s", "pick a value in that range", 0},
    {"bad operator id", BASE "[zookeeper]\nauth = lk:secret\noperator = operator:short\n", NULL,
     "worker.ini", 8, "bad operator: write the operator identity's digest id",
     "leasekeeper init-auth --user USER FILE", 0},
    {"operator without credentials",
     BASE "[zookeeper]\noperator = operator:Y3N+16zXSFnwae1Ce4hqZDPKurk=\n", NULL, "worker.ini", 7,
     "operator needs credentials", "add auth_file", 0},
    {"zookeeper without hosts", "[zookeeper]\nroot = /x\n[worker]\nallow_root_jobs = 1\n", NULL,
     "worker.ini", 1, "[zookeeper] has no hosts", "add hosts = HOST:PORT", 0},
    {"no zookeeper section", "[worker]\nnode_id = t\n", NULL, "worker.ini", 0,
     "no [zookeeper] section", "add one with hosts = HOST:PORT", 0},
    {"hosts without port", "[zookeeper]\nhosts = localhost\n", NULL, "worker.ini", 2,
     "bad hosts \"localhost\"", "write HOST:PORT[,HOST:PORT...][/chroot]", 0},
    {"hosts with bad chroot", "[zookeeper]\nhosts = a:1,b:2/x//y\n", NULL, "worker.ini", 2,
     "bad chroot in hosts", "remove the extra slash", 0},
    {"relative root", BASE "[zookeeper]\nroot = leasekeeper\n", NULL, "worker.ini", 7,
     "bad root \"leasekeeper\" is not absolute", "start it with '/'", 0},
    {"auth without password", BASE "[zookeeper]\nauth = admin\n", NULL, "worker.ini", 7, "bad auth",
     "write USER:PASSWORD", 0},
    {"empty value", BASE "[zookeeper]\nroot =\n", NULL, "worker.ini", 7,
     "root in [zookeeper] has no value", "remove the line to get the default", 0},
    {"duplicate key", "[zookeeper]\nhosts = a:1\n\nhosts = b:2\n", NULL, "worker.ini", 4,
     "duplicate key \"hosts\" in [zookeeper] (first set at line 2)", "keep one", 0},
    {"duplicate key across headers",
     "[zookeeper]\nhosts = a:1\n[worker]\n[zookeeper]\nhosts = b:2\n", NULL, "worker.ini", 5,
     "duplicate key \"hosts\" in [zookeeper] (first set at line 2)", "keep one", 0},
    /* [worker] */
    {"node_id with slash", "[zookeeper]\nhosts = a:1\n[worker]\nnode_id = a/b\n", NULL,
     "worker.ini", 4, "bad node_id \"a/b\" contains '/'", "a node_id is one ZooKeeper node name",
     0},
    {"bad boolean", "[zookeeper]\nhosts = a:1\n[worker]\nallow_root_jobs = maybe\n", NULL,
     "worker.ini", 4, "bad boolean \"maybe\" for allow_root_jobs", "write true or false", 0},
    {"bad on_shutdown", BASE "on_shutdown = kill\n", NULL, "worker.ini", 6,
     "bad on_shutdown \"kill\"", "write terminate", 0},
    {"bad worker timezone", BASE "timezone = Mars/Olympus_Mons\n", NULL, "worker.ini", 6,
     "timezone: ", "Mars/Olympus_Mons", 0},
    {"missing jobs directory", BASE "jobs = nosuchdir\n", NULL, "worker.ini", 6, "jobs: \"",
     "nosuchdir\" does not exist", 0},
    {"job key in worker section", BASE "leases = 2\n", NULL, "worker.ini", 6,
     "unknown key \"leases\" in [worker]", "put it in a [job NAME] section", 0},
    {"zookeeper key in safety", BASE "[safety]\nsession_timeout = 10s\n", NULL, "worker.ini", 7,
     "unknown key \"session_timeout\" in [safety]", "it belongs in [zookeeper]", 0},
    /* [safety] and [http] */
    {"zero safety margin", BASE "[safety]\nsafety_margin = 0s\n", NULL, "worker.ini", 7,
     "safety_margin must be more than 0", "e.g. 1s", 0},
    {"zero kill grace", BASE "[safety]\nkill_grace = 0ms\n", NULL, "worker.ini", 7,
     "kill_grace must be more than 0", "e.g. 2s", 0},
    {"safety beyond half the timeout", BASE "[safety]\nsafety_margin = 2s\nkill_grace = 4s\n", NULL,
     "worker.ini", 7,
     "safety_margin (2s) + kill_grace (4s) = 6s is more than half of session_timeout (10s)",
     "one late heartbeat kills every job; lower safety_margin or kill_grace, or raise "
     "session_timeout",
     0},
    {"short timeout with default safety", BASE "[zookeeper]\nsession_timeout = 4s\n", NULL,
     "worker.ini", 7, "= 3s is more than half of session_timeout (4s)",
     "heartbeats every session_timeout/3", 0},
    {"listen without port", BASE "[http]\nlisten = 9187\n", NULL, "worker.ini", 7,
     "bad listen \"9187\"", "write HOST:PORT", 0},
    {"listen with bad port", BASE "[http]\nlisten = 127.0.0.1:99999\n", NULL, "worker.ini", 7,
     "bad listen \"127.0.0.1:99999\"", "write HOST:PORT", 0},
    /* lines and sections */
    {"line without equals", BASE "[zookeeper]\nroot /x:y\n", NULL, "worker.ini", 7,
     "expected KEY = VALUE, a [SECTION] header or a comment, got \"root /x:y\"",
     "fix or remove the line", 0},
    {"colon instead of equals", BASE "[zookeeper]\nroot: /x\n", NULL, "worker.ini", 7,
     "expected KEY = VALUE", "write '=' between the key and the value", 0},
    {"unclosed section header", BASE "[safety\n", NULL, "worker.ini", 6,
     "section header \"[safety\" has no closing ']'", "write [NAME]", 0},
    {"text after section header", BASE "[safety] x\n", NULL, "worker.ini", 6,
     "unexpected text \"x\" after the section header", "put it on a line of its own", 0},
    {"key outside any section", "hosts = a:1\n[zookeeper]\nhosts = a:1\n", NULL, "worker.ini", 1,
     "key \"hosts\" is outside any section", "put it under a header", 0},
    {"no key before equals", BASE "= 5\n", NULL, "worker.ini", 6, "no key before '='",
     "write KEY = VALUE", 0},
    {"typo in section in job file", NULL, "# jobs\n\n[zookeper]\n", "jobs/a.ini", 3,
     "unknown section [zookeper]", "did you mean [zookeeper]?", 0},
    {"typo in job section", NULL, "[jobs backup]\ncommand = true\n", "jobs/a.ini", 1,
     "unknown section [jobs backup]", "did you mean [job backup]?", 0},
    {"unknown section", BASE "[metrics]\n", NULL, "worker.ini", 6, "unknown section [metrics]",
     "use [zookeeper], [worker], [safety], [http] or [job NAME]", 0},
    {"worker section in job file", NULL, "[safety]\nkill_grace = 1s\n", "jobs/a.ini", 1,
     "section [safety] belongs in the worker file", "move it there", 0},
    {"job without a name", NULL, "[job]\ncommand = true\n", "jobs/a.ini", 1,
     "section [job] has no name", "write [job NAME]", 0},
    {"job name with slash", NULL, "[job a/b]\ncommand = true\n", "jobs/a.ini", 1,
     "bad job name \"a/b\" contains '/'", "use letters, digits, '-', '_' and '.'", 0},
    /* [job NAME] */
    {"job without command", NULL, "\n[job a]\nleases = 1\n", "jobs/a.ini", 2,
     "job \"a\" has no command", "add command = ... to [job a]", 0},
    {"typo in job key", NULL, "[job a]\ncommand = true\nleasess = 2\n", "jobs/a.ini", 3,
     "unknown key \"leasess\" in [job a]", "did you mean \"leases\"?", 0},
    {"worker key in job", NULL, "[job a]\ncommand = true\nsafety_margin = 1s\n", "jobs/a.ini", 3,
     "unknown key \"safety_margin\" in [job a]", "it belongs in [safety], in the worker file", 0},
    {"duplicate key in job", NULL, "[job a]\ncommand = true\nleases = 1\nleases = 2\n",
     "jobs/a.ini", 4, "duplicate key \"leases\" in [job a] (first set at line 3)",
     "only env may repeat", 0},
    {"leases zero", NULL, "[job a]\ncommand = true\nleases = 0\n", "jobs/a.ini", 3,
     "leases = 0 is too small: it must be at least 1", "1 is a mutex", 0},
    {"leases not a number", NULL, "[job a]\ncommand = true\nleases = two\n", "jobs/a.ini", 3,
     "bad integer \"two\" for leases", "write a whole number", 0},
    {"leases too large", NULL, "[job a]\ncommand = true\nleases = 99999999999\n", "jobs/a.ini", 3,
     "leases = \"99999999999\" is too large", "the most is 10000", 0},
    {"lock with slash", NULL, "[job a]\ncommand = true\nlock = x/y\n", "jobs/a.ini", 3,
     "bad lock \"x/y\" contains '/'", "use lock_path for a full path", 0},
    {"relative lock_path", NULL, "[job a]\ncommand = true\nlock_path = locks/a\n", "jobs/a.ini", 3,
     "bad lock_path \"locks/a\" is not absolute", "start it with '/'", 0},
    {"lock_path under /zookeeper", NULL, "[job a]\ncommand = true\nlock_path = /zookeeper/a\n",
     "jobs/a.ini", 3, "bad lock_path", "reserves", 0},
    {"lock and lock_path", NULL, "[job a]\ncommand = true\nlock = l\nlock_path = /l\n",
     "jobs/a.ini", 4, "both lock (line 3) and lock_path are set", "keep one", 0},
    {"per_tick over leases", NULL,
     "[job a]\ncommand = true\nschedule = @every 1m\nleases = 2\nper_tick = 3\n", "jobs/a.ini", 5,
     "per_tick = 3 is more than leases = 2", "lower per_tick or raise leases", 0},
    {"per_tick on continuous", NULL, "[job a]\ncommand = true\nper_tick = 1\n", "jobs/a.ini", 3,
     "per_tick applies only to scheduled jobs", "remove it", 0},
    {"retries on continuous", NULL, "[job a]\ncommand = true\nretries = 2\n", "jobs/a.ini", 3,
     "retries applies only to scheduled jobs (cron or @every) and job \"a\" is @continuous",
     "max_failures and restart_backoff", 0},
    {"retry_backoff on continuous", NULL,
     "[job a]\ncommand = true\nschedule = @continuous\nretry_backoff = 5s\n", "jobs/a.ini", 4,
     "retry_backoff applies only to scheduled jobs", "remove it", 0},
    {"start_deadline on continuous", NULL, "[job a]\ncommand = true\nstart_deadline = 5s\n",
     "jobs/a.ini", 3, "start_deadline applies only to scheduled jobs", "remove it", 0},
    {"max_failures on a schedule", NULL,
     "[job a]\ncommand = true\nschedule = @every 10s\nmax_failures = 3\n", "jobs/a.ini", 4,
     "max_failures applies only to @continuous jobs", "retries and retry_backoff", 0},
    {"restart_backoff on a schedule", NULL,
     "[job a]\ncommand = true\nrestart_backoff = 3s\nschedule = @every 10s\n", "jobs/a.ini", 3,
     "restart_backoff applies only to @continuous jobs", "remove it", 0},
    {"zero start_deadline", NULL,
     "[job a]\ncommand = true\nschedule = @every 1m\nstart_deadline = 0s\n", "jobs/a.ini", 4,
     "start_deadline must be more than 0", "e.g. 1m", 0},
    {"max_failures zero", NULL, "[job a]\ncommand = true\nmax_failures = 0\n", "jobs/a.ini", 3,
     "max_failures = 0 is too small", "at least 1", 0},
    {"negative history", NULL, "[job a]\ncommand = true\nhistory = -1\n", "jobs/a.ini", 3,
     "history = -1 is too small", "at least 0", 0},
    {"shared lock, other leases", NULL,
     "[job a]\ncommand = true\nlock = l\n\n[job b]\ncommand = true\nlock = l\nleases = 2\n",
     "jobs/a.ini", 8, "job \"b\" shares lock \"l\" with job \"a\"",
     "jobs that share a lock must agree on leases", 0},
    {"shared lock_path, other leases", NULL,
     "[job a]\ncommand = true\nlock_path = /x/l\nleases = 3\n[job b]\ncommand = true\n"
     "lock_path = /x/l\n",
     "jobs/a.ini", 5, "shares lock_path \"/x/l\" with job \"a\"", "set the same number", 0},
    {"env without equals", NULL, "[job a]\ncommand = true\nenv = FOO\n", "jobs/a.ini", 3,
     "bad env \"FOO\"", "write env = KEY=VALUE", 0},
    {"env with bad name", NULL, "[job a]\ncommand = true\nenv = A=1\nenv = 1X=2\n", "jobs/a.ini", 4,
     "bad env name \"1X\"", "not starting with a digit", 0},
    {"env with reserved prefix", NULL, "[job a]\ncommand = true\nenv = LEASEKEEPER_JOB=x\n",
     "jobs/a.ini", 3, "env LEASEKEEPER_JOB uses the reserved prefix LEASEKEEPER_", "rename it", 0},
    {"env set twice", NULL, "[job a]\ncommand = true\nenv = A=1\nenv = A=2\n", "jobs/a.ini", 4,
     "env A is set twice", "keep one", 0},
    {"pass_env with bad name", NULL, "[job a]\ncommand = true\npass_env = A, 1X\n", "jobs/a.ini", 3,
     "bad pass_env name \"1X\"", "end it with '*' to pass every variable", 0},
    {"pass_env with a star inside", NULL, "[job a]\ncommand = true\npass_env = A*B\n", "jobs/a.ini",
     3, "bad pass_env name \"A*B\"", "e.g. pass_env = HTTP_PROXY LC_*", 0},
    {"pass_env of everything", NULL, "[job a]\ncommand = true\npass_env = HOME *\n", "jobs/a.ini",
     3, "pass_env = * would hand the worker's whole environment to the job",
     "name the variables the job needs", 0},
    {"pass_env with reserved prefix", NULL, "[job a]\ncommand = true\npass_env = LEASEKEEPER_X\n",
     "jobs/a.ini", 3, "pass_env LEASEKEEPER_X uses the reserved prefix LEASEKEEPER_", "remove it",
     0},
    {"catch_up unknown", NULL, "[job a]\ncommand = true\nschedule = @every 1m\ncatch_up = some\n",
     "jobs/a.ini", 4, "bad catch_up \"some\"", "write latest", 0},
    {"catch_up on a continuous job", NULL, "[job a]\ncommand = true\ncatch_up = all\n",
     "jobs/a.ini", 3, "catch_up applies only to scheduled jobs", "remove it", 0},
    {"catch_up_limit without all", NULL,
     "[job a]\ncommand = true\nschedule = @every 1m\ncatch_up_limit = 3\n", "jobs/a.ini", 4,
     "catch_up_limit applies only with catch_up = all", "set catch_up = all", 0},
    {"catch_up_limit too large", NULL,
     "[job a]\ncommand = true\nschedule = @every 1m\ncatch_up = all\ncatch_up_limit = 101\n",
     "jobs/a.ini", 5, "catch_up_limit", "100", 0},
    {"overlap unknown", NULL, "[job a]\ncommand = true\nschedule = @every 1m\noverlap = drop\n",
     "jobs/a.ini", 4, "bad overlap \"drop\"", "write queue", 0},
    {"overlap on a continuous job", NULL, "[job a]\ncommand = true\noverlap = skip\n", "jobs/a.ini",
     3, "overlap applies only to scheduled jobs", "remove it", 0},
    {"overlap with more leases", NULL,
     "[job a]\ncommand = true\nschedule = @every 1m\nleases = 2\noverlap = replace\n", "jobs/a.ini",
     5, "overlap = replace needs leases = 1", "set leases = 1", 0},
    {"after an unknown job", NULL, "[job a]\ncommand = true\nafter = zz\n", "jobs/a.ini", 3,
     "after names job \"zz\", which no job file defines", "fix the name", 0},
    {"after itself", NULL, "[job a]\ncommand = true\nafter = a:any\n", "jobs/a.ini", 3,
     "after names the job itself", "remove", 0},
    {"after a cycle", NULL,
     "[job a]\ncommand = true\nafter = b\n[job b]\ncommand = true\nafter = a:failed\n",
     "jobs/a.ini", 6, "after makes a cycle through job \"b\"", "remove one of the after links", 0},
    {"after a bad outcome", NULL,
     "[job a]\ncommand = true\nafter = b:done\n[job b]\ncommand = true\n", "jobs/a.ini", 3,
     "bad outcome \"done\"", "b:failed", 0},
    {"after with @continuous", NULL,
     "[job a]\ncommand = true\nschedule = @continuous\nafter = b\n[job b]\ncommand = true\n",
     "jobs/a.ini", 3, "never @continuous", "remove schedule", 0},
    {"after and a schedule with per_tick", NULL,
     "[job a]\ncommand = true\nschedule = @daily\nafter = b\nleases = 2\nper_tick = 2\n"
     "[job b]\ncommand = true\n",
     "jobs/a.ini", 6, "per_tick applies to scheduled ticks of a job without after",
     "remove per_tick", 0},
    {"after twice", NULL, "[job a]\ncommand = true\nafter = b, b:any\n[job b]\ncommand = true\n",
     "jobs/a.ini", 3, "after names job \"b\" twice", "keep one", 0},
    {"after with overlap", NULL,
     "[job a]\ncommand = true\nafter = b\noverlap = skip\n[job b]\ncommand = true\n", "jobs/a.ini",
     4, "overlap applies to scheduled ticks", "remove overlap", 0},
    {"schedule @after by hand", NULL, "[job a]\ncommand = true\nschedule = @after\n", "jobs/a.ini",
     3, "schedule @after is what after = JOB sets", "write after = JOB", 0},
    {"params with a bad name", NULL, "[job a]\ncommand = true\nparams = TARGET, dry_run\n",
     "jobs/a.ini", 3, "bad parameter name \"dry_run\"", "starting with a capital", 0},
    {"params twice", NULL, "[job a]\ncommand = true\nparams = A=1, B, A\n", "jobs/a.ini", 3,
     "params names A twice", "keep one", 0},
    {"params with an empty item", NULL, "[job a]\ncommand = true\nparams = A,, B\n", "jobs/a.ini",
     3, "params has an empty item", "separated by commas", 0},
    {"pass_env twice", NULL, "[job a]\ncommand = true\npass_env = A LC_* A\n", "jobs/a.ini", 3,
     "pass_env names A twice", "keep one", 0},
    {"pass_env empty", NULL, "[job a]\ncommand = true\npass_env =\n", "jobs/a.ini", 3,
     "pass_env in [job a] has no value", "give one", 0},
    {"worker pass_env with bad name", BASE "pass_env = TOKEN-ID\n", NULL, "worker.ini", 6,
     "bad pass_env name \"TOKEN-ID\"", "use letters, digits and '_'", 0},
    {"umask not octal", NULL, "[job a]\ncommand = true\numask = 099\n", "jobs/a.ini", 3,
     "bad umask \"099\"", "octal mode from 0 to 0777", 0},
    {"umask too large", NULL, "[job a]\ncommand = true\numask = 01000\n", "jobs/a.ini", 3,
     "bad umask \"01000\"", "e.g. umask = 022", 0},
    {"relative workdir", NULL, "[job a]\ncommand = true\nworkdir = srv\n", "jobs/a.ini", 3,
     "workdir \"srv\" is not absolute", "write a full path", 0},
    {"relative log_file", NULL, "[job a]\ncommand = true\nlog_file = a.log\n", "jobs/a.ini", 3,
     "log_file \"a.log\" is not absolute", "leave it out for", 0},
    {"unknown user", NULL, "[job a]\ncommand = true\nuser = lk_no_such_user\n", "jobs/a.ini", 3,
     "unknown user \"lk_no_such_user\"", "create the account or fix the name", 0},
    {"unknown group", NULL, "[job a]\ncommand = true\ngroup = lk_no_such_group\n", "jobs/a.ini", 3,
     "unknown group \"lk_no_such_group\"", "create the group or fix the name", 0},
    {"user root", BASE_NOROOT, "[job a]\ncommand = true\nuser = root\n", "jobs/a.ini", 3,
     "job \"a\" would run as root: set user = NAME in [job a]",
     "or set allow_root_jobs = true in [worker]", 0},
    {"no user as root", BASE_NOROOT, "[job a]\ncommand = true\n", "jobs/a.ini", 1,
     "would run as root (no user is set and the worker runs as root)",
     "set allow_root_jobs = true in [worker]", 1},
    {"bad shell boolean", NULL, "[job a]\ncommand = true\nshell = perhaps\n", "jobs/a.ini", 3,
     "bad boolean \"perhaps\" for shell", "yes/no, on/off, 1/0", 0},
    {"bad job on_shutdown", NULL, "[job a]\ncommand = true\non_shutdown = stop\n", "jobs/a.ini", 3,
     "bad on_shutdown \"stop\"", "wait (let running jobs finish first)", 0},
    {"unbalanced quote", NULL, "[job a]\nshell = false\ncommand = echo 'a b\n", "jobs/a.ini", 3,
     "unbalanced ' quote", "set shell = true", 0},
    {"bad schedule", NULL, "[job a]\ncommand = true\nschedule = 61 * * * *\n", "jobs/a.ini", 3,
     "schedule: minute field \"61\"", "0-59", 0},
    {"bad job timezone", NULL, "[job a]\ncommand = true\nschedule = @daily\ntimezone = Nowhere/X\n",
     "jobs/a.ini", 4, "timezone: ", "Nowhere/X", 0},
    {"bad timeout", NULL, "[job a]\ncommand = true\ntimeout = 5\n", "jobs/a.ini", 3,
     "timeout: duration \"5\" has no unit", "add one", 0},
    {"bad log_max", NULL, "[job a]\ncommand = true\nlog_max = 10X\n", "jobs/a.ini", 3,
     "log_max: bad size \"10X\"", "e.g. \"10M\"", 0},
    {"zero log_max", NULL, "[job a]\ncommand = true\nlog_max = 0\n", "jobs/a.ini", 3,
     "log_max must be more than 0", "e.g. log_max = 10M", 0},
    /* issue 11: limits */
    {"bad memory_max", NULL, "[job a]\ncommand = true\nmemory_max = lots\n", "jobs/a.ini", 3,
     "memory_max: bad size \"lots\"", "or max for no limit", 0},
    {"memory_max too small", NULL, "[job a]\ncommand = true\nmemory_max = 4K\n", "jobs/a.ini", 3,
     "memory_max = \"4K\" is too small", "e.g. memory_max = 512M", 0},
    {"memory_high not below memory_max", NULL,
     "[job a]\ncommand = true\nmemory_max = 1G\nmemory_high = 1G\n", "jobs/a.ini", 4,
     "memory_high (1G) is not below memory_max (1G)", "lower memory_high", 0},
    {"cpu_max without percent", NULL, "[job a]\ncommand = true\ncpu_max = 2\n", "jobs/a.ini", 3,
     "bad cpu_max \"2\"", "e.g. cpu_max = 50% (half a CPU)", 0},
    {"cpu_max zero", NULL, "[job a]\ncommand = true\ncpu_max = 0%\n", "jobs/a.ini", 3,
     "bad cpu_max \"0%\"", "from 1% to 100000%", 0},
    {"tasks_max zero", NULL, "[job a]\ncommand = true\ntasks_max = 0\n", "jobs/a.ini", 3,
     "bad tasks_max \"0\"", "e.g. tasks_max = 512", 0},
    {"io_weight too large", BASE "memory_max = 1G\nio_weight = 10001\n", NULL, "worker.ini", 7,
     "bad io_weight \"10001\"", "from 1 to 10000", 0},
    {"io_weight max", NULL, "[job a]\ncommand = true\nio_weight = max\n", "jobs/a.ini", 3,
     "bad io_weight \"max\"", "from 1 to 10000", 0},
    {"limit with cgroups off", BASE "cgroups = off\n", "[job a]\ncommand = true\ntasks_max = 64\n",
     "jobs/a.ini", 3, "tasks_max needs a cgroup per run, and [worker] cgroups = off",
     "set cgroups = auto", 0},
    {"job kill_grace beyond the deadline", NULL, "[job a]\ncommand = true\nkill_grace = 9s\n",
     "jobs/a.ini", 3,
     "kill_grace (9s) is too long for this session: at most 4s (session_timeout/2 - safety_margin)",
     "lower kill_grace or raise session_timeout", 0},
    /* issue 8: hostile input */
    {"cron item starting with a slash", NULL, "[job a]\ncommand = true\nschedule = /5 * * * *\n",
     "jobs/a.ini", 3, "schedule: minute field \"/5\": a step needs something to step through",
     "write e.g. \"*/5\"", 0},
    {"cron weekday starting with a slash", NULL, "[job a]\ncommand = true\nschedule = 0 0 * * /7\n",
     "jobs/a.ini", 3, "schedule: day-of-week field \"/7\"", "write e.g. \"*/5\"", 0},
    {"schedule that never fires", NULL, "[job a]\ncommand = true\nschedule = 0 0 30 2 *\n",
     "jobs/a.ini", 3, "schedule \"0 0 30 2 *\" can never fire", "fix the day or the month", 0},
    {"schedule on the 31st of short months", NULL,
     "[job a]\ncommand = true\nschedule = 0 0 31 4,6,9,11 *\n", "jobs/a.ini", 3,
     "schedule \"0 0 31 4,6,9,11 *\" can never fire", "test the date in the command", 0},
    {"job name not UTF-8", NULL, "[job caf\xe9]\ncommand = true\n", "jobs/a.ini", 1,
     "byte \\xe9 at column 9 is not UTF-8, in \"[job caf\\xe9]\"", "save the file as UTF-8", 0},
    {"node_id not UTF-8", "[zookeeper]\nhosts = a:1\n[worker]\nnode_id = caf\xe9\n", NULL,
     "worker.ini", 4, "byte \\xe9 at column 14 is not UTF-8", "save the file as UTF-8", 0},
    {"job name beyond U+FFFF", NULL, "[job rocket-\xf0\x9f\x9a\x80]\ncommand = true\n",
     "jobs/a.ini", 1,
     "bad job name \"rocket-\xf0\x9f\x9a\x80\" has character 8, U+1F680, which ZooKeeper "
     "refuses",
     "use letters, digits, '-', '_' and '.'", 0},
    {"node_id with a C1 control", "[zookeeper]\nhosts = a:1\n[worker]\nnode_id = a\xc2\x85\n", NULL,
     "worker.ini", 4, "bad node_id \"a\\u{0085}\" has character 2, U+0085", "use letters, digits",
     0},
    {"lock in the private use area", NULL, "[job a]\ncommand = true\nlock = x\xee\x80\x80\n",
     "jobs/a.ini", 3, "bad lock \"x\\u{E000}\" has character 2, U+E000, which ZooKeeper refuses",
     "use letters", 0},
    {"lock U+FFF0", NULL, "[job a]\ncommand = true\nlock = \xef\xbf\xb0\n", "jobs/a.ini", 3,
     "has character 1, U+FFF0", "use letters", 0},
    {"command not UTF-8", NULL, "[job a]\ncommand = echo \xff\n", "jobs/a.ini", 2,
     "byte \\xff at column 16 is not UTF-8", "save the file as UTF-8", 0},
    {"env value not UTF-8", NULL, "[job a]\ncommand = true\nenv = A=\xc3\n", "jobs/a.ini", 3,
     "byte \\xc3 at column 9 is not UTF-8", "save the file as UTF-8", 0},
    {"overlong UTF-8", NULL, "[job a]\ncommand = echo \xc0\xaf\n", "jobs/a.ini", 2,
     "byte \\xc0 at column 16 is not UTF-8", "save the file as UTF-8", 0},
    {"escape byte in a value", NULL, "[job a]\ncommand = echo \x1b[2J\n", "jobs/a.ini", 2,
     "control character \\x1b at column 16 in \"command = echo \\x1b[2J\"", "remove it", 0},
    {"carriage return inside a value", NULL, "[job a]\ncommand = echo a\rb\n", "jobs/a.ini", 2,
     "control character \\x0d at column 17", "remove it", 0},
    {"DEL in a key line", NULL, "[job a]\ncommand = true\x7f\n", "jobs/a.ini", 2,
     "control character \\x7f at column 15", "remove it", 0},
    {"leases over the limit", NULL, "[job a]\ncommand = true\nleases = 10001\n", "jobs/a.ini", 3,
     "leases = \"10001\" is too large: the most is 10000, the same limit as in set-leases",
     "lower it", 0},
    {"leases of a million", NULL, "[job a]\ncommand = true\nleases = 1000001\n", "jobs/a.ini", 3,
     "leases = \"1000001\" is too large: the most is 10000", "lower it", 0},
    {"zero restart_backoff", NULL, "[job a]\ncommand = true\nrestart_backoff = 0s\n", "jobs/a.ini",
     3, "restart_backoff = 0s is too short", "write at least restart_backoff = 1s", 0},
    {"short restart_backoff", NULL, "[job a]\ncommand = true\nrestart_backoff = 999ms\n",
     "jobs/a.ini", 3, "restart_backoff = 999ms is too short", "at least restart_backoff = 1s", 0},
    {"zero retry_backoff", NULL,
     "[job a]\ncommand = true\nschedule = @every 1m\nretries = 3\nretry_backoff = 0s\n",
     "jobs/a.ini", 5, "retry_backoff = 0s is too short", "write at least retry_backoff = 1s", 0},
    {"empty program without a shell", NULL, "[job a]\nshell = false\ncommand = ''\n", "jobs/a.ini",
     3, "the program to run is an empty word", "name the program", 0},
    {"empty program before arguments", NULL, "[job a]\nshell = false\ncommand = \"\" -x\n",
     "jobs/a.ini", 3, "the program to run is an empty word", "name the program", 0},
    {"hosts port zero", "[zookeeper]\nhosts = a:2181,b:0\n", NULL, "worker.ini", 2,
     "bad hosts \"a:2181,b:0\": \"b:0\" is a port outside 1-65535", "with ports 1-65535", 0},
    {"hosts port 65536", "[zookeeper]\nhosts = a:65536\n", NULL, "worker.ini", 2,
     "\"a:65536\" is a port outside 1-65535", "write HOST:PORT", 0},
    {"hosts chroot before the last host", "[zookeeper]\nhosts = ZK/chr,127.0.0.1:2\n", NULL,
     "worker.ini", 2, "a '/' comes before the last host", "write the chroot once, after the last",
     0},
    {"hosts empty element", "[zookeeper]\nhosts = a:1,,b:2\n", NULL, "worker.ini", 2,
     "\"\" is an empty host", "write HOST:PORT", 0},
    {"hosts bad IPv4", "[zookeeper]\nhosts = 1.2.3.4.5:2181\n", NULL, "worker.ini", 2,
     "\"1.2.3.4.5:2181\" is a host that is not a host name", "write HOST:PORT", 0},
    {"hosts bad IPv6", "[zookeeper]\nhosts = [::g]:2181\n", NULL, "worker.ini", 2,
     "is a host that is not a host name, an IPv4 address or an [IPv6] address", "e.g.", 0},
    {"hosts bad character", "[zookeeper]\nhosts = zk_1!:2181\n", NULL, "worker.ini", 2,
     "\"zk_1!:2181\" is a host that is not", "write HOST:PORT", 0},
    {"hosts port not a number", "[zookeeper]\nhosts = a:21x\n", NULL, "worker.ini", 2,
     "is a port that is not a number", "write HOST:PORT", 0},
    {"listen bad IPv4", BASE "[http]\nlisten = 1.2.3.4.5:80\n", NULL, "worker.ini", 7,
     "bad listen \"1.2.3.4.5:80\"", "write HOST:PORT", 0},
    {"listen port zero", BASE "[http]\nlisten = 127.0.0.1:0\n", NULL, "worker.ini", 7,
     "bad listen \"127.0.0.1:0\"", "write HOST:PORT", 0},
    {"listen IPv6 without brackets", BASE "[http]\nlisten = ::1:80\n", NULL, "worker.ini", 7,
     "bad listen \"::1:80\"", "write HOST:PORT", 0},
    {"no jobs at all", BASE "jobs = none.d/*.ini\n", NULL, "worker.ini", 6,
     "no jobs: jobs = \"none.d/*.ini\" found 0 job files", "set allow_no_jobs = true", 0},
    {"labels without =", BASE "labels = zone\n", NULL, "worker.ini", 6,
     "labels: term \"zone\" has no '='", "write KEY=VALUE terms separated by commas", 0},
    {"labels key twice", BASE "labels = zone=a, zone=b\n", NULL, "worker.ini", 6,
     "labels: zone is set twice", "keep one", 0},
    {"labels bad character", BASE "labels = zone=a b\n", NULL, "worker.ini", 6,
     "labels: the value of \"zone=a b\" has a character other than", "at most 63", 0},
    {"labels empty term", BASE "labels = zone=a,,role=b\n", NULL, "worker.ini", 6, "an empty term",
     "e.g. labels = zone=a, role=batch", 0},
    {"labels negated", BASE "labels = zone!=a\n", NULL, "worker.ini", 6,
     "labels: the key of \"zone!=a\" has a character other than", "letters, digits", 0},
    {"constraint contradiction", NULL, "[job a]\ncommand = true\nconstraint = zone=a, zone=b\n",
     "jobs/a.ini", 3, "constraint: zone=a and zone=b can never both hold", "keep one", 0},
    {"constraint required and refused", NULL,
     "[job a]\ncommand = true\nconstraint = zone=a, zone!=a\n", "jobs/a.ini", 3,
     "constraint: zone=a is both required and refused", "keep one", 0},
    {"constraint empty value", NULL, "[job a]\ncommand = true\nconstraint = zone=\n", "jobs/a.ini",
     3, "constraint: the value of \"zone=\" is empty", "use letters", 0},
    {"jitter on continuous", NULL, "[job a]\ncommand = true\njitter = 5s\n", "jobs/a.ini", 3,
     "jitter spreads the ticks of scheduled jobs", "remove jitter", 0},
    {"jitter beyond the interval", NULL,
     "[job a]\ncommand = true\nschedule = @every 10s\njitter = 11s\n", "jobs/a.ini", 4,
     "jitter 11s is longer than the interval of @every 10s", "write at most the interval", 0},
    {"jitter not whole seconds", NULL,
     "[job a]\ncommand = true\nschedule = @every 10s\njitter = 1500ms\n", "jobs/a.ini", 4,
     "jitter 1500ms: ticks fall on whole seconds", "write e.g. 2s", 0},
    {"H malformed", NULL, "[job a]\ncommand = true\nschedule = H(5) * * * *\n", "jobs/a.ini", 3,
     "H takes a range in parentheses", "\"H(0-29)\"", 0},
    /* lock_mode and locks (config-lock.c) */
    {"bad lock_mode", NULL, "[job a]\ncommand = true\nlock_mode = shared\n", "jobs/a.ini", 3,
     "lock_mode = \"shared\"", "write read (runs beside other readers) or write", 0},
    {"lock_mode with leases", NULL, "[job a]\ncommand = true\nleases = 2\nlock_mode = read\n",
     "jobs/a.ini", 4, "lock_mode needs leases = 1", "remove leases = 2 or lock_mode", 0},
    {"locks with lock", NULL, "[job a]\ncommand = true\nlock = x\nlocks = a, b\n", "jobs/a.ini", 3,
     "both lock and locks (line 4) are set", "keep locks and write this lock in it", 0},
    {"locks with a bad mode", NULL, "[job a]\ncommand = true\nlocks = a, b:writer\n", "jobs/a.ini",
     3, "locks: \"b:writer\": after ':' write read, write or a number", "e.g. \"db:read\"", 0},
    {"locks with a bad count", NULL, "[job a]\ncommand = true\nlocks = a:0\n", "jobs/a.ini", 3,
     "locks: \"a:0\": the count after ':' must be a number from 1 to", "leases of a semaphore", 0},
    {"locks with an empty item", NULL, "[job a]\ncommand = true\nlocks = a,,b\n", "jobs/a.ini", 3,
     "locks: an empty item", "separated by commas", 0},
    {"locks twice", NULL, "[job a]\ncommand = true\nlocks = a, b, a:read\n", "jobs/a.ini", 3,
     "locks: \"a\" is listed twice", "list each lock once", 0},
    {"locks with a bad path", NULL, "[job a]\ncommand = true\nlocks = /x//y\n", "jobs/a.ini", 3,
     "locks: bad lock \"/x//y\" has an empty element", "remove the extra slash", 0},
    {"locks with a bad name", NULL, "[job a]\ncommand = true\nlocks = a, ..\n", "jobs/a.ini", 3,
     "locks: bad lock \"..\" is not allowed", "pick another name", 0},
    {"mutex and read-write lock of one name", NULL,
     "[job a]\ncommand = true\nlock = db\n\n[job b]\ncommand = true\nlock = db\nlock_mode = "
     "read\n",
     "jobs/a.ini", 8, "job \"b\" uses \"db\" as a read-write lock (read) but job \"a\"",
     "uses \"db\" as a mutex: every job must use a lock as the same kind", 0},
    {"semaphore sizes in locks", NULL,
     "[job a]\ncommand = true\nlocks = /p/q:3\n\n[job b]\ncommand = true\nlocks = x, "
     "/p/q:2\n",
     "jobs/a.ini", 7, "job \"b\" uses \"/p/q\" as a semaphore of 2 leases",
     "make them agree or give one its own lock", 0},
    {"path as mutex and read-write lock", NULL,
     "[job a]\ncommand = true\nlock_path = /p/q\nlock_mode = write\n\n[job b]\ncommand = "
     "true\nlocks = /p/q\n",
     "jobs/a.ini", 8, "job \"b\" uses \"/p/q\" as a mutex but job \"a\"",
     "as a read-write lock (write)", 0},
    {"duplicate job in one file", NULL, "[job a]\ncommand = true\n[job a]\ncommand = false\n",
     "jobs/a.ini", 3, "duplicate job \"a\" (first defined at ", "rename one of them", 0},
};

/* lock_mode and locks resolve to the right paths and kinds, in the order written. */
static void
test_locks(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	struct config_job *j;
	char *out;
	size_t len;
	FILE *f;

	(void)state;
	put("worker.ini", BASE);
	put("jobs/a.ini", "[job r]\ncommand = true\nlock = db\nlock_mode = read\n"
	                  "[job w]\ncommand = true\nlock = db\nlock_mode = write\n"
	                  "[job m]\ncommand = true\nlocks = db:read, cache, /x/y:write, pool:3, "
	                  "one:1, /p:a:2\n"
	                  "[job plain]\ncommand = true\n");
	if (load("worker.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	j = config_find_job(cfg, "r");
	assert_int_equal(j->nlocks, 1);
	assert_int_equal(j->locks[0].kind, CONFIG_LOCK_READ);
	assert_string_equal(j->lock_znode, "/leasekeeper/rwlock/db");
	assert_string_equal(j->locks[0].znode, "/leasekeeper/rwlock/db");
	j = config_find_job(cfg, "w");
	assert_int_equal(j->locks[0].kind, CONFIG_LOCK_WRITE);
	assert_string_equal(j->locks[0].znode, "/leasekeeper/rwlock/db");
	j = config_find_job(cfg, "m");
	assert_int_equal(j->nlocks, 6);
	assert_string_equal(j->lock_znode, "/leasekeeper/rwlock/db");
	assert_int_equal(j->leases, 1);
	assert_string_equal(j->locks[1].znode, "/leasekeeper/mutex/cache");
	assert_int_equal(j->locks[1].kind, CONFIG_LOCK_MUTEX);
	assert_string_equal(j->locks[2].znode, "/x/y");
	assert_null(j->locks[2].name);
	assert_int_equal(j->locks[2].kind, CONFIG_LOCK_WRITE);
	assert_string_equal(j->locks[3].znode, "/leasekeeper/semaphore/pool");
	assert_int_equal(j->locks[3].kind, CONFIG_LOCK_SEMAPHORE);
	assert_int_equal(j->locks[3].leases, 3);
	assert_int_equal(j->locks[4].kind, CONFIG_LOCK_MUTEX);
	assert_string_equal(j->locks[5].znode, "/p:a"); /* ':' inside a path, then the count */
	assert_int_equal(j->locks[5].leases, 2);
	j = config_find_job(cfg, "plain");
	assert_int_equal(j->nlocks, 1);
	assert_false(j->has_locks);
	assert_int_equal(j->locks[0].kind, CONFIG_LOCK_MUTEX);
	assert_string_equal(j->locks[0].znode, "/leasekeeper/mutex/plain");
	/* check prints every lock with its kind */
	assert_non_null(f = open_memstream(&out, &len));
	config_print(cfg, f);
	fclose(f);
	assert_non_null(strstr(out, "  locks            /leasekeeper/rwlock/db (read)\n"
	                            "                   /leasekeeper/mutex/cache (mutex)\n"));
	assert_non_null(strstr(out, "/leasekeeper/semaphore/pool (semaphore of 3)\n"));
	assert_non_null(strstr(out, "locks (below), all held for each run or none\n"));
	assert_non_null(strstr(out, "1: the read side of a read-write lock, runs beside other "
	                            "readers, never beside a writer\n"));
	assert_non_null(strstr(out, "1: the write side of a read-write lock, at most one host runs "
	                            "it, and no reader beside it\n"));
	free(out);
	config_free(cfg);
	config_errors_free(&errors);
}

/* after with a cron or @every schedule: accepted, with the ticks' overlap and catch_up. */
static void
test_after_with_schedule(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	struct config_job *j;
	char *out;
	size_t len;
	FILE *f;

	(void)state;
	put("worker.ini", BASE);
	put("jobs/a.ini", "[job p]\ncommand = true\nschedule = @every 1m\n"
	                  "[job c]\ncommand = true\nschedule = @every 3s\nafter = p\n"
	                  "overlap = skip\ncatch_up = none\n"
	                  "[job d]\ncommand = true\nafter = p\n");
	if (load("worker.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	assert_int_equal(errors.n, 0);
	j = config_find_job(cfg, "c");
	assert_int_equal(schedule_kind(j->sched), SCHEDULE_EVERY);
	assert_non_null(j->after);
	assert_string_equal(j->after[0], "p");
	assert_int_equal(j->overlap, CONFIG_OVERLAP_SKIP);
	j = config_find_job(cfg, "d");
	assert_int_equal(schedule_kind(j->sched), SCHEDULE_AFTER);
	/* check shows the ticks' policies of c only */
	assert_non_null(f = open_memstream(&out, &len));
	config_print(cfg, f);
	fclose(f);
	assert_non_null(strstr(out, "  overlap          skip (of ticks; a parent run's waits)\n"));
	assert_non_null(strstr(out, "  catch_up         none\n"));
	free(out);
	config_free(cfg);
	config_errors_free(&errors);
}

/* Each broken configuration fails with exactly one error, at the right file and line. */
static void
test_bad_configs(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	const struct bad_case *c;
	size_t i, ran = 0;
	int rc, found;

	(void)state;
	for (i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		c = &bad_cases[i];
		if (c->root_only && geteuid() != 0)
			continue;
		assert_int_equal(teardown(NULL), 0);
		assert_int_equal(setup(NULL), 0);
		put("worker.ini", c->worker != NULL ? c->worker : BASE);
		if (c->job != NULL)
			put("jobs/a.ini", c->job);
		else /* a worker needs a job (or allow_no_jobs) */
			put("jobs/z.ini", geteuid() == 0
			                      ? "[job z]\ncommand = true\nuser = nobody\n"
			                      : "[job z]\ncommand = true\n");
		rc = load("worker.ini", &cfg, &errors);
		if (getenv("LK_TEST_VERBOSE") != NULL)
			dump(&errors);
		assert_non_null(c->fix);
		found = has_error(&errors, c->file, c->line, c->what, c->fix, (const char *)NULL);
		if (rc != -1 || !found || errors.n != 1) {
			fprintf(stderr,
			        "case \"%s\": rc %d, %zu errors, wanted one at %s:%d with \"%s\" "
			        "and \"%s\"\n",
			        c->name, rc, errors.n, c->file, c->line, c->what,
			        c->fix != NULL ? c->fix : "");
			dump(&errors);
		}
		assert_int_equal(rc, -1);
		assert_null(cfg);
		assert_true(found);
		assert_int_equal(errors.n, 1);
		config_errors_free(&errors);
		assert_int_equal(errors.n, 0);
		ran++;
	}
	assert_true(ran >= 35);
}

/* Labels and constraints: every term must hold; KEY!=VALUE holds without the label. */
static void
test_constraint_match(void **state)
{
	static const struct {
		const char *constraint;
		int match;
		const char *why;
		int unlabelled; /* whether a worker without labels matches */
	} cases[] = {
	    {"zone=a", 1, "", 0},
	    {"zone=a, role=batch", 1, "", 0},
	    {"role=batch,zone=a", 1, "", 0},
	    {"zone=b", 0, "zone=b", 0},
	    {"zone=a, role=web", 0, "role=web", 0},
	    {"zone!=b", 1, "", 1},
	    {"zone!=a", 0, "zone!=a", 1},
	    {"gpu!=yes", 1, "", 1},
	    {"gpu=yes", 0, "gpu=yes", 0},
	    {"zone!=b, zone!=c, role=batch", 1, "", 0},
	    {"zone=ab", 0, "zone=ab", 0},
	    {"zon=a", 0, "zon=a", 0},
	};
	struct config *cfg;
	struct config_errors errors;
	char text[512], why[CONFIG_TERM_MAX];
	size_t i;

	(void)state;
	put("worker.ini", BASE "labels = zone=a,  role = batch , rack=r-1.2\n");
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "[job a]\ncommand = true\nconstraint = %s\n",
		         cases[i].constraint);
		put("jobs/a.ini", text);
		if (load("worker.ini", &cfg, &errors) != 0) {
			dump(&errors);
			fail_msg("constraint = %s refused", cases[i].constraint);
		}
		assert_string_equal(cfg->labels[0], "rack=r-1.2");
		assert_string_equal(cfg->labels[1], "role=batch");
		assert_string_equal(cfg->labels[2], "zone=a");
		assert_null(cfg->labels[3]);
		why[0] = '\0';
		assert_int_equal(
		    config_job_matches(cfg->jobs_list[0], cfg->labels, why, sizeof why),
		    cases[i].match);
		assert_string_equal(why, cases[i].why);
		/* a worker without labels runs only jobs whose terms are all != */
		assert_int_equal(config_job_matches(cfg->jobs_list[0], NULL, NULL, 0),
		                 cases[i].unlabelled);
		config_free(cfg);
		config_errors_free(&errors);
	}
}

/* A file with several problems reports every one of them, in line order. */
static void
test_all_problems_reported(void **state)
{
	static const struct {
		const char *file;
		int line;
		const char *what;
	} order[] = {
	    {"worker.ini", 3, "did you mean \"session_timeout\"?"},
	    {"worker.ini", 6, "bad on_shutdown \"later\""},
	    {"worker.ini", 7, "did you mean [zookeeper]?"},
	    {"worker.ini", 10, "kill_grace: duration \"2\" has no unit"},
	    {"worker.ini", 11, "job \"one\" has no command"},
	    {"worker.ini", 12, "leases = 0 is too small"},
	    {"worker.ini", 13, "reserved prefix"},
	    {"worker.ini", 14, "expected KEY = VALUE"},
	    {"worker.ini", 17, "workdir \"relative\" is not absolute"},
	    {"worker.ini", 18, "max_failures = 0 is too small"},
	    /* the duplicate names the first definition, and is checked all the same */
	    {"jobs/x.ini", 1, "duplicate job \"one\" (first defined at "},
	    {"jobs/x.ini", 3, "bad umask \"8\""},
	};
	struct config *cfg;
	struct config_errors errors;
	size_t i;
	char prefix[PATH_MAX + 64];

	(void)state;
	put("worker.ini", "[zookeeper]\n"            /* 1 */
	                  "hosts = 127.0.0.1:2181\n" /* 2 */
	                  "sesion_timeout = 10s\n"   /* 3 */
	                  "[worker]\n"               /* 4 */
	                  "allow_root_jobs = true\n" /* 5 */
	                  "on_shutdown = later\n"    /* 6 */
	                  "[zookeper]\n"             /* 7 */
	                  "hosts = ignored:1\n"      /* 8 */
	                  "[safety]\n"               /* 9 */
	                  "kill_grace = 2\n"         /* 10 */
	                  "[job one]\n"              /* 11 */
	                  "leases = 0\n"             /* 12 */
	                  "env = LEASEKEEPER_X=1\n"  /* 13 */
	                  "this line is wrong\n"     /* 14 */
	                  "[job two]\n"              /* 15 */
	                  "command = true\n"         /* 16 */
	                  "workdir = relative\n"     /* 17 */
	                  "max_failures = 0\n");     /* 18 */
	put("jobs/x.ini", "[job one]\ncommand = true\numask = 8\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_null(cfg);
	if (errors.n != 12)
		dump(&errors);
	assert_int_equal(errors.n, 12);
	for (i = 0; i < errors.n; i++) {
		snprintf(prefix, sizeof prefix, "%s/%s:%d: ", tdir, order[i].file, order[i].line);
		assert_int_equal(strncmp(errors.lines[i], prefix, strlen(prefix)), 0);
		assert_non_null(strstr(errors.lines[i], order[i].what));
	}
	config_errors_free(&errors);
}

/* A minimal worker and job resolve every default. */
static void
test_defaults(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	struct config_job *job;
	char host[256];

	(void)state;
	put("worker.ini", "[zookeeper]\nhosts = zk1:2181,zk2:2181/chroot\n[http]\nlisten =\n");
	put("jobs/a.ini", "# a job\n\n[job plain]\ncommand = echo hi\nuser = nobody\n");
	if (load("worker.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	assert_int_equal(errors.n, 0);

	assert_string_equal(cfg->hosts, "zk1:2181,zk2:2181/chroot");
	assert_string_equal(cfg->root, "/leasekeeper");
	assert_int_equal(cfg->session_timeout_ms, 10000);
	assert_null(cfg->auth);
	assert_int_equal(gethostname(host, sizeof host), 0);
	assert_string_equal(cfg->node_id, host);
	assert_string_equal(cfg->jobs, "jobs/*.ini");
	assert_string_equal(cfg->state_dir, "/var/lib/leasekeeper");
	assert_string_equal(cfg->dir, tdir);
	assert_int_equal(cfg->allow_root_jobs, 0);
	assert_int_equal(cfg->on_shutdown, CONFIG_SHUTDOWN_TERMINATE);
	assert_null(cfg->timezone);
	assert_int_equal(cfg->safety_margin_ms, 1000);
	assert_int_equal(cfg->kill_grace_ms, 2000);
	assert_int_equal(cfg->unhealthy_after, 3);
	assert_int_equal(cfg->unhealthy_probe_ms, 30000);
	assert_null(cfg->http_listen);
	assert_int_equal(cfg->njob_files, 1);
	assert_string_equal(cfg->job_files[0], at("jobs/a.ini"));

	assert_int_equal(cfg->njobs, 1);
	job = cfg->jobs_list[0];
	assert_ptr_equal(config_find_job(cfg, "plain"), job);
	assert_null(config_find_job(cfg, "other"));
	assert_string_equal(job->name, "plain");
	assert_string_equal(job->file, at("jobs/a.ini"));
	assert_int_equal(job->line, 3);
	assert_string_equal(job->command, "echo hi");
	assert_int_equal(job->shell, 1);
	assert_string_equal(job->argv[0], "/bin/sh");
	assert_string_equal(job->argv[1], "-c");
	assert_string_equal(job->argv[2], "echo hi");
	assert_null(job->argv[3]);
	assert_string_equal(job->schedule, "@continuous");
	assert_non_null(job->sched);
	assert_int_equal(schedule_kind(job->sched), SCHEDULE_CONTINUOUS);
	assert_null(job->timezone);
	assert_null(job->zone);
	assert_int_equal(job->leases, 1);
	assert_string_equal(job->lock, "plain");
	assert_null(job->lock_path);
	assert_string_equal(job->lock_znode, "/leasekeeper/mutex/plain");
	assert_int_equal(job->per_tick, 1);
	assert_int_equal(job->start_deadline_ms, 60000);
	assert_int_equal(job->timeout_ms, 0);
	assert_int_equal(job->retries, 0);
	assert_int_equal(job->retry_backoff_ms, 10000);
	assert_int_equal(job->max_failures, 5);
	assert_int_equal(job->restart_backoff_ms, 1000);
	assert_int_equal(job->kill_grace_ms, 2000);
	assert_string_equal(job->user, "nobody");
	assert_int_equal(job->uid, 65534);
	assert_null(job->group);
	assert_int_equal(job->umask, -1);
	assert_null(job->workdir);
	assert_non_null(job->env);
	assert_null(job->env[0]);
	assert_int_equal(job->nenv, 0);
	assert_non_null(job->pass_env);
	assert_null(job->pass_env[0]);
	assert_string_equal(job->log_file, "/var/lib/leasekeeper/jobs/plain.log");
	assert_int_equal(job->log_max_bytes, 10 * 1024 * 1024);
	assert_int_equal(job->history, 20);
	assert_int_equal(job->on_shutdown, CONFIG_SHUTDOWN_TERMINATE);
	assert_int_equal(job->limits.memory_max, 0); /* no limits unless set */
	assert_int_equal(job->limits.cpu_max, 0);
	assert_int_equal(job->limits.tasks_max, 0);
	config_free(cfg);
	config_errors_free(&errors);
}

/* Limits: [worker]'s are every job's defaults; a job sets its own, or lifts one with max. */
static void
test_limits(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	const struct config_job *a, *b;
	char *out = NULL, v[32];
	size_t len = 0;
	FILE *f;

	(void)state;
	put("worker.ini", BASE "memory_max = 1G\nmemory_high = 768M\ncpu_max = 150%\n"
	                       "tasks_max = 256\nio_weight = 50\n");
	put("jobs/a.ini", "[job a]\ncommand = true\n"
	                  "[job b]\ncommand = true\nmemory_max = max\nmemory_high = 64M\n"
	                  "cpu_max = 25%\ntasks_max = max\n");
	if (load("worker.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	assert_int_equal(cfg->limits.memory_max, 1024ULL * 1024 * 1024);
	a = config_find_job(cfg, "a");
	b = config_find_job(cfg, "b");
	assert_int_equal(a->limits.memory_max, 1024ULL * 1024 * 1024);
	assert_int_equal(a->limits.memory_high, 768ULL * 1024 * 1024);
	assert_int_equal(a->limits.cpu_max, 150);
	assert_int_equal(a->limits.tasks_max, 256);
	assert_int_equal(a->limits.io_weight, 50);
	assert_int_equal(b->limits.memory_max, 0);
	assert_int_equal(b->limits.memory_high, 64ULL * 1024 * 1024);
	assert_int_equal(b->limits.cpu_max, 25);
	assert_int_equal(b->limits.tasks_max, 0);
	assert_int_equal(b->limits.io_weight, 50);
	assert_false(config_job_equal(a, b));
	assert_string_equal(config_limit_format(0, a->limits.memory_max, v, sizeof v), "1G");
	assert_string_equal(config_limit_format(2, 150, v, sizeof v), "150%");
	assert_string_equal(config_limit_format(3, 0, v, sizeof v), "max");
	assert_non_null(f = open_memstream(&out, &len));
	config_print(cfg, f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "  limits           memory_max 1G, memory_high 768M, cpu_max "
	                            "150%, tasks_max 256, io_weight 50\n"));
	assert_non_null(
	    strstr(out, "  limits           memory_high 64M, cpu_max 25%, io_weight 50\n"));
	free(out);
	config_free(cfg);
	config_errors_free(&errors);
}

/* Every key set: each value lands in its field, and worker settings flow into jobs. */
static void
test_every_key(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	struct config_job *job;

	(void)state;
	put("conf/worker.ini", "\xef\xbb\xbf; a worker\r\n"
	                       "[zookeeper]\r\n"
	                       "  hosts = a:1\n"
	                       "  root = /lk/test\n"
	                       "  session_timeout = 20s\n"
	                       "  auth = user:pa;ss\n"
	                       "[worker]\n"
	                       "node_id = alpha.example\n"
	                       "jobs = ../jobs\n"
	                       "state_dir = ./state/\n"
	                       "allow_root_jobs = Yes\n"
	                       "on_shutdown = wait\n"
	                       "timezone = Europe/Paris\n"
	                       "pass_env = HTTP_PROXY, LC_*\n"
	                       "[safety]\n"
	                       "safety_margin = 1500ms\n"
	                       "kill_grace = 3s\n"
	                       "[http]\n"
	                       "listen = [::1]:9187\n");
	put("jobs/all.ini", "[job all]\n"
	                    "command = /usr/bin/printf \"%s\\n\" 'a b' c\\ d\n"
	                    "shell = off\n"
	                    "schedule = 0 3 * * *\n"
	                    "timezone = UTC\n"
	                    "leases = 3\n"
	                    "lock = shared\n"
	                    "per_tick = 2\n"
	                    "start_deadline = 2m\n"
	                    "timeout = 1h30m\n"
	                    "retries = 4\n"
	                    "retry_backoff = 30s\n"
	                    "kill_grace = 5s\n"
	                    "user = nobody\n"
	                    "group = nogroup\n"
	                    "umask = 027\n"
	                    "workdir = /tmp\n"
	                    "env = A=1\n"
	                    "env = B=x=y ; not a comment\n"
	                    "pass_env = FOO  BAR_*\n"
	                    "log_file = /var/lib/lk-test/all.log\n"
	                    "log_max = 512K\n"
	                    "history = 0\n"
	                    "on_shutdown = terminate\n"
	                    "[job inherit]\n"
	                    "command = echo a ; echo b # both run\n"
	                    "schedule = @every 30s\n"
	                    "timeout = none\n"
	                    "lock_path = /elsewhere/lock\n"
	                    "[job sem]\n"
	                    "command = true\n"
	                    "leases = 3\n"
	                    "lock = shared\n"
	                    "max_failures = 1\n"
	                    "restart_backoff = 2500ms\n"
	                    "pass_env = none\n"
	                    "params = TARGET , DRY_RUN = false,EMPTY=\n");
	if (load("conf/worker.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	assert_string_equal(cfg->hosts, "a:1");
	assert_string_equal(cfg->root, "/lk/test");
	assert_int_equal(cfg->session_timeout_ms, 20000);
	assert_string_equal(cfg->auth, "user:pa;ss");
	assert_string_equal(cfg->node_id, "alpha.example");
	assert_string_equal(cfg->jobs, "../jobs");
	assert_string_equal(cfg->state_dir, at("conf/state"));
	assert_int_equal(cfg->allow_root_jobs, 1);
	assert_int_equal(cfg->on_shutdown, CONFIG_SHUTDOWN_WAIT);
	assert_string_equal(cfg->timezone, "Europe/Paris");
	assert_string_equal(cfg->pass_env[0], "HTTP_PROXY");
	assert_string_equal(cfg->pass_env[1], "LC_*");
	assert_null(cfg->pass_env[2]);
	assert_int_equal(cfg->safety_margin_ms, 1500);
	assert_int_equal(cfg->kill_grace_ms, 3000);
	assert_string_equal(cfg->http_listen, "[::1]:9187");
	assert_int_equal(cfg->njob_files, 1);
	assert_string_equal(cfg->job_files[0], at("jobs/all.ini")); /* conf/.. folded */
	assert_int_equal(cfg->njobs, 3);

	job = config_find_job(cfg, "sem");
	assert_non_null(job->params);
	assert_string_equal(job->params[0], "TARGET");
	assert_string_equal(job->params[1], "DRY_RUN=false");
	assert_string_equal(job->params[2], "EMPTY=");
	assert_null(job->params[3]);
	assert_null(config_find_job(cfg, "all")->params);

	job = config_find_job(cfg, "all");
	assert_non_null(job);
	assert_int_equal(job->shell, 0);
	assert_string_equal(job->argv[0], "/usr/bin/printf");
	assert_string_equal(job->argv[1], "%s\\n");
	assert_string_equal(job->argv[2], "a b");
	assert_string_equal(job->argv[3], "c d");
	assert_null(job->argv[4]);
	assert_int_equal(schedule_kind(job->sched), SCHEDULE_CRON);
	assert_string_equal(job->timezone, "UTC");
	assert_string_equal(job->zone, "UTC");
	assert_int_equal(job->leases, 3);
	assert_string_equal(job->lock_znode, "/lk/test/semaphore/shared");
	assert_int_equal(job->per_tick, 2);
	assert_int_equal(job->start_deadline_ms, 120000);
	assert_int_equal(job->timeout_ms, 5400000);
	assert_int_equal(job->retries, 4);
	assert_int_equal(job->retry_backoff_ms, 30000);
	assert_int_equal(job->kill_grace_ms, 5000);
	assert_int_equal(job->uid, 65534);
	assert_string_equal(job->group, "nogroup");
	assert_int_equal(job->gid, 65534);
	assert_int_equal(job->umask, 027);
	assert_string_equal(job->workdir, "/tmp");
	assert_int_equal(job->nenv, 2);
	assert_string_equal(job->env[0], "A=1");
	assert_string_equal(job->env[1], "B=x=y ; not a comment");
	assert_null(job->env[2]);
	assert_string_equal(job->pass_env[0], "FOO");
	assert_string_equal(job->pass_env[1], "BAR_*");
	assert_null(job->pass_env[2]);
	assert_true(config_pass_env_match(job->pass_env, "FOO=1", 3));
	assert_false(config_pass_env_match(job->pass_env, "FOOD", 4));
	assert_false(config_pass_env_match(job->pass_env, "FO", 2));
	assert_true(config_pass_env_match(job->pass_env, "BAR_", 4));
	assert_true(config_pass_env_match(job->pass_env, "BAR_X", 5));
	assert_false(config_pass_env_match(job->pass_env, "BAR", 3));
	assert_string_equal(job->log_file, "/var/lib/lk-test/all.log");
	assert_int_equal(job->log_max_bytes, 512 * 1024);
	assert_int_equal(job->history, 0);
	assert_int_equal(job->on_shutdown, CONFIG_SHUTDOWN_TERMINATE);

	job = config_find_job(cfg, "inherit");
	assert_non_null(job);
	assert_string_equal(job->command, "echo a ; echo b # both run");
	assert_string_equal(job->argv[2], "echo a ; echo b # both run");
	assert_int_equal(schedule_kind(job->sched), SCHEDULE_EVERY);
	assert_null(job->timezone);
	assert_string_equal(job->zone, "Europe/Paris");
	assert_int_equal(job->timeout_ms, 0);
	assert_string_equal(job->lock_path, "/elsewhere/lock");
	assert_string_equal(job->lock_znode, "/elsewhere/lock");
	assert_int_equal(job->kill_grace_ms, 3000);
	assert_int_equal(job->on_shutdown, CONFIG_SHUTDOWN_WAIT);
	assert_string_equal(job->log_file, at("conf/state/jobs/inherit.log"));
	assert_string_equal(job->pass_env[0], "HTTP_PROXY"); /* the worker's default */
	assert_string_equal(job->pass_env[1], "LC_*");
	assert_null(job->pass_env[2]);

	job = config_find_job(cfg, "sem");
	assert_non_null(job);
	assert_int_equal(job->max_failures, 1);
	assert_int_equal(job->restart_backoff_ms, 2500);
	assert_null(job->pass_env[0]); /* none: not even the worker's default */
	config_free(cfg);
	config_errors_free(&errors);
}

/* A value is kept whole however long its line. */
static void
test_long_line(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	char *text, *cmd;
	size_t n = 5000;

	(void)state;
	cmd = malloc(n + 1);
	assert_non_null(cmd);
	memset(cmd, 'x', n);
	memcpy(cmd, "echo ", 5);
	cmd[n] = '\0';
	assert_true(asprintf(&text, BASE "[job long]\ncommand = %s\nleases = 2\n", cmd) > 0);
	put("worker.ini", text);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	assert_string_equal(cfg->jobs_list[0]->command, cmd);
	assert_int_equal(cfg->jobs_list[0]->leases, 2);
	config_free(cfg);
	config_errors_free(&errors);
	free(text);
	free(cmd);
}

/*
 * Load a job file of "[job a]", its head lines and then line (line 3); print the errors
 * when the result is not want.
 */
static int
load_job_line(const char *head, const char *line, int want, struct config **cfg,
              struct config_errors *errors)
{
	char text[512];
	int r;

	snprintf(text, sizeof text, "[job a]\n%s%s\n", head, line);
	put("worker.ini", BASE);
	put("jobs/a.ini", text);
	*cfg = NULL;
	if ((r = load("worker.ini", cfg, errors)) != want) {
		fprintf(stderr, "%s: load gave %d\n", line, r);
		dump(errors);
	}
	return r;
}

/* Sizes, as log_max reads them: bytes or K, M, G (powers of 1024). */
static void
test_sizes(void **state)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} good[] = {
	    {"0", 0},
	    {"512", 512},
	    {"512K", 512 * 1024},
	    {"1k", 1024},
	    {"10M", 10 * 1024 * 1024},
	    {"10MB", 10 * 1024 * 1024},
	    {"10MiB", 10 * 1024 * 1024},
	    {"1G", 1024ULL * 1024 * 1024},
	    {"3g", 3ULL * 1024 * 1024 * 1024},
	};
	static const char *bad[] = {"",
	                            "K",
	                            "10X",
	                            "-1",
	                            "1.5M",
	                            "10 M",
	                            "10MBB",
	                            "M10",
	                            "99999999999999999999",
	                            "17179869184G"};
	struct config *cfg;
	struct config_errors errors;
	char line[128], quoted[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		snprintf(line, sizeof line, "log_max = %s", good[i].text);
		if (good[i].bytes == 0) {
			/* a size that reads as 0, refused by the check after it, not as a size */
			assert_int_equal(load_job_line("command = true\n", line, -1, &cfg, &errors),
			                 -1);
			assert_true(has_error(&errors, "jobs/a.ini", 3,
			                      "log_max must be more than 0", NULL));
			assert_false(has_error(&errors, "jobs/a.ini", 3, "size", NULL));
		} else {
			assert_int_equal(load_job_line("command = true\n", line, 0, &cfg, &errors),
			                 0);
			assert_int_equal(cfg->jobs_list[0]->log_max_bytes, good[i].bytes);
			config_free(cfg);
		}
		config_errors_free(&errors);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(line, sizeof line, "log_max = %s", bad[i]);
		snprintf(quoted, sizeof quoted, "\"%s\"", bad[i]);
		assert_int_equal(load_job_line("command = true\n", line, -1, &cfg, &errors), -1);
		/* an empty value never reaches the size parser: the reader refuses it first */
		assert_true(bad[i][0] == '\0'
		                ? has_error(&errors, "jobs/a.ini", 3,
		                            "log_max in [job a] has no value", NULL)
		                : has_error(&errors, "jobs/a.ini", 3, "log_max: ", quoted, NULL));
		config_errors_free(&errors);
	}
}

/* Durations in job keys: units, sums, "none" and "0" for no timeout. */
static void
test_durations(void **state)
{
	struct config *cfg;
	struct config_errors errors;

	(void)state;
	put("worker.ini",
	    BASE "[zookeeper]\nsession_timeout = 1m\n[safety]\nsafety_margin = 500ms\n"
	         "kill_grace = 1s\n");
	put("jobs/a.ini", "[job a]\ncommand = true\ntimeout = 0\nrestart_backoff = 1h30m\n"
	                  "kill_grace = 29500ms\n"
	                  "[job b]\ncommand = true\nschedule = @every 1d\ntimeout = 1d\n"
	                  "retry_backoff = 1500ms\nstart_deadline = 2h\n");
	if (load("worker.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	assert_int_equal(cfg->session_timeout_ms, 60000);
	assert_int_equal(cfg->safety_margin_ms, 500);
	assert_int_equal(cfg->jobs_list[0]->timeout_ms, 0);
	assert_int_equal(cfg->jobs_list[0]->restart_backoff_ms, 5400000);
	assert_int_equal(cfg->jobs_list[0]->kill_grace_ms, 29500);
	assert_int_equal(cfg->jobs_list[1]->timeout_ms, 86400000);
	assert_int_equal(cfg->jobs_list[1]->retry_backoff_ms, 1500);
	assert_int_equal(cfg->jobs_list[1]->start_deadline_ms, 7200000);
	config_free(cfg);
	config_errors_free(&errors);

	/* exactly half the timeout is still safe; one millisecond more is not */
	put("worker.ini", BASE "[zookeeper]\nsession_timeout = 6s\n[safety]\nsafety_margin = 1s\n"
	                       "kill_grace = 2s\n");
	put("jobs/a.ini", "[job a]\ncommand = true\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
	put("worker.ini", BASE "[zookeeper]\nsession_timeout = 6s\n[safety]\nsafety_margin = 1s\n"
	                       "kill_grace = 2001ms\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "worker.ini", 9, "is more than half", NULL));
	config_errors_free(&errors);

	/* a job's own kill_grace obeys the same rule: 29500ms fits a 1m session, 29501ms not */
	put("worker.ini",
	    BASE "[zookeeper]\nsession_timeout = 1m\n[safety]\nsafety_margin = 500ms\n"
	         "kill_grace = 1s\n");
	put("jobs/a.ini", "[job a]\ncommand = true\nkill_grace = 29501ms\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "jobs/a.ini", 3, "at most 29500ms", NULL));
	config_errors_free(&errors);
}

/*
 * A worker that is not root cannot run a job as another user: that is a configuration
 * error. As root, the check runs in a child that has dropped to "nobody".
 */
static void
test_user_needs_root(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	struct passwd *pw = getpwnam("nobody");
	int status, ok;
	pid_t pid;

	(void)state;
	assert_non_null(pw);
	put("worker.ini", BASE);
	put("jobs/a.ini", "[job a]\ncommand = true\nuser = daemon\n");
	chmod(tdir, 0755);
	chmod(at("worker.ini"), 0644); /* nobody reads them */
	chmod(at("jobs/a.ini"), 0644);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && setuid(pw->pw_uid) != 0)
			_exit(2);
		ok = load("worker.ini", &cfg, &errors) == -1 &&
		     has_error(&errors, "jobs/a.ini", 3,
		               "user = daemon needs a worker running as root", "remove user", NULL);
		config_errors_free(&errors);
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Splitting commands for shell = false. */
static void
test_split_command(void **state)
{
	static const struct {
		const char *text;
		const char *words[5];
	} good[] = {
	    {"a", {"a"}},
	    {"  a\tb   c  ", {"a", "b", "c"}},
	    {"'a b' c", {"a b", "c"}},
	    {"\"a \\\" b\" c", {"a \" b", "c"}},
	    {"\"a\\\\b\" \"x\\ny\"", {"a\\b", "x\\ny"}},
	    {"a'b c'd", {"ab cd"}},
	    {"x '' \"\"", {"x", "", ""}},
	    {"a\\ b c", {"a b", "c"}},
	    {"'it''s' \"$HOME\"", {"its", "$HOME"}},
	    {"'say \"hi\"' \"it's\"", {"say \"hi\"", "it's"}},
	};
	static const struct {
		const char *text;
		const char *cause;
	} bad[] = {
	    {"echo 'a", "unbalanced ' quote"},
	    {"echo \"a", "unbalanced \" quote"},
	    {"a \"b\\\"", "unbalanced \" quote"},
	    {"echo \\", "lone backslash"},
	    /* blank values never reach the splitter: the reader refuses them first */
	    {"", "command in [job a] has no value"},
	    {"   \t ", "command in [job a] has no value"},
	    {"'' x", "the program to run is an empty word"},
	    {"\"\"", "the program to run is an empty word"},
	};
	struct config *cfg;
	struct config_errors errors;
	char line[128], **argv;
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		snprintf(line, sizeof line, "command = %s", good[i].text);
		assert_int_equal(load_job_line("shell = false\n", line, 0, &cfg, &errors), 0);
		argv = cfg->jobs_list[0]->argv;
		for (j = 0; good[i].words[j] != NULL; j++) {
			assert_non_null(argv[j]);
			assert_string_equal(argv[j], good[i].words[j]);
		}
		assert_null(argv[j]);
		config_free(cfg);
		config_errors_free(&errors);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(line, sizeof line, "command = %s", bad[i].text);
		assert_int_equal(load_job_line("shell = false\n", line, -1, &cfg, &errors), -1);
		assert_true(has_error(&errors, "jobs/a.ini", 3, bad[i].cause, NULL));
		config_errors_free(&errors);
	}
}

/* jobs = a directory: its *.ini files, sorted by name, and nothing else. */
static void
test_jobs_directory(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	char path[PATH_MAX];

	(void)state;
	put("worker.ini", BASE "jobs = d\n");
	put("d/b.ini", "[job b]\ncommand = true\n");
	put("d/a.ini", "[job a1]\ncommand = true\n[job a2]\ncommand = true\n");
	put("d/notes.txt", "[job ignored]\n");
	put("d/.hidden.ini", "[job hidden]\n");
	put("d/sub/c.ini", "[job nested]\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	assert_int_equal(cfg->njob_files, 2);
	snprintf(path, sizeof path, "%s/d/a.ini", tdir);
	assert_string_equal(cfg->job_files[0], path);
	snprintf(path, sizeof path, "%s/d/b.ini", tdir);
	assert_string_equal(cfg->job_files[1], path);
	assert_int_equal(cfg->njobs, 3);
	assert_string_equal(cfg->jobs_list[0]->name, "a1");
	assert_string_equal(cfg->jobs_list[1]->name, "a2");
	assert_string_equal(cfg->jobs_list[2]->name, "b");
	config_free(cfg);
	config_errors_free(&errors);
}

/* jobs = a glob, a single file, a glob that matches nothing; the worker file is skipped. */
static void
test_jobs_glob(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	char cwd[PATH_MAX];

	(void)state;
	put("jobs/x-1.ini", "[job x1]\ncommand = true\n");
	put("jobs/x-2.ini", "[job x2]\ncommand = true\n");
	put("jobs/y.ini", "[job y]\ncommand = true\n");

	put("worker.ini", BASE "jobs = jobs/x-*.ini\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	assert_int_equal(cfg->njobs, 2);
	assert_string_equal(cfg->jobs_list[0]->name, "x1");
	assert_string_equal(cfg->jobs_list[1]->name, "x2");
	config_free(cfg);
	config_errors_free(&errors);

	put("worker.ini", BASE "jobs = jobs/y.ini\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	assert_int_equal(cfg->njobs, 1);
	assert_string_equal(cfg->jobs_list[0]->name, "y");
	config_free(cfg);
	config_errors_free(&errors);

	/* a glob that matches nothing gives no jobs: an error unless allowed */
	put("worker.ini", BASE "jobs = nothing/*.ini\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "worker.ini", 6, "no jobs: jobs = \"nothing/*.ini\" found 0",
	                      "set allow_no_jobs = true in [worker]", NULL));
	assert_int_equal(errors.n, 1);
	config_errors_free(&errors);
	put("worker.ini", BASE "jobs = nothing/*.ini\nallow_no_jobs = true\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	assert_int_equal(cfg->njobs, 0);
	assert_int_equal(cfg->njob_files, 0);
	config_free(cfg);
	config_errors_free(&errors);

	/* a glob next to the worker file matches it: it is not read again as a job file */
	put("worker.ini", BASE "jobs = *.ini\n");
	put("z.ini", "[job z]\ncommand = true\n");
	if (load("worker.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	assert_int_equal(cfg->njobs, 1);
	assert_string_equal(cfg->jobs_list[0]->name, "z");
	config_free(cfg);
	config_errors_free(&errors);

	/* relative to the worker file's directory, not to the working directory */
	put("etc/worker.ini", BASE);
	put("etc/jobs/w.ini", "[job w]\ncommand = true\n");
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir("/"), 0);
	assert_int_equal(load("etc/worker.ini", &cfg, &errors), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(cfg->njobs, 1);
	assert_string_equal(cfg->jobs_list[0]->name, "w");
	config_free(cfg);
	config_errors_free(&errors);
}

/* A worker file given relative to the working directory: messages use that path. */
static void
test_relative_paths(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	char cwd[PATH_MAX];

	(void)state;
	put("conf/worker.ini", BASE "jobs = ../jobs\n");
	put("jobs/a.ini", "[job a]\nleases = 0\ncommand = true\n");
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(tdir), 0);
	assert_int_equal(config_load("conf/worker.ini", &cfg, &errors), -1);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(errors.n, 1);
	assert_string_equal(errors.lines[0], "jobs/a.ini:2: leases = 0 is too small: it must be at "
	                                     "least 1 (1 is a mutex, more is a semaphore with "
	                                     "that many leases)");
	config_errors_free(&errors);

	assert_int_equal(chdir(tdir), 0);
	assert_int_equal(config_load("missing.ini", &cfg, &errors), -1);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(errors.n, 1);
	assert_string_equal(errors.lines[0], "missing.ini: cannot open: No such file or directory");
	config_errors_free(&errors);
}

/* The same job name in two files names both places. */
static void
test_duplicate_across_files(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	char first[PATH_MAX + 8];

	(void)state;
	put("worker.ini", BASE);
	put("jobs/a.ini", "[job backup]\ncommand = true\n");
	put("jobs/b.ini", "# the same name again\n\n[job backup]\ncommand = false\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_int_equal(errors.n, 1);
	snprintf(first, sizeof first, "%s:1", at("jobs/a.ini"));
	assert_true(has_error(&errors, "jobs/b.ini", 3, "duplicate job \"backup\"", first,
	                      "rename one", NULL));
	config_errors_free(&errors);
}

/* What reload compares: settings count, where a job is written does not. */
static void
test_job_equal(void **state)
{
	static const char *changes[] = {
	    "command = echo other\n",
	    "schedule = @every 2m\n",
	    "timezone = UTC\n",
	    "leases = 2\n",
	    "lock = other\n",
	    "per_tick = 1\nleases = 2\n",
	    "timeout = 5s\n",
	    "retries = 1\n",
	    "retry_backoff = 1s\n",
	    "start_deadline = 10s\n",
	    "kill_grace = 1s\n",
	    "user = nobody\n",
	    "group = nogroup\n",
	    "umask = 077\n",
	    "workdir = /tmp\n",
	    "env = A=1\n",
	    "log_file = /var/lib/lk-test/x.log\n",
	    "log_max = 1M\n",
	    "history = 3\n",
	    "on_shutdown = wait\n",
	    "shell = false\n",
	    "lock_path = /x/y\n",
	    "pass_env = FOO\n",
	};
	struct config *a, *b;
	struct config_errors errors;
	char *text;
	size_t i;

	(void)state;
	put("worker.ini", BASE);
	put("jobs/a.ini", "[job j]\ncommand = echo hi\nschedule = @every 1m\n");
	assert_int_equal(load("worker.ini", &a, &errors), 0);
	config_errors_free(&errors);

	/* moved down and into another file: still the same job */
	put("jobs/a.ini", "");
	put("jobs/b.ini", "\n\n# moved\n[job j]\nschedule = @every 1m\ncommand = echo hi\n");
	assert_int_equal(load("worker.ini", &b, &errors), 0);
	config_errors_free(&errors);
	assert_true(config_job_equal(a->jobs_list[0], b->jobs_list[0]));
	config_free(b);
	put("jobs/b.ini", "");

	for (i = 0; i < sizeof changes / sizeof changes[0]; i++) {
		assert_true(asprintf(&text, "[job j]\ncommand = echo hi\nschedule = @every 1m\n%s",
		                     changes[i]) > 0);
		if (strncmp(changes[i], "command", 7) == 0 ||
		    strncmp(changes[i], "schedule", 8) == 0) {
			free(text);
			assert_true(asprintf(&text, "[job j]\n%s%s", changes[i],
			                     changes[i][0] == 'c' ? "schedule = @every 1m\n"
			                                          : "command = echo hi\n") > 0);
		}
		put("jobs/a.ini", text);
		free(text);
		if (load("worker.ini", &b, &errors) != 0) {
			fprintf(stderr, "change \"%s\"\n", changes[i]);
			dump(&errors);
		}
		assert_non_null(b);
		if (config_job_equal(a->jobs_list[0], b->jobs_list[0]))
			fprintf(stderr, "change \"%s\" went unnoticed\n", changes[i]);
		assert_false(config_job_equal(a->jobs_list[0], b->jobs_list[0]));
		config_free(b);
		config_errors_free(&errors);
	}

	/* worker settings a job inherits count too */
	put("jobs/a.ini", "[job j]\ncommand = echo hi\nschedule = @every 1m\n");
	put("worker.ini", BASE "[zookeeper]\nroot = /other\n");
	assert_int_equal(load("worker.ini", &b, &errors), 0);
	assert_false(config_job_equal(a->jobs_list[0], b->jobs_list[0]));
	config_free(b);
	config_errors_free(&errors);
	put("worker.ini", BASE "[safety]\nkill_grace = 1s\n");
	assert_int_equal(load("worker.ini", &b, &errors), 0);
	assert_false(config_job_equal(a->jobs_list[0], b->jobs_list[0]));
	config_free(b);
	config_errors_free(&errors);
	put("worker.ini", BASE "pass_env = LC_*\n");
	assert_int_equal(load("worker.ini", &b, &errors), 0);
	assert_false(config_job_equal(a->jobs_list[0], b->jobs_list[0]));
	config_free(b);
	config_errors_free(&errors);
	config_free(a);
}

/* check's listing shows the resolved lock recipe and path of every job, and no secrets. */
static void
test_print(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	put("worker.ini", BASE "[zookeeper]\nauth = admin:hunter2\n");
	put("jobs/a.ini", "[job m]\ncommand = echo 'hi there'\n"
	                  "[job s]\ncommand = sleep 1\nleases = 4\nschedule = @hourly\n"
	                  "timezone = UTC\ntimeout = 90s\n"
	                  "[job p]\ncommand = true\nlock_path = /shared/lock\nenv = K=V\n"
	                  "user = nobody\npass_env = FOO LC_*\n"
	                  "[job r]\nshell = false\ncommand = env -0\n"
	                  "[job q]\nshell = false\ncommand = env\nenv = PATH=/nonexistent\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	config_print(cfg, f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "worker t "));
	assert_non_null(strstr(out, "127.0.0.1:2181"));
	assert_non_null(strstr(out, "digest as admin"));
	assert_null(strstr(out, "hunter2"));
	assert_non_null(strstr(out, "job m ("));
	assert_non_null(strstr(out, "1: mutex"));
	assert_non_null(strstr(out, "/leasekeeper/mutex/m\n"));
	assert_non_null(strstr(out, "/bin/sh -c 'echo '\\''hi there'\\'''"));
	assert_non_null(strstr(out, "4: semaphore"));
	assert_non_null(strstr(out, "/leasekeeper/semaphore/s\n"));
	assert_non_null(strstr(out, "(time zone UTC)"));
	assert_non_null(strstr(out, "1m30s"));
	assert_non_null(strstr(out, "/shared/lock (lock_path)"));
	assert_non_null(strstr(out, "K=V"));
	assert_non_null(strstr(out, "run as           nobody"));
	assert_non_null(strstr(out, "pass_env         FOO LC_*\n"));
	/* a program without a '/' is searched in the job's PATH, not check's */
	assert_non_null(strstr(out, "program          /usr/bin/env\n"));
	assert_non_null(
	    strstr(out, "program          env is not in the job's PATH (/nonexistent)"));
	assert_null(strstr(out, "configuration OK"));
	free(out);
	config_free(cfg);
	config_errors_free(&errors);
}

/* Write len bytes of text to tdir/name (which may hold NUL bytes). */
static void
put_bytes(const char *name, const char *text, size_t len)
{
	FILE *f;

	put(name, ""); /* creates the directory */
	f = fopen(at(name), "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Whether any error line holds a byte below 0x20 or 0x7f: input is quoted escaped. */
static int
has_raw_control(const struct config_errors *errors)
{
	const unsigned char *p;
	size_t i;

	for (i = 0; i < errors->n; i++) {
		for (p = (const unsigned char *)errors->lines[i]; *p != '\0'; p++) {
			if (*p < 0x20 || *p == 0x7f)
				return 1;
		}
	}
	return 0;
}

/* A NUL inside a value is refused (it used to cut the value short), quoted escaped. */
static void
test_nul_and_controls(void **state)
{
	static const char job[] = "[job a]\ncommand = echo safe\0; touch /tmp/x\n";
	static const char name[] = "[job a\0b]\ncommand = true\n";
	struct config *cfg;
	struct config_errors errors;
	char longline[512];

	(void)state;
	put("worker.ini", BASE);
	put_bytes("jobs/a.ini", job, sizeof job - 1);
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	if (errors.n != 1)
		dump(&errors);
	assert_int_equal(errors.n, 1);
	assert_true(has_error(&errors, "jobs/a.ini", 2,
	                      "control character \\x00 at column 20 in \"command = echo "
	                      "safe\\x00; touch /tmp/x\"",
	                      "no NUL, which would cut it short", NULL));
	assert_false(has_raw_control(&errors));
	config_errors_free(&errors);

	/* in a header: the keys under it are skipped, not filed under another job */
	put_bytes("jobs/a.ini", name, sizeof name - 1);
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	if (errors.n != 1)
		dump(&errors);
	assert_int_equal(errors.n, 1);
	assert_true(has_error(&errors, "jobs/a.ini", 1, "control character \\x00 at column 7",
	                      "remove it", NULL));
	config_errors_free(&errors);

	/* a long hostile line is quoted shortened (start ... end), its escape bytes escaped */
	memset(longline, '\x1b', sizeof longline);
	memcpy(longline, "[job a]\ncommand = ", 18);
	longline[sizeof longline - 2] = '\n';
	put_bytes("jobs/a.ini", longline, sizeof longline - 1);
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_int_equal(errors.n, 1);
	assert_false(has_raw_control(&errors));
	assert_true(has_error(&errors, "jobs/a.ini", 2, "in \"command = \\x1b", "\\x1b...\\x1b",
	                      "\\x1b\": remove it", NULL));
	assert_true(strlen(errors.lines[0]) < 600);
	config_errors_free(&errors);

	/* tabs stay allowed, and comments may hold any text but NUL */
	put("jobs/a.ini", "# caf\xe9 \x01\n[job a]\ncommand = printf 'a\\tb'\tx\n");
	if (load("worker.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	config_free(cfg);
	config_errors_free(&errors);
}

/* Names ZooKeeper accepts pass, UTF-8 included; the limits hold exactly. */
static void
test_hostile_good_values(void **state)
{
	struct config *cfg;
	struct config_errors errors;

	(void)state;
	put("worker.ini", "[zookeeper]\nhosts = zk-1.example:2181,10.0.0.1:65535,[::1]:1/lk/x\n"
	                  "[worker]\nnode_id = caf\xc3\xa9\nallow_root_jobs = true\n"
	                  "[http]\nlisten = [::1]:9187\n");
	put("jobs/a.ini", "[job \xe6\x97\xa5\xe6\x9c\xac-\xef\xbf\xaf]\ncommand = true\n"
	                  "leases = 10000\nrestart_backoff = 1s\n"
	                  "[job b]\ncommand = true\nschedule = 0 0 29 2 *\nretry_backoff = 1s\n");
	if (load("worker.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	assert_int_equal(cfg->jobs_list[0]->leases, 10000);
	assert_string_equal(cfg->hosts, "zk-1.example:2181,10.0.0.1:65535,[::1]:1/lk/x");
	assert_string_equal(cfg->http_listen, "[::1]:9187");
	assert_int_equal(cfg->jobs_list[0]->restart_backoff_ms, 1000);
	assert_int_equal(cfg->jobs_list[1]->retry_backoff_ms, 1000);
	config_free(cfg);
	config_errors_free(&errors);
}

/* config_valid_hosts, the rule the command line's --zk shares. */
static void
test_valid_hosts(void **state)
{
	static const char *const good[] = {
	    "a:1",
	    "localhost:2181",
	    "zk-1.example.com:2181,zk_2:2182",
	    "10.0.0.1:65535",
	    "[::1]:2181",
	    "[2001:db8::1]:1,zk:2/lk",
	    "zk:2181/a/b",
	};
	static const struct {
		const char *hosts, *why;
	} bad[] = {
	    {"localhost", "is a host without \":PORT\""},
	    {"a:0", "\"a:0\" is a port outside 1-65535"},
	    {"a:65536", "is a port outside 1-65535"},
	    {"a:123456", "is a port outside 1-65535"},
	    {"a:", "\"a:\" is an empty port"},
	    {"a:+1", "is a port that is not a number"},
	    {"a:1,", "\"\" is an empty host"},
	    {",a:1", "is an empty host"},
	    {":2181", "is a host that is not a host name"},
	    {"1.2.3.4.5:80", "is a host that is not a host name"},
	    {"256.1.1.1:80", "is a host that is not a host name"},
	    {"-zk:1", "is a host that is not a host name"},
	    {"zk..x:1", "is a host that is not a host name"},
	    {"[::1:2181", "is a host without \":PORT\""},
	    {"::1:2181", "is a host that is not a host name"},
	    {"[::x]:2181", "is a host that is not a host name"},
	    {"ZK/chr,127.0.0.1:2", "a '/' comes before the last host"},
	    {"a:1/x//y", "bad chroot in hosts"},
	    {"a:1/", "bad chroot in hosts"},
	};
	char *cause;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		cause = NULL;
		if (!config_valid_hosts(good[i], &cause))
			fail_msg("%s: %s", good[i], cause);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause = NULL;
		if (config_valid_hosts(bad[i].hosts, &cause))
			fail_msg("%s accepted", bad[i].hosts);
		if (strstr(cause, bad[i].why) == NULL)
			fail_msg("%s: %s lacks %s", bad[i].hosts, cause, bad[i].why);
		free(cause);
	}
}

/* Whatever [worker] jobs matches and cannot read is an error naming the path. */
/*
 * A job file is read in steps of a few hundred lines (config_loader_step, so that a reload
 * yields to the loop): a section that spans a step's end keeps its keys, an error past it
 * names its line, and a load cut short in the middle of a file frees what it read.
 */
static void
test_read_in_steps(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	struct config_loader *l;
	char *text = NULL, *bad;
	size_t len = 0, i;
	FILE *f;

	(void)state;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	for (i = 0; i < 400; i++) /* five lines a job: job i starts at line 5i+1 */
		fprintf(f,
		        "[job j%03zu]\ncommand = true %zu\n# a comment\nschedule = @every 1h\n\n",
		        i, i);
	assert_int_equal(fclose(f), 0);
	put("worker.ini", BASE "jobs = d\n");
	put("d/a.ini", text);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	assert_int_equal(cfg->njobs, 400);
	for (i = 0; i < 400; i++) {
		char want[32];

		snprintf(want, sizeof want, "true %zu", i);
		assert_string_equal(cfg->jobs_list[i]->command, want);
		assert_string_equal(cfg->jobs_list[i]->schedule, "@every 1h");
	}
	config_free(cfg);
	config_errors_free(&errors);

	/* job 300 (lines 1501-1505) with an unknown key on its comment's line */
	bad = strstr(text, "[job j300]");
	assert_non_null(bad);
	memcpy(strchr(bad, '#'), "bogus=1 ", 8);
	put("d/a.ini", text);
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "d/a.ini", 1503, "bogus", NULL));
	assert_int_equal(errors.n, 1);
	config_errors_free(&errors);

	/* cut short in the middle of the file */
	snprintf(text, len, "%s/worker.ini", tdir);
	l = config_loader_new(text, 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(config_loader_step(l), 0);
	assert_int_equal(config_loader_finish(l, NULL, NULL), -1);
	free(text);
}

static void
test_job_file_problems(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	char path[PATH_MAX];

	(void)state;
	put("worker.ini", BASE "jobs = d\n");
	put("d/a.ini", "[job a]\ncommand = true\n");

	/* a dangling symbolic link */
	snprintf(path, sizeof path, "%s/d/gone.ini", tdir);
	assert_int_equal(symlink("/nonexistent/x.ini", path), 0);
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "worker.ini", 6, "gone.ini\" matched but cannot be read",
	                      "dangling or looping symbolic link", NULL));
	assert_int_equal(errors.n, 1);
	config_errors_free(&errors);
	assert_int_equal(unlink(path), 0);

	/* a symbolic link loop */
	snprintf(path, sizeof path, "%s/d/loop.ini", tdir);
	assert_int_equal(symlink("loop.ini", path), 0);
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "worker.ini", 6, "loop.ini\" matched but cannot be read",
	                      "Too many levels of symbolic links", NULL));
	assert_int_equal(errors.n, 1);
	config_errors_free(&errors);
	assert_int_equal(unlink(path), 0);

	/* a directory named like a job file, in a directory and under a glob */
	put("d/x.ini/inner.ini", "[job inner]\ncommand = true\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "worker.ini", 6, "x.ini\" is a directory, not a job file",
	                      "rename or move it", NULL));
	assert_int_equal(errors.n, 1);
	config_errors_free(&errors);
	put("worker.ini", BASE "jobs = d/*.ini\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "worker.ini", 6, "x.ini\" is a directory", NULL));
	assert_int_equal(errors.n, 1);
	config_errors_free(&errors);

	/* a device */
	put("worker.ini", BASE "jobs = /dev/null\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "worker.ini", 6,
	                      "jobs: \"/dev/null\" is not a regular file, not a job file",
	                      "point jobs at .ini files", NULL));
	assert_int_equal(errors.n, 1);
	config_errors_free(&errors);

	/* a FIFO or a device in the worker file's place is refused, without blocking */
	snprintf(path, sizeof path, "%s/fifo.ini", tdir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(load("fifo.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "fifo.ini", 0, "is not a regular file", NULL));
	config_errors_free(&errors);
	snprintf(path, sizeof path, "%s/zero.ini", tdir);
	assert_int_equal(symlink("/dev/zero", path), 0);
	assert_int_equal(load("zero.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "zero.ini", 0, "is not a regular file", NULL));
	config_errors_free(&errors);

	/* a job file of more than 4 MiB */
	put("worker.ini", BASE "jobs = big.ini\n");
	put("big.ini", "[job a]\ncommand = true\n");
	snprintf(path, sizeof path, "%s/big.ini", tdir);
	assert_int_equal(truncate(path, 5 * 1024 * 1024), 0);
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_true(has_error(&errors, "big.ini", 0, "is 5242880 bytes; the most is 4194304",
	                      "Split the jobs", NULL));
	config_errors_free(&errors);

	/* a directory a glob cannot read (permissions do not stop root) */
	if (geteuid() != 0) {
		put("e/sub/a.ini", "[job a]\ncommand = true\n");
		snprintf(path, sizeof path, "%s/e/sub", tdir);
		assert_int_equal(chmod(path, 0), 0);
		put("worker.ini", BASE "jobs = e/*/*.ini\n");
		assert_int_equal(load("worker.ini", &cfg, &errors), -1);
		assert_int_equal(chmod(path, 0755), 0);
		assert_true(has_error(&errors, "worker.ini", 6, "cannot read the directory",
		                      "fix its permissions", NULL));
		config_errors_free(&errors);
	}
}

/* Load worker.ini expecting one error at file:line with every given substring. */
#define expect_error(file, line, ...)                                                              \
	do {                                                                                       \
		assert_int_equal(load("worker.ini", &cfg, &errors), -1);                           \
		if (!has_error(&errors, file, line, __VA_ARGS__, NULL))                            \
			dump(&errors);                                                             \
		assert_true(has_error(&errors, file, line, __VA_ARGS__, NULL));                    \
		config_errors_free(&errors);                                                       \
	} while (0)

/* As root: configuration only root can change, secrets only root can read, logs in root's
 * directories (issue 10, finding 5). */
static void
test_file_modes(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	struct passwd *pw = getpwnam("nobody");
	char link[PATH_MAX + 64];

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(pw);
	put("worker.ini", BASE "[zookeeper]\nauth = admin:hunter2\n");
	put("jobs/a.ini", "[job a]\ncommand = true\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);

	/* a job file anyone can write */
	assert_int_equal(chmod(at("jobs/a.ini"), 0666), 0);
	expect_error("jobs/a.ini", 0, "is writable by others (mode 0666)", "chmod 0640");
	/* or its group, unless that is root's */
	assert_int_equal(chmod(at("jobs/a.ini"), 0660), 0);
	assert_int_equal(chown(at("jobs/a.ini"), 0, pw->pw_gid), 0);
	expect_error("jobs/a.ini", 0, "is writable by its group", "chmod 0640");
	assert_int_equal(chown(at("jobs/a.ini"), 0, 0), 0);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
	/* or owned by another user */
	assert_int_equal(chown(at("jobs/a.ini"), pw->pw_uid, 0), 0);
	expect_error("jobs/a.ini", 0, "owned by a user other than root", "chown root");
	assert_int_equal(chown(at("jobs/a.ini"), 0, 0), 0);

	/* the secret in a file anyone can read */
	assert_int_equal(chmod(at("worker.ini"), 0644), 0);
	expect_error("worker.ini", 7, "auth: the secret is in a file anyone can read (mode 0644)",
	             "chmod 0640");
	/* group root may read it; another group may not */
	assert_int_equal(chmod(at("worker.ini"), 0640), 0);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
	assert_int_equal(chown(at("worker.ini"), 0, pw->pw_gid), 0);
	expect_error("worker.ini", 7, "its group can read", "chmod 0600");
	assert_int_equal(chown(at("worker.ini"), 0, 0), 0);

	/* the jobs directory anyone can write, reported once at jobs */
	assert_int_equal(chmod(at("jobs"), 01777), 0);
	put("worker.ini", BASE "jobs = jobs\n");
	expect_error("worker.ini", 6, "the directory", "/jobs,", "writable by others",
	             "chmod go-w");
	put("worker.ini", BASE "jobs = jobs/*.ini\n");
	expect_error("worker.ini", 6, "/jobs,", "writable by others");
	assert_int_equal(chmod(at("jobs"), 0755), 0);

	/* through a symbolic link: the target and its directory are judged */
	put("open/worker.ini", BASE "jobs = "
	                            "../jobs\n");
	assert_int_equal(chmod(at("open"), 0777), 0);
	assert_int_equal(unlink(at("worker.ini")), 0);
	snprintf(link, sizeof link, "%s", at("open/worker.ini"));
	assert_int_equal(symlink(link, at("worker.ini")), 0);
	expect_error("worker.ini", 0, "/open,", "writable by others", "chmod go-w");
	assert_int_equal(chmod(at("open"), 0755), 0);
	assert_int_equal(chmod(at("open/worker.ini"), 0666), 0);
	expect_error("worker.ini", 0, "its target", "/open/worker.ini", "chmod 0640");
	assert_int_equal(unlink(at("worker.ini")), 0);

	/* a job's log in a directory others can write, or reached through a link */
	put("worker.ini", BASE);
	put("logs/keep", "");
	assert_int_equal(chmod(at("logs"), 0777), 0);
	snprintf(link, sizeof link, "[job a]\ncommand = true\nlog_file = %s\n", at("logs/a.log"));
	put("jobs/a.ini", link);
	expect_error("jobs/a.ini", 3, "/logs is writable by others",
	             "put them in a directory only root can write");
	assert_int_equal(chmod(at("logs"), 01777), 0);
	expect_error("jobs/a.ini", 3, "/logs is writable by others");
	assert_int_equal(chmod(at("logs"), 0755), 0);
	snprintf(link, sizeof link, "%s", at("logs"));
	assert_int_equal(symlink(link, at("loglink")), 0);
	snprintf(link, sizeof link, "[job a]\ncommand = true\nlog_file = %s\n",
	         at("loglink/sub/a.log"));
	put("jobs/a.ini", link);
	expect_error("jobs/a.ini", 3, "/loglink is a symbolic link");
	/* a directory not made yet is judged by what exists of the path */
	snprintf(link, sizeof link, "[job a]\ncommand = true\nlog_file = %s\n",
	         at("logs/new/a.log"));
	put("jobs/a.ini", link);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
}

/* Append an ACL entry {tag, perm, id} to the xattr being built in b at *len. */
static void
acl_entry(unsigned char *b, size_t *len, unsigned tag, unsigned perm, uint32_t id)
{
	unsigned char *e = b + *len;

	e[0] = tag & 0xff, e[1] = tag >> 8, e[2] = perm & 0xff, e[3] = perm >> 8;
	e[4] = id & 0xff, e[5] = (id >> 8) & 0xff, e[6] = (id >> 16) & 0xff, e[7] = id >> 24;
	*len += 8;
}

/*
 * An access ACL in the kernel's format: owner, owning group and others as in mode, one
 * named entry (tag 2 for a user, 8 for a group) with perm for id, and a mask of the
 * group's bits and perm, in the order the kernel wants. Returns its length.
 */
static size_t
acl_build(unsigned char *b, mode_t mode, unsigned tag, unsigned perm, uint32_t id)
{
	size_t len = 4;

	b[0] = 2, b[1] = b[2] = b[3] = 0;
	acl_entry(b, &len, 0x01, (mode >> 6) & 7, UINT32_MAX);
	if (tag == 0x02)
		acl_entry(b, &len, tag, perm, id);
	acl_entry(b, &len, 0x04, (mode >> 3) & 7, UINT32_MAX);
	if (tag != 0x02)
		acl_entry(b, &len, tag, perm, id);
	acl_entry(b, &len, 0x10, ((mode >> 3) & 7) | perm, UINT32_MAX);
	acl_entry(b, &len, 0x20, mode & 7, UINT32_MAX);
	return len;
}

/* Give the user (tag 2) or group (tag 8) id perm on tdir/name with an ACL, as setfacl -m. */
static void
set_acl(const char *name, unsigned tag, unsigned perm, uint32_t id)
{
	unsigned char b[64];
	struct stat st;
	size_t len;

	assert_int_equal(stat(at(name), &st), 0);
	len = acl_build(b, st.st_mode, tag, perm, id);
	assert_int_equal(setxattr(at(name), "system.posix_acl_access", b, len, 0), 0);
}

/* Remove tdir/name's ACL, as setfacl -b. */
static void
clear_acl(const char *name)
{
	assert_int_equal(removexattr(at(name), "system.posix_acl_access"), 0);
}

/* The ACL parser: who a named entry lets write or read, through the mask; bad data refused. */
static void
test_posixacl_grants(void **state)
{
	unsigned char b[POSIXACL_MAX_BYTES + 16];
	uint32_t id;
	size_t len, i;

	(void)state;
	/* a named user with write, the mask letting it through */
	len = acl_build(b, 0640, 0x02, 6, 65534);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_USER);
	assert_int_equal(id, 65534);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_READ, &id), POSIXACL_USER);
	/* read only: no write */
	len = acl_build(b, 0640, 0x02, 4, 65534);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_NONE);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_READ, &id), POSIXACL_USER);
	/* a named group */
	len = acl_build(b, 0600, 0x08, 7, 100);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_GROUP);
	assert_int_equal(id, 100);
	/* root's user and group count as root */
	len = acl_build(b, 0600, 0x02, 6, 0);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_NONE);
	len = acl_build(b, 0600, 0x08, 6, 0);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_NONE);
	/* a mask without write takes it away (entry 3 is the mask) */
	len = acl_build(b, 0600, 0x02, 6, 65534);
	b[4 + 8 * 3 + 2] = 4;
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_NONE);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_READ, &id), POSIXACL_USER);
	/* a minimal ACL (owner, group, others) grants nothing beyond the mode */
	len = 4;
	acl_entry(b, &len, 0x01, 6, UINT32_MAX);
	acl_entry(b, &len, 0x04, 6, UINT32_MAX);
	acl_entry(b, &len, 0x20, 6, UINT32_MAX);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_NONE);

	/* what the kernel would not store is refused */
	len = acl_build(b, 0640, 0x02, 6, 65534);
	assert_int_equal(posixacl_grants(b, 0, POSIXACL_WRITE, &id), POSIXACL_BAD);
	assert_int_equal(posixacl_grants(b, 3, POSIXACL_WRITE, &id), POSIXACL_BAD);
	assert_int_equal(posixacl_grants(b, len - 1, POSIXACL_WRITE, &id), POSIXACL_BAD);
	assert_int_equal(posixacl_grants(b, len + 4, POSIXACL_WRITE, &id), POSIXACL_BAD);
	b[0] = 1; /* version */
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_BAD);
	b[0] = 2;
	b[4 + 8 + 2] = 8; /* permission bits beyond rwx */
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_BAD);
	b[4 + 8 + 2] = 6;
	b[4 + 8] = 0x40; /* an unknown tag */
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_BAD);
	b[4 + 8] = 0x01; /* two owner entries */
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_BAD);
	b[4 + 8] = 0x02;
	b[4 + 8 * 3] = 0x20; /* no mask for a named entry (and two other entries) */
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_BAD);
	len = 4; /* a named entry without a mask */
	acl_entry(b, &len, 0x01, 6, UINT32_MAX);
	acl_entry(b, &len, 0x02, 6, 65534);
	acl_entry(b, &len, 0x04, 6, UINT32_MAX);
	acl_entry(b, &len, 0x20, 6, UINT32_MAX);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_BAD);
	/* the most entries are read; one more is refused unread */
	len = acl_build(b, 0640, 0x02, 4, 65534);
	while (len < POSIXACL_MAX_BYTES)
		acl_entry(b, &len, 0x08, 4, 100);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_NONE);
	acl_entry(b, &len, 0x08, 4, 100);
	assert_int_equal(posixacl_grants(b, len, POSIXACL_WRITE, &id), POSIXACL_BAD);
	for (i = 0; i < 4; i++)
		assert_int_equal(posixacl_grants(b, i, POSIXACL_READ, &id), POSIXACL_BAD);
}

/* As root: an ACL that lets another user or group write configuration, a log directory, or
 * read the secret, is refused like the mode bits that would (issue 10, review F3). */
static void
test_file_acls(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	struct passwd *pw = getpwnam("nobody");
	char text[PATH_MAX + 64];

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(pw);
	put("worker.ini", BASE);
	put("jobs/a.ini", "[job a]\ncommand = true\n");
	assert_int_equal(chmod(at("jobs/a.ini"), 0640), 0);
	assert_int_equal(chmod(at("jobs"), 0755), 0);

	/* a job file nobody may write through an ACL: mode 0660 root:root */
	set_acl("jobs/a.ini", 0x02, 6, pw->pw_uid);
	expect_error("jobs/a.ini", 0, "is writable by another user through an ACL (mode 0660)",
	             "setfacl -b");
	/* read only is fine */
	set_acl("jobs/a.ini", 0x02, 4, pw->pw_uid);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
	set_acl("jobs/a.ini", 0x08, 6, pw->pw_gid);
	expect_error("jobs/a.ini", 0, "is writable by another group through an ACL", "setfacl -b");
	/* root's group is root's */
	set_acl("jobs/a.ini", 0x08, 6, 0);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
	clear_acl("jobs/a.ini");
	assert_int_equal(chmod(at("jobs/a.ini"), 0640), 0);

	/* the jobs directory: nobody could add jobs/evil.ini */
	set_acl("jobs", 0x02, 7, pw->pw_uid);
	expect_error("worker.ini", 0, "the directory", "/jobs, which holds configuration",
	             "is writable by another user through an ACL", "setfacl -b");
	clear_acl("jobs");
	assert_int_equal(chmod(at("jobs"), 0755), 0);

	/* a log directory */
	put("logs/keep", "");
	assert_int_equal(chmod(at("logs"), 0755), 0);
	snprintf(text, sizeof text, "[job a]\ncommand = true\nlog_file = %s\n", at("logs/a.log"));
	put("jobs/a.ini", text);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
	set_acl("logs", 0x02, 7, pw->pw_uid);
	expect_error("jobs/a.ini", 3, "/logs is writable by another user through an ACL",
	             "put them in a directory only root can write");
	clear_acl("logs");
	put("jobs/a.ini", "[job a]\ncommand = true\n");

	/* the secret, readable by nobody: mode 0640 root:root */
	put("worker.ini", BASE "[zookeeper]\nauth = admin:hunter2\n");
	assert_int_equal(chmod(at("worker.ini"), 0600), 0);
	set_acl("worker.ini", 0x02, 4, pw->pw_uid);
	expect_error("worker.ini", 7,
	             "auth: the secret is in a file another user or group can read through an "
	             "ACL (mode 0640): setfacl -b");
	clear_acl("worker.ini");
}

/* As root: the directories above configuration are root's too, and the auth_file is not a
 * link nor in a directory another user can write (issue 10, review F4). */
static void
test_file_parents(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	struct passwd *pw = getpwnam("nobody");
	char target[PATH_MAX];

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(pw);
	/* jobs = proj/jobs with proj nobody's: nobody could rename jobs and put theirs there */
	put("worker.ini", BASE "jobs = proj/jobs\n");
	put("proj/jobs/a.ini", "[job a]\ncommand = true\n");
	assert_int_equal(chmod(at("proj"), 0755), 0);
	assert_int_equal(chmod(at("proj/jobs"), 0755), 0);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
	assert_int_equal(chown(at("proj"), pw->pw_uid, pw->pw_gid), 0);
	expect_error("worker.ini", 6, "the directory", "/proj, above", "/proj/jobs, which holds",
	             "is owned by a user other than root", "chown root");
	/* reported once, not again for the job file in it */
	assert_int_equal(load("worker.ini", &cfg, &errors), -1);
	assert_int_equal(errors.n, 1);
	config_errors_free(&errors);
	/* writable by others: refused, unless it has the sticky bit */
	assert_int_equal(chown(at("proj"), 0, 0), 0);
	assert_int_equal(chmod(at("proj"), 0777), 0);
	expect_error("worker.ini", 6, "/proj, above", "is writable by others", "chmod go-w");
	assert_int_equal(chmod(at("proj"), 01777), 0);
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
	assert_int_equal(chmod(at("proj"), 0755), 0);
	set_acl("proj", 0x02, 7, pw->pw_uid);
	expect_error("worker.ini", 6, "/proj, above", "writable by another user through an ACL");
	clear_acl("proj");

	/* auth_file: a link to a root-only file is not followed */
	put("secret", "root:only\n");
	assert_int_equal(chmod(at("secret"), 0600), 0);
	put("creds/zk.auth", "lk:pw\n");
	assert_int_equal(chmod(at("creds/zk.auth"), 0600), 0);
	assert_int_equal(chmod(at("creds"), 0755), 0);
	put("worker.ini", BASE "[zookeeper]\nauth_file = creds/zk.auth\n");
	put("jobs/a.ini", "[job a]\ncommand = true\n");
	assert_int_equal(load("worker.ini", &cfg, &errors), 0);
	config_free(cfg);
	config_errors_free(&errors);
	assert_int_equal(unlink(at("creds/zk.auth")), 0);
	snprintf(target, sizeof target, "%s", at("secret"));
	assert_int_equal(symlink(target, at("creds/zk.auth")), 0);
	expect_error("worker.ini", 7, "auth_file: ",
	             "/creds/zk.auth is a symbolic link, which is "
	             "not followed: name the file itself");
	/* nor in a directory another user can write: they could swap the file */
	assert_int_equal(unlink(at("creds/zk.auth")), 0);
	put("creds/zk.auth", "lk:pw\n");
	assert_int_equal(chmod(at("creds/zk.auth"), 0600), 0);
	assert_int_equal(chown(at("creds"), pw->pw_uid, pw->pw_gid), 0);
	expect_error("worker.ini", 7, "the directory", "/creds, which holds the auth_file",
	             "is owned by a user other than root",
	             "can replace the ZooKeeper credentials: chown root");
}

/* The example worker and jobs in the source tree are valid and show each kind of job. */
static void
test_shipped_examples(void **state)
{
	struct config *cfg;
	struct config_errors errors;
	const char *src = getenv("LEASEKEEPER_SOURCE_DIR");
	struct config_job *job;
	char path[PATH_MAX], *text;
	size_t i;
	int rc;

	(void)state;
	if (src == NULL)
		src = ".";

	/* as the demo runs them: as root, with allow_root_jobs = true */
	assert_true(asprintf(&text,
	                     "[zookeeper]\nhosts = 127.0.0.1:2181\n[worker]\nnode_id = alpha\n"
	                     "allow_root_jobs = true\njobs = %s/jobs\n",
	                     src) > 0);
	put("demo.ini", text);
	free(text);
	if (load("demo.ini", &cfg, &errors) != 0)
		dump(&errors);
	assert_non_null(cfg);
	job = config_find_job(cfg, "leader");
	assert_non_null(job);
	assert_int_equal(schedule_kind(job->sched), SCHEDULE_CONTINUOUS);
	assert_int_equal(job->leases, 1);
	job = config_find_job(cfg, "pool");
	assert_non_null(job);
	assert_int_equal(schedule_kind(job->sched), SCHEDULE_CONTINUOUS);
	assert_int_equal(job->leases, 2);
	job = config_find_job(cfg, "report");
	assert_non_null(job);
	assert_int_equal(schedule_kind(job->sched), SCHEDULE_CRON);
	job = config_find_job(cfg, "sweep");
	assert_non_null(job);
	assert_int_equal(schedule_kind(job->sched), SCHEDULE_EVERY);
	assert_int_equal(job->shell, 0);
	config_free(cfg);
	config_errors_free(&errors);

	/* the shipped worker file: valid as it is, as root too (its jobs run as nobody) */
	snprintf(path, sizeof path, "%s/conf/worker.ini", src);
	cfg = NULL;
	rc = config_load(path, &cfg, &errors);
	for (i = 0; i < errors.n; i++)
		fprintf(stderr, "%s\n", errors.lines[i]);
	assert_int_equal(rc, 0);
	assert_non_null(cfg);
	assert_true(cfg->njobs >= 4);
	config_free(cfg);
	config_errors_free(&errors);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_constraint_match, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_locks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_after_with_schedule, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_configs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_all_problems_reported, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_every_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_line, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sizes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_durations, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_user_needs_root, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_split_command, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_jobs_directory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_jobs_glob, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_relative_paths, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_duplicate_across_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_job_equal, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_print, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shipped_examples, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nul_and_controls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hostile_good_values, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_job_file_problems, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_in_steps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_modes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_acls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_parents, setup, teardown),
	    cmocka_unit_test(test_posixacl_grants),
	    cmocka_unit_test(test_valid_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
