/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/*
 * proto.c: the messages between the main process and the supervisor.
 *
 * A SOCK_SEQPACKET socketpair keeps message boundaries, so a message is one fixed
 * header and an optional payload in one sendmsg(). Neither side may block on the other
 * (a stopped main must not stall the supervisor): sockets are non-blocking and what
 * cannot be sent at once waits in an outbox drained by a write event.
 *
 * The start spec, PROTO_START's payload, is written (proto_spec_add, by runspec.c in main)
 * and read (proto_spec_parse, by the supervisor) here, so one file owns its format.
 */

#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "compat.h"
#include "log.h"
#include "proto.h"
#include "xmalloc.h"

/*
 * Messages, and bytes, read per call of the read event: the rest waits for the loop's next
 * turn (the event is level-triggered, so it is called again then), so that a peer that
 * keeps the socket full does not starve the loop's other events.
 */
#define PROTO_READ_MAX_MSGS  64
#define PROTO_READ_MAX_BYTES (256 * 1024)

struct proto_hdr {
	uint32_t type;
	uint32_t job;
	uint64_t epoch;
	int64_t v1;
	int64_t v2;
};

struct proto_out {
	struct proto_hdr hdr;
	char *payload;
	size_t len;
	TAILQ_ENTRY(proto_out) entry;
};

struct proto_conn {
	int fd;
	struct event *rev;
	struct event *wev;
	proto_msg_cb msg_cb;
	proto_eof_cb eof_cb;
	void *arg;
	int eof;
	TAILQ_HEAD(, proto_out) outbox;
};

/* Report the end of the peer once. */
static void
proto_conn_eof(struct proto_conn *c)
{
	if (c->eof)
		return;
	c->eof = 1;
	event_del(c->rev);
	event_del(c->wev);
	if (c->eof_cb != NULL)
		c->eof_cb(c->arg);
}

/*
 * Decode one frame (a header and its payload, as one recv() returned it) into out, whose
 * payload then points into buf; -1 if truncated, oversized or of no known type.
 */
static int
proto_decode(const void *buf, size_t len, struct proto_msg *out)
{
	struct proto_hdr hdr;

	if (len < sizeof hdr || len - sizeof hdr > PROTO_MAX_PAYLOAD)
		return -1;
	memcpy(&hdr, buf, sizeof hdr);
	if (hdr.type < PROTO_START || hdr.type > PROTO_STALE_GONE)
		return -1;
	out->type = hdr.type;
	out->job = hdr.job;
	out->epoch = hdr.epoch;
	out->v1 = hdr.v1;
	out->v2 = hdr.v2;
	out->len = len - sizeof hdr;
	out->payload = (const char *)buf + sizeof hdr;
	return 0;
}

/* Log one message sent or received, by name (debug). */
static void
proto_log(const char *verb, uint32_t type, uint32_t job, uint64_t epoch, int64_t v1, int64_t v2)
{
	if (type == PROTO_OUTPUT)
		return; /* one a chunk of output: too many to log */
	if (type == PROTO_EXITED)
		log_debug("proto: %s %s job %u epoch %llu v1 %lld (%s)", verb,
		          proto_type_name(type), job, (unsigned long long)epoch, (long long)v1,
		          proto_exit_reason_name((enum proto_exit_reason)v2));
	else
		log_debug("proto: %s %s job %u epoch %llu v1 %lld v2 %lld", verb,
		          proto_type_name(type), job, (unsigned long long)epoch, (long long)v1,
		          (long long)v2);
}

/* Read the messages waiting, up to PROTO_READ_MAX_MSGS and PROTO_READ_MAX_BYTES. */
static void
proto_read_cb(int fd, short what, void *arg)
{
	struct proto_conn *c = arg;
	static char buf[sizeof(struct proto_hdr) + PROTO_MAX_PAYLOAD + 1];
	struct proto_msg msg;
	ssize_t n;
	size_t msgs = 0, bytes = 0;

	(void)what;
	while (!c->eof && msgs < PROTO_READ_MAX_MSGS && bytes < PROTO_READ_MAX_BYTES) {
		/* MSG_TRUNC: the real size, so a message cut to fit is refused, not run. */
		n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				log_warn("proto: recv");
			proto_conn_eof(c);
			return;
		}
		msgs++;
		bytes += (size_t)n;
		if ((size_t)n > sizeof buf - 1 || proto_decode(buf, (size_t)n, &msg) != 0) {
			log_warnx("proto: bad message (%zd bytes) ignored", n);
			continue;
		}
		buf[n] = '\0';
		proto_log("received", msg.type, msg.job, msg.epoch, msg.v1, msg.v2);
		c->msg_cb(&msg, c->arg);
	}
}

/* Try to send one message now: 0 sent, -1 would block, -2 the peer is gone (or failed). */
static int
proto_write(struct proto_conn *c, const struct proto_hdr *hdr, const char *payload, size_t len)
{
	struct iovec iov[2];
	struct msghdr mh;
	ssize_t n;

	memset(&mh, 0, sizeof mh);
	iov[0].iov_base = (void *)hdr;
	iov[0].iov_len = sizeof *hdr;
	iov[1].iov_base = (void *)payload;
	iov[1].iov_len = len;
	mh.msg_iov = iov;
	mh.msg_iovlen = len > 0 ? 2 : 1;
	do
		n = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return 0;
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
		if (errno != EPIPE && errno != ECONNRESET)
			log_warn("proto: sendmsg");
		return -2;
	}
	return -1;
}

/* Drain the outbox while the socket takes it. */
static void
proto_flush_cb(int fd, short what, void *arg)
{
	struct proto_conn *c = arg;
	struct proto_out *o;
	int rc;

	(void)fd;
	(void)what;
	while ((o = TAILQ_FIRST(&c->outbox)) != NULL) {
		rc = proto_write(c, &o->hdr, o->payload, o->len);
		if (rc == -1) {
			event_add(c->wev, NULL);
			return;
		}
		TAILQ_REMOVE(&c->outbox, o, entry);
		free(o->payload);
		free(o);
		if (rc == -2) {
			proto_conn_eof(c);
			return;
		}
	}
}

/* Wrap a connected SEQPACKET socket. */
struct proto_conn *
proto_conn_new(struct event_base *base, int fd, proto_msg_cb msg_cb, proto_eof_cb eof_cb, void *arg)
{
	struct proto_conn *c = xcalloc(1, sizeof *c);
	int size = 4 * (PROTO_MAX_PAYLOAD + (int)sizeof(struct proto_hdr));

	c->fd = fd;
	c->msg_cb = msg_cb;
	c->eof_cb = eof_cb;
	c->arg = arg;
	TAILQ_INIT(&c->outbox);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
	c->rev = event_new(base, fd, EV_READ | EV_PERSIST, proto_read_cb, c);
	c->wev = event_new(base, fd, EV_WRITE, proto_flush_cb, c);
	event_add(c->rev, NULL);
	return c;
}

/* Free the connection and close its socket. */
void
proto_conn_free(struct proto_conn *c)
{
	struct proto_out *o;

	while ((o = TAILQ_FIRST(&c->outbox)) != NULL) {
		TAILQ_REMOVE(&c->outbox, o, entry);
		free(o->payload);
		free(o);
	}
	event_free(c->rev);
	event_free(c->wev);
	close(c->fd);
	free(c);
}

/* Send a message now, or queue it behind those already waiting. */
void
proto_send(struct proto_conn *c, uint32_t type, uint32_t job, uint64_t epoch, int64_t v1,
           int64_t v2, const void *payload, size_t len)
{
	struct proto_hdr hdr;
	struct proto_out *o;
	int rc;

	if (c->eof)
		return;
	if (len > PROTO_MAX_PAYLOAD) {
		/* Callers check sizes first; never send a message the peer would cut. */
		log_warnx("proto: message of %zu bytes is too large; not sent", len);
		return;
	}
	memset(&hdr, 0, sizeof hdr);
	hdr.type = type;
	hdr.job = job;
	hdr.epoch = epoch;
	hdr.v1 = v1;
	hdr.v2 = v2;
	proto_log("sending", type, job, epoch, v1, v2);
	if (TAILQ_EMPTY(&c->outbox)) {
		rc = proto_write(c, &hdr, payload, len);
		if (rc == 0)
			return;
		if (rc == -2) {
			proto_conn_eof(c);
			return;
		}
	}
	o = xcalloc(1, sizeof *o);
	o->hdr = hdr;
	if (len > 0) {
		o->payload = xmalloc(len);
		memcpy(o->payload, payload, len);
	}
	o->len = len;
	TAILQ_INSERT_TAIL(&c->outbox, o, entry);
	event_add(c->wev, NULL);
}

/*
 * Send a message only if it goes now, nothing queued before it: 0 sent, -1 dropped. For
 * what may be lost (a run's output to followers): it never grows the queue, so a stopped
 * or slow peer costs the sender no memory.
 */
int
proto_send_lossy(struct proto_conn *c, uint32_t type, uint32_t job, uint64_t epoch, int64_t v1,
                 const void *payload, size_t len)
{
	struct proto_hdr hdr;
	int rc;

	if (c->eof || !TAILQ_EMPTY(&c->outbox) || len > PROTO_MAX_PAYLOAD)
		return -1;
	memset(&hdr, 0, sizeof hdr);
	hdr.type = type;
	hdr.job = job;
	hdr.epoch = epoch;
	hdr.v1 = v1;
	rc = proto_write(c, &hdr, payload, len);
	if (rc == -2)
		proto_conn_eof(c);
	return rc == 0 ? 0 : -1;
}

/* Append one tagged string to a start spec. */
void
proto_spec_add(struct proto_spec *spec, enum proto_tag tag, const char *value)
{
	size_t vlen = strlen(value);

	spec->buf = xrealloc(spec->buf, spec->len + vlen + 2);
	spec->buf[spec->len] = (char)tag;
	memcpy(spec->buf + spec->len + 1, value, vlen + 1);
	spec->len += vlen + 2;
}

/* Free a start spec's buffer. */
void
proto_spec_free(struct proto_spec *spec)
{
	free(spec->buf);
	spec->buf = NULL;
	spec->len = 0;
}

/* Walk a start spec: 1 and the next tag and value, 0 at the end, -1 if malformed. */
static int
proto_spec_next(const char *payload, size_t len, size_t *off, char *tag, const char **value)
{
	const char *end;

	if (*off >= len)
		return 0;
	end = memchr(payload + *off + 1, '\0', len - *off - 1);
	if (*off + 1 >= len || end == NULL)
		return -1;
	*tag = payload[*off];
	*value = payload + *off + 1;
	*off = (size_t)(end - payload) + 1;
	return 1;
}

/* Parse an unsigned decimal of at most max; 0, or -1 if text is not one. */
static int
proto_spec_number(const char *text, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p;

	if (*text == '\0')
		return -1;
	for (p = text; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || (uint64_t)(*p - '0') > max || v > max / 10 ||
		    v * 10 > max - (uint64_t)(*p - '0'))
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	return 0;
}

/* Set a tag that may appear once; -1 with *cause the second time. */
static int
proto_spec_once(const char **slot, const char *value, char tag, char **cause)
{
	if (*slot != NULL) {
		xasprintf(cause, "tag '%c' given twice", tag);
		return -1;
	}
	*slot = value;
	return 0;
}

/* What proto_spec_parse collects before it checks it: the text of the valued tags, counts. */
struct proto_spec_raw {
	const char *log_max, *grace, *umask, *inherit, *tail, *hook;
	const char *lim[5]; /* memory_max, memory_high, cpu_max, tasks_max, io_weight */
	size_t argc, nenv;
};

/* Append an ARG or ENV value to run's argv or env (at most PROTO_SPEC_MAX_ITEMS each). */
static int
proto_spec_list_add(struct proto_run *run, struct proto_spec_raw *raw, char tag, const char *value,
                    char **cause)
{
	if (tag == PROTO_TAG_ARG) {
		if (raw->argc >= PROTO_SPEC_MAX_ITEMS) {
			xasprintf(cause, "more than %d arguments", PROTO_SPEC_MAX_ITEMS);
			return -1;
		}
		run->argv = xreallocarray(run->argv, raw->argc + 2, sizeof *run->argv);
		run->argv[raw->argc++] = (char *)value;
		run->argv[raw->argc] = NULL;
		return 0;
	}
	if (value[0] == '=' || strchr(value, '=') == NULL) {
		xasprintf(cause, "environment entry is not KEY=VALUE");
		return -1;
	}
	if (raw->nenv >= PROTO_SPEC_MAX_ITEMS) {
		xasprintf(cause, "more than %d environment entries", PROTO_SPEC_MAX_ITEMS);
		return -1;
	}
	run->env = xreallocarray(run->env, raw->nenv + 2, sizeof *run->env);
	run->env[raw->nenv++] = (char *)value;
	run->env[raw->nenv] = NULL;
	return 0;
}

/* Take one tag and its value into run or raw; -1 with *cause if it is unknown or repeated. */
static int
proto_spec_item(struct proto_run *run, struct proto_spec_raw *raw, char tag, const char *value,
                char **cause)
{
	switch (tag) {
	case PROTO_TAG_NAME:
		return proto_spec_once(&run->name, value, tag, cause);
	case PROTO_TAG_RUN_ID:
		return proto_spec_once(&run->run_id, value, tag, cause);
	case PROTO_TAG_ARG:
	case PROTO_TAG_ENV:
		return proto_spec_list_add(run, raw, tag, value, cause);
	case PROTO_TAG_INHERIT_ENV:
		run->inherit_env = 1;
		return proto_spec_once(&raw->inherit, value, tag, cause);
	case PROTO_TAG_WORKDIR:
		return proto_spec_once(&run->workdir, value, tag, cause);
	case PROTO_TAG_USER:
		return proto_spec_once(&run->user, value, tag, cause);
	case PROTO_TAG_GROUP:
		return proto_spec_once(&run->group, value, tag, cause);
	case PROTO_TAG_UMASK:
		return proto_spec_once(&raw->umask, value, tag, cause);
	case PROTO_TAG_LOG:
		return proto_spec_once(&run->log_path, value, tag, cause);
	case PROTO_TAG_LOG_MAX:
		return proto_spec_once(&raw->log_max, value, tag, cause);
	case PROTO_TAG_GRACE:
		return proto_spec_once(&raw->grace, value, tag, cause);
	case PROTO_TAG_TAIL:
		return proto_spec_once(&raw->tail, value, tag, cause);
	case PROTO_TAG_HOOK:
		return proto_spec_once(&raw->hook, value, tag, cause);
	case PROTO_TAG_MEMORY_MAX:
		return proto_spec_once(&raw->lim[0], value, tag, cause);
	case PROTO_TAG_MEMORY_HIGH:
		return proto_spec_once(&raw->lim[1], value, tag, cause);
	case PROTO_TAG_CPU_MAX:
		return proto_spec_once(&raw->lim[2], value, tag, cause);
	case PROTO_TAG_TASKS_MAX:
		return proto_spec_once(&raw->lim[3], value, tag, cause);
	case PROTO_TAG_IO_WEIGHT:
		return proto_spec_once(&raw->lim[4], value, tag, cause);
	default:
		xasprintf(cause, "unknown tag 0x%02x", (unsigned char)tag);
		return -1;
	}
}

/* Check the command and log path, and decode raw's numbers into run; -1 with *cause. */
static int
proto_spec_check(struct proto_run *run, const struct proto_spec_raw *raw, char **cause)
{
	static const uint64_t lim_max[5] = {PROTO_MAX_MEMORY, PROTO_MAX_MEMORY,
	                                    PROTO_MAX_CPU_PERCENT, PROTO_MAX_TASKS,
	                                    PROTO_MAX_IO_WEIGHT};
	uint64_t *lim_out[5];
	int i;

	lim_out[0] = &run->limits.memory_max;
	lim_out[1] = &run->limits.memory_high;
	lim_out[2] = &run->limits.cpu_max;
	lim_out[3] = &run->limits.tasks_max;
	lim_out[4] = &run->limits.io_weight;
	if (run->argv == NULL || run->argv[0][0] == '\0') {
		*cause = xstrdup("no command");
		return -1;
	}
	if (run->run_id != NULL &&
	    (run->run_id[0] == '\0' || strlen(run->run_id) > PROTO_MAX_RUN_ID ||
	     strspn(run->run_id,
	            "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	            "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(run->run_id))) {
		*cause = xstrdup("bad run id");
		return -1;
	}
	if (run->log_path != NULL &&
	    (run->log_path[0] != '/' || strlen(run->log_path) >= PATH_MAX)) {
		*cause = xstrdup("the log file is not an absolute path shorter than PATH_MAX");
		return -1;
	}
	if (raw->log_max != NULL &&
	    proto_spec_number(raw->log_max, UINT64_MAX, &run->log_max) != 0) {
		*cause = xstrdup("bad log size");
		return -1;
	}
	if (raw->hook != NULL &&
	    (proto_spec_number(raw->hook, PROTO_MAX_GRACE_MS, &run->hook_ms) != 0 ||
	     run->hook_ms == 0)) {
		*cause = xstrdup("bad hook timeout");
		return -1;
	}
	if (raw->tail != NULL &&
	    proto_spec_number(raw->tail, PROTO_MAX_TAIL, &run->tail_max) != 0) {
		*cause = xstrdup("bad output tail size");
		return -1;
	}
	if (raw->grace != NULL &&
	    proto_spec_number(raw->grace, PROTO_MAX_GRACE_MS, &run->grace_ms) != 0) {
		*cause = xstrdup("bad kill grace");
		return -1;
	}
	if (raw->umask != NULL) {
		if (raw->umask[0] == '\0' || strspn(raw->umask, "01234567") != strlen(raw->umask) ||
		    strtol(raw->umask, NULL, 8) > 0777) {
			*cause = xstrdup("bad umask");
			return -1;
		}
		run->umask = (int)strtol(raw->umask, NULL, 8);
	}
	for (i = 0; i < 5; i++) {
		if (raw->lim[i] != NULL &&
		    (proto_spec_number(raw->lim[i], lim_max[i], lim_out[i]) != 0 ||
		     *lim_out[i] == 0)) {
			xasprintf(cause, "bad limit '%c'", "XHcTW"[i]);
			return -1;
		}
	}
	return 0;
}

/* Decode a start spec into run (strings point into payload); -1 with *cause if malformed. */
int
proto_spec_parse(const char *payload, size_t len, struct proto_run *run, char **cause)
{
	struct proto_spec_raw raw;
	const char *value;
	size_t off = 0;
	char tag;
	int r;

	memset(run, 0, sizeof *run);
	memset(&raw, 0, sizeof raw);
	run->grace_ms = PROTO_DEFAULT_GRACE_MS;
	run->umask = -1;
	while ((r = proto_spec_next(payload, len, &off, &tag, &value)) == 1) {
		if (proto_spec_item(run, &raw, tag, value, cause) != 0)
			goto fail;
	}
	if (r != 0) {
		*cause = xstrdup("a tag without its NUL-terminated value");
		goto fail;
	}
	if (proto_spec_check(run, &raw, cause) != 0)
		goto fail;
	return 0;

fail:
	proto_run_free(run);
	return -1;
}

/* Add a run's limits to a start spec. */
void
proto_spec_add_limits(struct proto_spec *spec, const struct proto_limits *l)
{
	const uint64_t v[5] = {l->memory_max, l->memory_high, l->cpu_max, l->tasks_max,
	                       l->io_weight};
	static const enum proto_tag tags[5] = {PROTO_TAG_MEMORY_MAX, PROTO_TAG_MEMORY_HIGH,
	                                       PROTO_TAG_CPU_MAX, PROTO_TAG_TASKS_MAX,
	                                       PROTO_TAG_IO_WEIGHT};
	char num[32];
	int i;

	for (i = 0; i < 5; i++) {
		if (v[i] == 0)
			continue;
		snprintf(num, sizeof num, "%llu", (unsigned long long)v[i]);
		proto_spec_add(spec, tags[i], num);
	}
}

/* A usage with nothing known. */
void
proto_usage_init(struct proto_usage *u)
{
	memset(u, 0, sizeof *u);
	u->cpu_usec = u->mem_peak = -1;
	u->exec_ms = u->end_ms = u->term_ms = u->kill_ms = -1;
	u->term_why = u->kill_why = PROTO_WHY_NONE;
}

/* Add one number to a usage payload, if it is known (>= 0). */
static void
proto_usage_number(struct proto_spec *spec, enum proto_tag tag, int64_t v)
{
	char num[32];

	if (v < 0)
		return;
	snprintf(num, sizeof num, "%lld", (long long)v);
	proto_spec_add(spec, tag, num);
}

/* A run's usage as PROTO_EXITED's payload: the values that are known, and the output. */
void
proto_usage_add(struct proto_spec *spec, const struct proto_usage *u)
{
	size_t n;

	proto_usage_number(spec, PROTO_TAG_CPU_USEC, u->cpu_usec);
	proto_usage_number(spec, PROTO_TAG_MEM_PEAK, u->mem_peak);
	proto_usage_number(spec, PROTO_TAG_EXEC_MS, u->exec_ms);
	proto_usage_number(spec, PROTO_TAG_END_MS, u->end_ms);
	proto_usage_number(spec, PROTO_TAG_TERM_MS, u->term_ms);
	proto_usage_number(spec, PROTO_TAG_TERM_SIG, u->term_sig > 0 ? u->term_sig : -1);
	proto_usage_number(spec, PROTO_TAG_TERM_WHY,
	                   u->term_why != PROTO_WHY_NONE ? (int64_t)u->term_why : -1);
	proto_usage_number(spec, PROTO_TAG_KILL_MS, u->kill_ms);
	proto_usage_number(spec, PROTO_TAG_KILL_WHY,
	                   u->kill_why != PROTO_WHY_NONE ? (int64_t)u->kill_why : -1);
	if (u->output != NULL) {
		n = u->output_len < PROTO_MAX_TAIL ? u->output_len : PROTO_MAX_TAIL;
		n = strnlen(u->output + (u->output_len - n), n); /* NUL-free by contract */
		spec->buf = xrealloc(spec->buf, spec->len + n + 2);
		spec->buf[spec->len] = (char)PROTO_TAG_OUTPUT;
		memcpy(spec->buf + spec->len + 1, u->output + (u->output_len - n), n);
		spec->buf[spec->len + 1 + n] = '\0';
		spec->len += n + 2;
	}
}

/* Set one number of a usage from its tag: 0, or -1 for a tag or value it cannot hold. */
static int
proto_usage_set(struct proto_usage *u, char tag, const char *value)
{
	uint64_t n, max = INT64_MAX;

	if (tag == PROTO_TAG_TERM_SIG)
		max = 64;
	else if (tag == PROTO_TAG_TERM_WHY || tag == PROTO_TAG_KILL_WHY)
		max = PROTO_WHY_MAX;
	if (proto_spec_number(value, max, &n) != 0)
		return -1;
	switch (tag) {
	case PROTO_TAG_CPU_USEC:
		u->cpu_usec = (int64_t)n;
		return 0;
	case PROTO_TAG_MEM_PEAK:
		u->mem_peak = (int64_t)n;
		return 0;
	case PROTO_TAG_EXEC_MS:
		u->exec_ms = (int64_t)n;
		return 0;
	case PROTO_TAG_END_MS:
		u->end_ms = (int64_t)n;
		return 0;
	case PROTO_TAG_TERM_MS:
		u->term_ms = (int64_t)n;
		return 0;
	case PROTO_TAG_TERM_SIG:
		u->term_sig = (int)n;
		return 0;
	case PROTO_TAG_TERM_WHY:
		u->term_why = (enum proto_signal_why)n;
		return 0;
	case PROTO_TAG_KILL_MS:
		u->kill_ms = (int64_t)n;
		return 0;
	case PROTO_TAG_KILL_WHY:
		u->kill_why = (enum proto_signal_why)n;
		return 0;
	default:
		return -1;
	}
}

/* Read PROTO_EXITED's payload back. */
int
proto_usage_parse(const char *payload, size_t len, struct proto_usage *u)
{
	const char *value;
	size_t off = 0;
	char tag;
	int r;

	proto_usage_init(u);
	while ((r = proto_spec_next(payload, len, &off, &tag, &value)) == 1) {
		if (tag == PROTO_TAG_OUTPUT) {
			if (u->output != NULL || strlen(value) > PROTO_MAX_TAIL)
				break;
			u->output = value;
			u->output_len = strlen(value);
			continue;
		}
		if (proto_usage_set(u, tag, value) != 0)
			break;
	}
	if (r != 0) {
		proto_usage_init(u);
		return -1;
	}
	return 0;
}

/* Free what proto_spec_parse allocated. */
void
proto_run_free(struct proto_run *run)
{
	free(run->argv);
	free(run->env);
	run->argv = run->env = NULL;
}

/* The name of a message type, for logs. */
const char *
proto_type_name(uint32_t type)
{
	switch (type) {
	case PROTO_START:
		return "START";
	case PROTO_STOP:
		return "STOP";
	case PROTO_DEADLINE:
		return "DEADLINE";
	case PROTO_EPOCH_END:
		return "EPOCH_END";
	case PROTO_STARTED:
		return "STARTED";
	case PROTO_START_FAILED:
		return "START_FAILED";
	case PROTO_EXITED:
		return "EXITED";
	case PROTO_HELLO:
		return "HELLO";
	case PROTO_OUTPUT:
		return "OUTPUT";
	case PROTO_STALE_GONE:
		return "STALE_GONE";
	}
	return "?";
}

/* The name of a containment mode, for logs, status and metrics. */
const char *
proto_containment_name(enum proto_containment mode)
{
	switch (mode) {
	case PROTO_CONTAIN_PGROUP:
		return "process-group";
	case PROTO_CONTAIN_CGROUP:
		return "cgroup";
	case PROTO_CONTAIN_FAILED:
		return "none";
	}
	return "?";
}

/* The name of an exit reason, for logs. */
const char *
proto_exit_reason_name(enum proto_exit_reason reason)
{
	switch (reason) {
	case PROTO_EXIT_NORMAL:
		return "exited";
	case PROTO_EXIT_STOPPED:
		return "stop";
	case PROTO_EXIT_DEADLINE:
		return "lease_deadline";
	case PROTO_EXIT_EPOCH:
		return "session_ended";
	case PROTO_EXIT_OOM:
		return "oom";
	}
	return "?";
}

/* The name of why a run was signalled: the run record's and the logs' word for it. */
const char *
proto_signal_why_name(enum proto_signal_why why)
{
	switch (why) {
	case PROTO_WHY_NONE:
		return "none";
	case PROTO_WHY_STOP:
		return "stop";
	case PROTO_WHY_DEADLINE:
		return "lease_deadline";
	case PROTO_WHY_SESSION:
		return "session_ended";
	case PROTO_WHY_MAIN_GONE:
		return "main_gone";
	case PROTO_WHY_GRACE:
		return "kill_grace";
	case PROTO_WHY_LEFTOVERS:
		return "leftovers";
	case PROTO_WHY_HOOK_TIMEOUT:
		return "hook_timeout";
	}
	return "?";
}
