/* SPDX-License-Identifier: Apache-2.0 */
/* test_proto.c: main <-> supervisor frames through a connection's reader; the start spec. */

#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "proto.h"

/* A frame as proto_send writes it: the header, then the payload. */
static size_t
frame(char *buf, uint32_t type, const void *payload, size_t len)
{
	struct {
		uint32_t type, job;
		uint64_t epoch;
		int64_t v1, v2;
	} hdr = {type, 7, 3, -1, 2000};

	memcpy(buf, &hdr, sizeof hdr);
	memcpy(buf + sizeof hdr, payload, len);
	return sizeof hdr + len;
}

static int received;
static struct proto_msg got;
static char got_payload[64];

/* Keep what the connection delivers (its payload is valid only during the callback). */
static void
keep_cb(const struct proto_msg *m, void *arg)
{
	(void)arg;
	received++;
	got = *m;
	assert_int_equal(m->payload[m->len], '\0'); /* NUL-terminated, as promised */
	memcpy(got_payload, m->payload, m->len < sizeof got_payload ? m->len : sizeof got_payload);
	got.payload = got_payload;
}

/* A connection's reader on one end of a SEQPACKET pair; raw frames go in at the other. */
struct reader {
	struct event_base *base;
	struct proto_conn *conn;
	int peer;
};

static void
reader_open(struct reader *r)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	r->base = event_base_new();
	r->conn = proto_conn_new(r->base, sv[0], keep_cb, NULL, NULL);
	r->peer = sv[1];
}

static void
reader_close(struct reader *r)
{
	proto_conn_free(r->conn);
	close(r->peer);
	event_base_free(r->base);
}

/* Send len bytes as one message and let the reader read: how many messages it delivered. */
static int
deliver(struct reader *r, const void *buf, size_t len)
{
	received = 0;
	assert_int_equal(send(r->peer, buf, len, 0), (ssize_t)len);
	event_base_loop(r->base, EVLOOP_NONBLOCK);
	return received;
}

/* A well-formed frame is delivered; short, oversized and unknown ones are dropped. */
static void
test_decode(void **state)
{
	static char buf[32 + PROTO_MAX_PAYLOAD + 2];
	struct reader r;
	size_t n;

	(void)state;
	reader_open(&r);
	n = frame(buf, PROTO_STOP, "ab", 2);
	assert_int_equal(deliver(&r, buf, n), 1);
	assert_int_equal(got.type, PROTO_STOP);
	assert_int_equal(got.job, 7);
	assert_int_equal(got.epoch, 3);
	assert_int_equal(got.v1, -1);
	assert_int_equal(got.v2, 2000);
	assert_int_equal(got.len, 2);
	assert_memory_equal(got.payload, "ab", 2);
	assert_int_equal(deliver(&r, buf, n - 3), 0);
	n = frame(buf, 0, "", 0);
	assert_int_equal(deliver(&r, buf, n), 0);
	n = frame(buf, PROTO_STALE_GONE + 1, "", 0);
	assert_int_equal(deliver(&r, buf, n), 0);
	memset(buf + 32, 'x', PROTO_MAX_PAYLOAD + 1);
	n = frame(buf, PROTO_START_FAILED, buf + 32, PROTO_MAX_PAYLOAD);
	assert_int_equal(deliver(&r, buf, n), 1);
	assert_int_equal(got.len, PROTO_MAX_PAYLOAD);
	assert_int_equal(deliver(&r, buf, n + 1), 0);
	/* None of that ended the connection. */
	n = frame(buf, PROTO_EPOCH_END, "", 0);
	assert_int_equal(deliver(&r, buf, n), 1);
	reader_close(&r);
}

/* A frame longer than the largest payload is refused, not cut to fit and delivered. */
static void
test_oversized_frame(void **state)
{
	static char buf[32 + PROTO_MAX_PAYLOAD + 1];
	struct reader r;
	size_t n;

	(void)state;
	reader_open(&r);
	received = 0;
	memset(buf + 32, 'a', PROTO_MAX_PAYLOAD + 1);
	n = frame(buf, PROTO_START, buf + 32, PROTO_MAX_PAYLOAD + 1);
	assert_int_equal(send(r.peer, buf, n, 0), (ssize_t)n);
	n = frame(buf, PROTO_EPOCH_END, "", 0);
	assert_int_equal(send(r.peer, buf, n, 0), (ssize_t)n);
	event_base_loop(r.base, EVLOOP_NONBLOCK);
	assert_int_equal(received, 1); /* the second frame only */
	assert_int_equal(got.type, PROTO_EPOCH_END);
	assert_int_equal(got.len, 0);
	reader_close(&r);
}

/* Every message type goes through proto_send and comes out the other end as it went in. */
static void
test_roundtrip(void **state)
{
	struct event_base *base = event_base_new();
	struct proto_conn *a, *b;
	const char *names[PROTO_STALE_GONE + 1] = {NULL};
	uint32_t type, t;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	a = proto_conn_new(base, sv[0], keep_cb, NULL, NULL);
	b = proto_conn_new(base, sv[1], keep_cb, NULL, NULL);
	for (type = PROTO_START; type <= PROTO_STALE_GONE; type++) {
		received = 0;
		proto_send(a, type, 40 + type, 1000 + type, -(int64_t)type, INT64_MAX - type,
		           "spec", type == PROTO_STARTED ? 0 : 4);
		event_base_loop(base, EVLOOP_NONBLOCK);
		assert_int_equal(received, 1);
		assert_int_equal(got.type, type);
		assert_int_equal(got.job, 40 + type);
		assert_int_equal(got.epoch, 1000 + type);
		assert_true(got.v1 == -(int64_t)type);
		assert_true(got.v2 == INT64_MAX - (int64_t)type);
		assert_int_equal(got.len, type == PROTO_STARTED ? 0 : 4);
		assert_memory_equal(got.payload, "spec", got.len);
		/* Each type has a name of its own, for the logs. */
		names[type] = proto_type_name(type);
		assert_string_not_equal(names[type], "?");
		for (t = PROTO_START; t < type; t++)
			assert_string_not_equal(names[t], names[type]);
	}
	assert_string_equal(proto_type_name(0), "?");
	assert_string_equal(proto_type_name(PROTO_STALE_GONE + 1), "?");
	proto_conn_free(a);
	proto_conn_free(b);
	event_base_free(base);
}

static int other_reads;

/* The other connection's reader: counts. */
static void
other_cb(const struct proto_msg *m, void *arg)
{
	(void)m;
	(void)arg;
	other_reads++;
}

/*
 * A peer that keeps the socket full does not starve the loop: one turn reads at most 64
 * messages of it, another connection ready meanwhile is read in the same turn, and the rest
 * comes in the next turns.
 */
static void
test_read_capped_per_turn(void **state)
{
	char buf[128];
	struct reader r;
	struct proto_conn *other;
	int sv[2], i, turns;
	size_t n = frame(buf, PROTO_STARTED, "", 0);

	(void)state;
	reader_open(&r);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	other = proto_conn_new(r.base, sv[0], other_cb, NULL, NULL);
	for (i = 0; i < 200; i++)
		assert_int_equal(send(r.peer, buf, n, 0), (ssize_t)n);
	assert_int_equal(send(sv[1], buf, n, 0), (ssize_t)n);
	received = other_reads = 0;
	event_base_loop(r.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(received, 64);
	assert_int_equal(other_reads, 1);
	for (turns = 1; received < 200 && turns < 10; turns++)
		event_base_loop(r.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(received, 200);
	assert_int_equal(turns, 4); /* 64 + 64 + 64 + 8 */
	proto_conn_free(other);
	close(sv[1]);
	memset(&got, 0, sizeof got);
	reader_close(&r);
}

/* A frame shorter than the header is refused, whatever its first bytes say. */
static void
test_truncated_frame(void **state)
{
	char buf[64];
	struct reader r;
	size_t n, len;

	(void)state;
	reader_open(&r);
	n = frame(buf, PROTO_EPOCH_END, "", 0);
	for (len = 1; len < n; len++)
		assert_int_equal(deliver(&r, buf, len), 0);
	assert_int_equal(deliver(&r, buf, n), 1);
	/* An empty message is not one either: recv() cannot tell it from the peer's end. */
	assert_int_equal(deliver(&r, buf, 0), 0);
	reader_close(&r);
}

/* Decode a spec written as tag/value pairs; returns proto_spec_parse's result. */
static int
parse(const char *const *items, struct proto_run *spec, char **cause)
{
	struct proto_spec s = {NULL, 0};
	int r;

	for (; *items != NULL; items++)
		proto_spec_add(&s, (enum proto_tag)(*items)[0], *items + 1);
	r = proto_spec_parse(s.buf, s.len, spec, cause);
	/* The spec's strings point into s.buf: tests only look at the numbers and counts. */
	proto_spec_free(&s);
	return r;
}

/* What main sends decodes into a run. */
static void
test_spec_ok(void **state)
{
	const char *items[] = {"njob",        "a/bin/sh",  "a-c",     "aecho hi", "eA=1",
	                       "eB=",         "w/tmp",     "unobody", "gnogroup", "m22",
	                       "o/tmp/x.log", "M10485760", "k2500",   NULL};
	struct proto_run spec;
	char *cause = NULL;

	(void)state;
	assert_int_equal(parse(items, &spec, &cause), 0);
	assert_non_null(spec.argv[2]);
	assert_null(spec.argv[3]);
	assert_non_null(spec.env[1]);
	assert_null(spec.env[2]);
	assert_int_equal(spec.umask, 022);
	assert_int_equal(spec.log_max, 10485760);
	assert_int_equal(spec.grace_ms, 2500);
	assert_int_equal(spec.inherit_env, 0); /* a job starts from a clean environment */
	proto_run_free(&spec);
}

/* exec's command keeps the caller's environment, and says so with an empty 'i'. */
static void
test_spec_inherit_env(void **state)
{
	const char *items[] = {"atrue", "i", "eA=1", NULL};
	struct proto_run spec;
	char *cause = NULL;

	(void)state;
	assert_int_equal(parse(items, &spec, &cause), 0);
	assert_int_equal(spec.inherit_env, 1);
	proto_run_free(&spec);
}

/* A malformed spec is refused with a reason, never half-run or run with wrapped numbers. */
static void
test_spec_bad(void **state)
{
	static const char *const cases[][4] = {
	    {"njob", NULL},                           /* no command */
	    {"a", NULL},                              /* an empty command */
	    {"atrue", "k99999999999999999999", NULL}, /* grace wraps around */
	    {"atrue", "k18446744073709552", NULL},    /* grace * 1e6 ns wraps around */
	    {"atrue", "k1x", NULL},
	    {"atrue", "m999", NULL},
	    {"atrue", "m-1", NULL},
	    {"atrue", "eNOEQUALS", NULL},
	    {"atrue", "e=x", NULL},
	    {"atrue", "zwhat", NULL}, /* unknown tag */
	    {"atrue", "nx", "ny", NULL},
	    {"atrue", "orelative.log", NULL},
	    {"atrue", "M", NULL},
	    {"atrue", "i", "i", NULL},
	};
	struct proto_run spec;
	char *cause;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cause = NULL;
		if (parse(cases[i], &spec, &cause) != -1)
			fail_msg("case %zu was accepted", i);
		assert_non_null(cause);
		free(cause);
	}
}

/* Limits travel as their own tags, and only in range; what main writes reads back. */
static void
test_spec_limits(void **state)
{
	const char *items[] = {"atrue", "X536870912", "H402653184", "c150", "T64", "W50", NULL};
	static const char *const bad[][3] = {
	    {"atrue", "X0", NULL},       {"atrue", "c100001", NULL},
	    {"atrue", "T4194305", NULL}, {"atrue", "W10001", NULL},
	    {"atrue", "X1k", NULL},      {"atrue", "X", NULL},
	    {"atrue", "X-5", NULL},      {"atrue", "X4611686018427387905", NULL},
	};
	struct proto_limits l = {1u << 30, 0, 25, 0, 100};
	struct proto_spec s = {NULL, 0};
	struct proto_run spec;
	char *cause = NULL;
	size_t i;

	(void)state;
	assert_int_equal(parse(items, &spec, &cause), 0);
	assert_int_equal(spec.limits.memory_max, 536870912);
	assert_int_equal(spec.limits.memory_high, 402653184);
	assert_int_equal(spec.limits.cpu_max, 150);
	assert_int_equal(spec.limits.tasks_max, 64);
	assert_int_equal(spec.limits.io_weight, 50);
	proto_run_free(&spec);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause = NULL;
		if (parse(bad[i], &spec, &cause) != -1)
			fail_msg("limit case %zu was accepted", i);
		free(cause);
	}
	/* No limits: all 0; those written by proto_spec_add_limits read back, 0s left out. */
	assert_int_equal(parse((const char *[]){"atrue", NULL}, &spec, &cause), 0);
	assert_int_equal(spec.limits.memory_max + spec.limits.cpu_max + spec.limits.io_weight, 0);
	proto_run_free(&spec);
	proto_spec_add(&s, PROTO_TAG_ARG, "true");
	proto_spec_add_limits(&s, &l);
	assert_int_equal(proto_spec_parse(s.buf, s.len, &spec, &cause), 0);
	assert_memory_equal(&spec.limits, &l, sizeof l);
	proto_run_free(&spec);
	proto_spec_free(&s);
}

/* A run's usage, PROTO_EXITED's payload: what is known reads back; the rest is -1. */
static void
test_usage(void **state)
{
	struct proto_usage u, back;
	struct proto_spec s = {NULL, 0};

	(void)state;
	proto_usage_init(&u);
	u.cpu_usec = 1234567;
	u.mem_peak = 40960;
	proto_usage_add(&s, &u);
	assert_int_equal(proto_usage_parse(s.buf, s.len, &back), 0);
	assert_int_equal(back.cpu_usec, 1234567);
	assert_int_equal(back.mem_peak, 40960);
	proto_spec_free(&s);
	u.mem_peak = -1;
	proto_usage_add(&s, &u);
	assert_int_equal(proto_usage_parse(s.buf, s.len, &back), 0);
	assert_int_equal(back.cpu_usec, 1234567);
	assert_int_equal(back.mem_peak, -1);
	proto_spec_free(&s);
	/* none (a process-group run, or an older supervisor): all -1 */
	assert_int_equal(proto_usage_parse("", 0, &back), 0);
	assert_int_equal(back.cpu_usec, -1);
	/* malformed: refused, all -1 */
	assert_int_equal(proto_usage_parse("C12x", 5, &back), -1);
	assert_int_equal(back.cpu_usec, -1);
	assert_int_equal(proto_usage_parse("Z1", 3, &back), -1);
	assert_int_equal(proto_usage_parse("C1", 2, &back), -1);
	assert_int_equal(back.cpu_usec, -1);
	assert_string_equal(proto_exit_reason_name(PROTO_EXIT_OOM), "oom");
}

/* A run's id rides in the start spec: read back; empty, too long or odd bytes refused. */
static void
test_spec_run_id(void **state)
{
	struct proto_spec s = {NULL, 0};
	struct proto_run spec;
	char *cause = NULL, longid[PROTO_MAX_RUN_ID + 2];
	const char *bad[] = {"", "a b", "a\nrun=x", longid};
	size_t i;

	(void)state;
	memset(longid, 'x', sizeof longid - 1);
	longid[sizeof longid - 1] = '\0';
	proto_spec_add(&s, PROTO_TAG_ARG, "true");
	proto_spec_add(&s, PROTO_TAG_RUN_ID, "alpha-1764150000-4");
	assert_int_equal(proto_spec_parse(s.buf, s.len, &spec, &cause), 0);
	assert_string_equal(spec.run_id, "alpha-1764150000-4");
	proto_run_free(&spec);
	proto_spec_free(&s);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		proto_spec_add(&s, PROTO_TAG_ARG, "true");
		proto_spec_add(&s, PROTO_TAG_RUN_ID, bad[i]);
		assert_int_equal(proto_spec_parse(s.buf, s.len, &spec, &cause), -1);
		assert_string_equal(cause, "bad run id");
		free(cause);
		cause = NULL;
		proto_spec_free(&s);
	}
}

/* The supervisor's times ride in EXITED: each reads back; a why or signal out of range is refused. */
static void
test_usage_times(void **state)
{
	struct proto_usage u, back;
	struct proto_spec s = {NULL, 0};

	(void)state;
	proto_usage_init(&u);
	u.exec_ms = 1764150000123;
	u.term_ms = 1764150003100;
	u.term_sig = 15;
	u.term_why = PROTO_WHY_DEADLINE;
	u.kill_ms = 1764150004100;
	u.kill_why = PROTO_WHY_GRACE;
	u.end_ms = 1764150004120;
	proto_usage_add(&s, &u);
	assert_int_equal(proto_usage_parse(s.buf, s.len, &back), 0);
	assert_int_equal(back.exec_ms, u.exec_ms);
	assert_int_equal(back.term_ms, u.term_ms);
	assert_int_equal(back.term_sig, 15);
	assert_int_equal(back.term_why, PROTO_WHY_DEADLINE);
	assert_int_equal(back.kill_ms, u.kill_ms);
	assert_int_equal(back.kill_why, PROTO_WHY_GRACE);
	assert_int_equal(back.end_ms, u.end_ms);
	assert_int_equal(back.cpu_usec, -1);
	proto_spec_free(&s);
	/* none sent: -1, no signal */
	assert_int_equal(proto_usage_parse("", 0, &back), 0);
	assert_int_equal(back.exec_ms, -1);
	assert_int_equal(back.kill_ms, -1);
	assert_int_equal(back.term_sig, 0);
	assert_int_equal(back.kill_why, PROTO_WHY_NONE);
	assert_int_equal(proto_usage_parse("R99", 4, &back), -1);
	assert_int_equal(proto_usage_parse("q65", 4, &back), -1);
	assert_int_equal(proto_usage_parse("R8", 3, &back), -1); /* one digit past the most */
	assert_int_equal(proto_usage_parse("R7", 3, &back), 0);
	assert_int_equal(back.term_sig, 0);
	assert_string_equal(proto_signal_why_name(PROTO_WHY_DEADLINE), "lease_deadline");
}

/* The output's end rides in EXITED: it reads back; twice, or over PROTO_MAX_TAIL, is refused. */
static void
test_usage_output(void **state)
{
	struct proto_usage u, back;
	struct proto_spec s = {NULL, 0};
	struct proto_run spec;
	char *big, *cause = NULL;

	(void)state;
	proto_usage_init(&u);
	u.mem_peak = 7;
	u.output = "last line\n";
	u.output_len = 10;
	proto_usage_add(&s, &u);
	assert_int_equal(proto_usage_parse(s.buf, s.len, &back), 0);
	assert_int_equal(back.mem_peak, 7);
	assert_int_equal(back.output_len, 10);
	assert_memory_equal(back.output, "last line\n", 10);
	proto_usage_add(&s, &u);
	assert_int_equal(proto_usage_parse(s.buf, s.len, &back), -1);
	assert_null(back.output);
	proto_spec_free(&s);
	/* more than the most: the writer keeps the end, a reader refuses more */
	big = malloc(PROTO_MAX_TAIL + 2);
	memset(big, 'x', PROTO_MAX_TAIL + 1);
	big[0] = 'A';
	big[PROTO_MAX_TAIL + 1] = '\0';
	u.output = big;
	u.output_len = PROTO_MAX_TAIL + 1;
	proto_usage_add(&s, &u);
	assert_int_equal(proto_usage_parse(s.buf, s.len, &back), 0);
	assert_int_equal(back.output_len, PROTO_MAX_TAIL);
	assert_int_equal(back.output[0], 'x');
	proto_spec_free(&s);
	proto_spec_add(&s, PROTO_TAG_OUTPUT, big);
	assert_int_equal(proto_usage_parse(s.buf, s.len, &back), -1);
	proto_spec_free(&s);
	free(big);
	/* the start spec says how much to keep, at most PROTO_MAX_TAIL */
	proto_spec_add(&s, PROTO_TAG_ARG, "true");
	proto_spec_add(&s, PROTO_TAG_TAIL, "4096");
	assert_int_equal(proto_spec_parse(s.buf, s.len, &spec, &cause), 0);
	assert_int_equal(spec.tail_max, 4096);
	proto_run_free(&spec);
	proto_spec_free(&s);
	proto_spec_add(&s, PROTO_TAG_ARG, "true");
	proto_spec_add(&s, PROTO_TAG_TAIL, "16385");
	assert_int_equal(proto_spec_parse(s.buf, s.len, &spec, &cause), -1);
	assert_string_equal(cause, "bad output tail size");
	free(cause);
	proto_spec_free(&s);
	/* a hook: its own timeout, more than 0 */
	proto_spec_add(&s, PROTO_TAG_ARG, "true");
	proto_spec_add(&s, PROTO_TAG_HOOK, "30000");
	assert_int_equal(proto_spec_parse(s.buf, s.len, &spec, &cause), 0);
	assert_int_equal(spec.hook_ms, 30000);
	proto_run_free(&spec);
	proto_spec_free(&s);
	proto_spec_add(&s, PROTO_TAG_ARG, "true");
	proto_spec_add(&s, PROTO_TAG_HOOK, "0");
	assert_int_equal(proto_spec_parse(s.buf, s.len, &spec, &cause), -1);
	assert_string_equal(cause, "bad hook timeout");
	free(cause);
	proto_spec_free(&s);
}

/* A value without its NUL, or a tag alone at the end, is refused. */
static void
test_spec_truncated(void **state)
{
	struct proto_run spec;
	char *cause = NULL;

	(void)state;
	assert_int_equal(proto_spec_parse("atrue\0ash", 9, &spec, &cause), -1);
	free(cause);
	cause = NULL;
	assert_int_equal(proto_spec_parse("atrue\0a", 7, &spec, &cause), -1);
	free(cause);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode),       cmocka_unit_test(test_oversized_frame),
	    cmocka_unit_test(test_spec_ok),      cmocka_unit_test(test_spec_inherit_env),
	    cmocka_unit_test(test_spec_bad),     cmocka_unit_test(test_spec_truncated),
	    cmocka_unit_test(test_roundtrip),    cmocka_unit_test(test_truncated_frame),
	    cmocka_unit_test(test_spec_limits),  cmocka_unit_test(test_usage),
	    cmocka_unit_test(test_usage_output), cmocka_unit_test(test_usage_times),
	    cmocka_unit_test(test_spec_run_id),  cmocka_unit_test(test_read_capped_per_turn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
