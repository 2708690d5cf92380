/* SPDX-License-Identifier: Apache-2.0 */
/* lk-record.c: a test job that records when it runs and catches a second copy running at once. */

/*
 * lk-record RECORD_FILE LOCK_FILE WHO [--hold-ms N] [--ignore-term] [--grandchildren K]
 *           [--slots N] [--exit N] [--daemon HB_FILE]
 *
 * It takes an flock on LOCK_FILE (or on the first free of LOCK_FILE.0 .. LOCK_FILE.N-1 with
 * --slots N; "-" skips the check). The kernel releases an flock only when every descriptor
 * of it is closed, that is when this process and every grandchild that inherited it are
 * dead, so finding it held means another copy is still alive: an exact overlap check that
 * does not depend on anyone's clock. Then it appends lines to RECORD_FILE, each with one
 * write() on an O_APPEND descriptor so that concurrent writers never interleave:
 *
 *	overlap WHO PID T_NS [job=J] [slot=S] wall=W   (only when someone else held the lock)
 *	start WHO PID T_NS [job=J] [fence=F] [node=N] [leases=L] [tick=T] [run=R] pgid=G
 *	      [slot=S] [born=B] wall=W   (B: when the kernel made the process group's leader)
 *	end WHO PID T_NS reason=done|term wall=W
 *
 * T_NS is CLOCK_MONOTONIC and W CLOCK_REALTIME in nanoseconds, both read with a raw system
 * call so that a libfaketime preloaded into the job's environment cannot fake them. The
 * key=value fields come from the job environment (LEASEKEEPER_JOB, _FENCE, _NODE, _LEASES,
 * _TICK, _RUN_ID) with blanks replaced by '_'.
 *
 * --daemon starts a daemon the way one daemonizes (fork, setsid, fork), out of the run's
 * process group and session; it ignores SIGTERM, keeps the lock file's flock, and appends
 * "hb WHO PID PARENT_PID T_NS" to HB_FILE every 20 ms for GRANDCHILD_MAX_S. It first
 * writes "daemon WHO PID T_NS parent=PARENT_PID wall=W" to the record file, so that the
 * DeathWatcher follows it and adds "daemon-death WHO PID T_NS" when it is gone.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GRANDCHILD_MAX_S 600 /* leaked grandchildren give up after this, whatever happens */

static volatile sig_atomic_t got_term;

struct options {
	const char *record;
	const char *lock;
	const char *who;
	long long hold_ms; /* -1: forever */
	int ignore_term;
	int grandchildren;
	int slots;
	int exit_code;
	const char *daemon_hb;
};

/* Note SIGTERM; the main loop writes the end line. */
static void
term_cb(int sig)
{
	(void)sig;
	got_term = 1;
}

/* CLOCK_MONOTONIC in nanoseconds, bypassing the vDSO and any LD_PRELOAD. */
static uint64_t
now_ns(void)
{
	struct timespec ts;

	if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void
usage(void)
{
	fprintf(stderr, "usage: lk-record RECORD_FILE LOCK_FILE WHO [--hold-ms N] [--ignore-term]"
	                " [--grandchildren K] [--slots N] [--exit N] [--daemon HB_FILE]\n");
	exit(2);
}

/* Parse a non-negative decimal number or exit with the usage. */
static long long
parse_number(const char *opt, const char *text)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < 0) {
		fprintf(stderr, "lk-record: %s: not a non-negative number: %s\n", opt, text);
		exit(2);
	}
	return v;
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	const char *pos[3];
	int npos = 0;

	memset(o, 0, sizeof *o);
	o->hold_ms = -1;
	o->slots = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--ignore-term") == 0) {
			o->ignore_term = 1;
		} else if (strcmp(a, "--hold-ms") == 0 && i + 1 < argc) {
			o->hold_ms = parse_number(a, argv[++i]);
		} else if (strcmp(a, "--grandchildren") == 0 && i + 1 < argc) {
			o->grandchildren = (int)parse_number(a, argv[++i]);
		} else if (strcmp(a, "--slots") == 0 && i + 1 < argc) {
			o->slots = (int)parse_number(a, argv[++i]);
		} else if (strcmp(a, "--daemon") == 0 && i + 1 < argc) {
			o->daemon_hb = argv[++i];
		} else if (strcmp(a, "--exit") == 0 && i + 1 < argc) {
			o->exit_code = (int)parse_number(a, argv[++i]) & 0xff;
		} else if (strncmp(a, "--", 2) == 0 || npos == 3) {
			usage();
		} else {
			pos[npos++] = a;
		}
	}
	if (npos != 3 || o->slots < 1 || o->slots > 1000 || o->grandchildren > 1000)
		usage();
	o->record = pos[0];
	o->lock = pos[1];
	o->who = pos[2];
}

/* Append " key=value" for an environment variable, blanks and '=' replaced by '_'. */
static void
add_field(char *buf, size_t len, const char *key, const char *value)
{
	size_t used = strlen(buf);
	int n;

	if (value == NULL || used >= len)
		return;
	n = snprintf(buf + used, len - used, " %s=", key);
	if (n < 0 || (size_t)n >= len - used) {
		buf[used] = '\0';
		return;
	}
	used += (size_t)n;
	for (const char *p = value; *p != '\0' && used + 1 < len; p++) {
		unsigned char c = (unsigned char)*p;
		buf[used++] = (c <= ' ' || c == '=' || c == 0x7f) ? '_' : (char)c;
	}
	if (*value == '\0' && used + 1 < len)
		buf[used++] = '_';
	buf[used] = '\0';
}

/* CLOCK_REALTIME in nanoseconds, by a raw system call too (libfaketime cannot fake it). */
static uint64_t
wall_ns(void)
{
	struct timespec ts;

	if (syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0)
		clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * The wall time (ns) the kernel says process pid was made (its fork), to the clock tick
 * (10 ms here); 0 if unknown. For the job's first process, the process group's leader: the
 * run's start as the job itself knows it, before a shell and this program loaded. The
 * kernel's start time is on CLOCK_BOOTTIME; the two clocks are read as a pair, and read
 * again if a preemption came between them (a loaded machine: the torture's seed 6007 had
 * born= 113 to 135 ms early, read apart).
 */
static uint64_t
born_ns(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start;
	struct timespec boot;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t since_ns, wall = 0, after;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0 || hz <= 0)
		return 0;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL)
		return 0;
	for (i = 0; i < 20 && p != NULL; i++) /* field 22, starttime: 20 fields after comm */
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p, " %llu", &start) != 1)
		return 0;
	for (i = 0; i < 100; i++) {
		wall = wall_ns();
		if (syscall(SYS_clock_gettime, CLOCK_BOOTTIME, &boot) != 0)
			return 0;
		after = wall_ns();
		if (after - wall < 1000000) /* both within 1 ms */
			break;
	}
	if (i == 100)
		return 0;
	since_ns = (uint64_t)boot.tv_sec * 1000000000ULL + (uint64_t)boot.tv_nsec -
	           (uint64_t)(start * (1000000000ULL / (unsigned long long)hz));
	return since_ns < wall ? wall - since_ns : 0;
}

/*
 * Write one record line with a single write() to the record file and echo it to stdout.
 * Every line ends with wall=NS, the wall clock read right after the monotonic one.
 */
static void
record(int fd, const char *kind, const char *who, const char *fields)
{
	char line[2048];
	uint64_t mono = now_ns();
	int n;

	n = snprintf(line, sizeof line, "%s %s %ld %" PRIu64 "%s wall=%" PRIu64 "\n", kind, who,
	             (long)getpid(), mono, fields, wall_ns());
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line) {
		n = sizeof line - 1;
		line[n - 1] = '\n';
	}
	if (write(fd, line, (size_t)n) != n) {
		fprintf(stderr, "lk-record: write record: %s\n", strerror(errno));
		exit(3);
	}
	if (write(STDOUT_FILENO, line, (size_t)n) < 0) {
		/* the job's log is only a convenience */
	}
}

/* Take a free lock slot: returns its fd and sets *slot, or -1 with *slot = -1 if all held. */
static int
take_lock(const struct options *o, int *slot)
{
	char path[4096];

	*slot = -1;
	for (int i = 0; i < o->slots; i++) {
		int fd;

		if (o->slots == 1)
			snprintf(path, sizeof path, "%s", o->lock);
		else
			snprintf(path, sizeof path, "%s.%d", o->lock, i);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
		if (fd == -1) {
			fprintf(stderr, "lk-record: open %s: %s\n", path, strerror(errno));
			exit(3);
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*slot = i;
			return fd;
		}
		if (errno != EWOULDBLOCK) {
			fprintf(stderr, "lk-record: flock %s: %s\n", path, strerror(errno));
			exit(3);
		}
		close(fd);
	}
	return -1;
}

/* A grandchild: ignore SIGTERM, keep the inherited lock, sleep until killed (or the cap). */
static void
grandchild(int record_fd)
{
	sigset_t none;
	int devnull;

	signal(SIGTERM, SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	close(record_fd);
	devnull = open("/dev/null", O_RDWR);
	if (devnull != -1) {
		dup2(devnull, STDIN_FILENO);
		dup2(devnull, STDOUT_FILENO);
		dup2(devnull, STDERR_FILENO);
		if (devnull > STDERR_FILENO)
			close(devnull);
	}
	for (int left = GRANDCHILD_MAX_S; left > 0;)
		left = (int)sleep((unsigned int)left);
	_exit(0);
}

/* Daemonize (fork, setsid, fork) and write heartbeats; returns in the caller only. */
static void
daemon_start(const char *who, const char *hb, int record_fd)
{
	char line[256];
	pid_t pid, parent = getpid();
	int fd, n;

	if ((pid = fork()) != 0) {
		if (pid > 0)
			waitpid(pid, NULL, 0);
		return;
	}
	setsid();
	if (fork() != 0)
		_exit(0);
	signal(SIGTERM, SIG_IGN);
	/* Its own line, so that the harness's DeathWatcher sees it die (a daemon-death line). */
	snprintf(line, sizeof line, " parent=%ld", (long)parent);
	record(record_fd, "daemon", who, line);
	close(record_fd);
	if ((fd = open(hb, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) == -1)
		_exit(3);
	for (int i = 0; i < GRANDCHILD_MAX_S * 50; i++) {
		n = snprintf(line, sizeof line, "hb %s %ld %ld %" PRIu64 "\n", who, (long)getpid(),
		             (long)parent, now_ns());
		if (write(fd, line, (size_t)n) != n)
			_exit(3);
		usleep(20000);
	}
	_exit(0);
}

/* Sleep until hold_ms has passed (forever if -1) or SIGTERM arrives; 1 if terminated. */
static int
hold(long long hold_ms, const sigset_t *unblocked)
{
	uint64_t deadline = hold_ms < 0 ? 0 : now_ns() + (uint64_t)hold_ms * 1000000ULL;

	for (;;) {
		struct timespec ts, *tsp = NULL;

		if (got_term)
			return 1;
		if (hold_ms >= 0) {
			uint64_t now = now_ns();
			if (now >= deadline)
				return 0;
			ts.tv_sec = (time_t)((deadline - now) / 1000000000ULL);
			ts.tv_nsec = (long)((deadline - now) % 1000000000ULL);
			tsp = &ts;
		}
		/* ppoll unblocks SIGTERM only while it waits: no lost wake-up. */
		if (ppoll(NULL, 0, tsp, unblocked) == -1 && errno != EINTR) {
			fprintf(stderr, "lk-record: ppoll: %s\n", strerror(errno));
			exit(3);
		}
	}
}

int
main(int argc, char **argv)
{
	struct options o;
	struct sigaction sa;
	sigset_t term, old;
	char fields[1536] = "", jobfield[512] = "", slotfield[32] = "";
	int record_fd, lock_fd = -1, slot = -1;
	uint64_t born;

	parse_options(argc, argv, &o);

	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old);
	sigdelset(&old, SIGTERM);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = o.ignore_term ? SIG_IGN : term_cb;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);

	record_fd = open(o.record, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (record_fd == -1) {
		fprintf(stderr, "lk-record: open %s: %s\n", o.record, strerror(errno));
		return 3;
	}

	add_field(jobfield, sizeof jobfield, "job", getenv("LEASEKEEPER_JOB"));
	if (strcmp(o.lock, "-") != 0) {
		lock_fd = take_lock(&o, &slot);
		if (o.slots > 1)
			snprintf(slotfield, sizeof slotfield, " slot=%d", slot);
		if (lock_fd == -1) {
			snprintf(fields, sizeof fields, "%s%s", jobfield, slotfield);
			record(record_fd, "overlap", o.who, fields);
		}
	}

	snprintf(fields, sizeof fields, "%s", jobfield);
	add_field(fields, sizeof fields, "fence", getenv("LEASEKEEPER_FENCE"));
	add_field(fields, sizeof fields, "node", getenv("LEASEKEEPER_NODE"));
	add_field(fields, sizeof fields, "leases", getenv("LEASEKEEPER_LEASES"));
	add_field(fields, sizeof fields, "tick", getenv("LEASEKEEPER_TICK"));
	add_field(fields, sizeof fields, "run", getenv("LEASEKEEPER_RUN_ID"));
	snprintf(fields + strlen(fields), sizeof fields - strlen(fields), " pgid=%ld%s",
	         (long)getpgrp(), slotfield);
	if ((born = born_ns(getpgrp())) != 0)
		snprintf(fields + strlen(fields), sizeof fields - strlen(fields), " born=%" PRIu64,
		         born);
	record(record_fd, "start", o.who, fields);

	for (int i = 0; i < o.grandchildren; i++) {
		pid_t pid = fork();
		if (pid == 0)
			grandchild(record_fd);
		if (pid == -1)
			fprintf(stderr, "lk-record: fork: %s\n", strerror(errno));
	}

	if (o.daemon_hb != NULL)
		daemon_start(o.who, o.daemon_hb, record_fd);

	if (hold(o.hold_ms, &old)) {
		record(record_fd, "end", o.who, " reason=term");
		return 0;
	}
	record(record_fd, "end", o.who, " reason=done");
	(void)lock_fd; /* held until exit */
	return o.exit_code;
}
