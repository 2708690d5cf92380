/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_proto.c: the main <-> supervisor message codec, as the daemon reads it: the input is
 * sent as one message on a SOCK_SEQPACKET socketpair and read by a connection's reader
 * (proto_conn_new), which decodes the frame; a start spec it delivers is decoded as the
 * supervisor does (proto_spec_parse, which walks every tag), and an exit's usage as main
 * does (proto_usage_parse: usage, the supervisor's times of the run; with the output's end main makes valid UTF-8 for the run record,
 * utf8_valid, which must give what jansson accepts). The reader must deliver
 * exactly the frames that are well-formed, with their header and payload as sent, and a
 * spec or usage that decodes must survive being written again.
 */

#include <sys/socket.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include <jansson.h>

#include "proto.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The header as proto_send writes it. */
struct fuzz_proto_hdr {
	uint32_t type, job;
	uint64_t epoch;
	int64_t v1, v2;
};

/* One reader for every input, and the socket the input is sent on. */
static struct event_base *fuzz_base;
static struct proto_conn *fuzz_conn;
static int fuzz_peer = -1;

/* The input being read, and what the reader delivered of it. */
static const uint8_t *fuzz_data;
static size_t fuzz_size;
static int fuzz_delivered;

/* Count the argv and env entries of a decoded spec. */
static void
fuzz_proto_count(const struct proto_run *spec, size_t *argc, size_t *nenv)
{
	for (*argc = 0; spec->argv[*argc] != NULL; (*argc)++)
		;
	for (*nenv = 0; spec->env != NULL && spec->env[*nenv] != NULL; (*nenv)++)
		;
}

/* Write spec again the way main does, decode that, and compare. */
static void
fuzz_proto_again(const struct proto_run *spec)
{
	struct proto_spec out = {NULL, 0};
	struct proto_run back;
	char *cause = NULL, num[32];
	size_t i, argc, nenv, argc2, nenv2;

	if (spec->name != NULL)
		proto_spec_add(&out, PROTO_TAG_NAME, spec->name);
	if (spec->run_id != NULL)
		proto_spec_add(&out, PROTO_TAG_RUN_ID, spec->run_id);
	for (i = 0; spec->argv[i] != NULL; i++)
		proto_spec_add(&out, PROTO_TAG_ARG, spec->argv[i]);
	for (i = 0; spec->env != NULL && spec->env[i] != NULL; i++)
		proto_spec_add(&out, PROTO_TAG_ENV, spec->env[i]);
	if (spec->workdir != NULL)
		proto_spec_add(&out, PROTO_TAG_WORKDIR, spec->workdir);
	if (spec->user != NULL)
		proto_spec_add(&out, PROTO_TAG_USER, spec->user);
	if (spec->group != NULL)
		proto_spec_add(&out, PROTO_TAG_GROUP, spec->group);
	if (spec->umask >= 0) {
		snprintf(num, sizeof num, "%o", spec->umask);
		proto_spec_add(&out, PROTO_TAG_UMASK, num);
	}
	if (spec->log_path != NULL) {
		proto_spec_add(&out, PROTO_TAG_LOG, spec->log_path);
		snprintf(num, sizeof num, "%llu", (unsigned long long)spec->log_max);
		proto_spec_add(&out, PROTO_TAG_LOG_MAX, num);
	}
	snprintf(num, sizeof num, "%llu", (unsigned long long)spec->grace_ms);
	proto_spec_add(&out, PROTO_TAG_GRACE, num);
	proto_spec_add_limits(&out, &spec->limits);
	if (proto_spec_parse(out.buf, out.len, &back, &cause) != 0) {
		fprintf(stderr, "fuzz_proto: a decoded spec, written again, is refused: %s\n",
		        cause);
		abort();
	}
	fuzz_proto_count(spec, &argc, &nenv);
	fuzz_proto_count(&back, &argc2, &nenv2);
	if (argc != argc2 || nenv != nenv2 || back.grace_ms != spec->grace_ms ||
	    back.umask != spec->umask || strcmp(back.argv[0], spec->argv[0]) != 0 ||
	    memcmp(&back.limits, &spec->limits, sizeof back.limits) != 0) {
		fprintf(stderr, "fuzz_proto: a decoded spec reads back differently\n");
		abort();
	}
	proto_run_free(&back);
	proto_spec_free(&out);
}

/* A frame the reader delivered: it must be the input, and a start spec is decoded. */
static void
fuzz_proto_msg_cb(const struct proto_msg *msg, void *arg)
{
	struct fuzz_proto_hdr hdr;
	struct proto_run spec;
	char *payload, *cause = NULL;

	(void)arg;
	fuzz_delivered++;
	if (fuzz_size < sizeof hdr) {
		fprintf(stderr, "fuzz_proto: a frame of %zu bytes is delivered\n", fuzz_size);
		abort();
	}
	memcpy(&hdr, fuzz_data, sizeof hdr);
	if (msg->len != fuzz_size - sizeof hdr || msg->type != hdr.type || msg->job != hdr.job ||
	    msg->epoch != hdr.epoch || msg->v1 != hdr.v1 || msg->v2 != hdr.v2 ||
	    memcmp(msg->payload, fuzz_data + sizeof hdr, msg->len) != 0 ||
	    msg->payload[msg->len] != '\0') {
		fprintf(stderr, "fuzz_proto: the reader delivered something else than was sent\n");
		abort();
	}
	if (msg->type == PROTO_EXITED) {
		/* usage: what decodes must survive being written again */
		struct proto_usage u, u2;
		struct proto_spec out = {NULL, 0};

		if (proto_usage_parse(msg->payload, msg->len, &u) == 0) {
			proto_usage_add(&out, &u);
			if (proto_usage_parse(out.buf, out.len, &u2) != 0 ||
			    u.cpu_usec != u2.cpu_usec || u.mem_peak != u2.mem_peak ||
			    u.exec_ms != u2.exec_ms || u.end_ms != u2.end_ms ||
			    u.term_ms != u2.term_ms || u.kill_ms != u2.kill_ms ||
			    u.term_sig != u2.term_sig || u.term_why != u2.term_why ||
			    u.kill_why != u2.kill_why ||
			    (u.output == NULL) != (u2.output == NULL) ||
			    u.output_len != u2.output_len ||
			    (u.output != NULL && memcmp(u.output, u2.output, u.output_len) != 0)) {
				fprintf(stderr,
				        "fuzz_proto: a decoded usage reads back differently\n");
				abort();
			}
			proto_spec_free(&out);
			if (u.output != NULL) {
				char *text = utf8_valid(u.output, u.output_len);
				json_t *j = json_string(text);

				if (j == NULL) {
					fprintf(stderr, "fuzz_proto: utf8_valid gave what "
					                "jansson refuses\n");
					abort();
				}
				json_decref(j);
				free(text);
			}
		} else if (u.cpu_usec != -1 || u.mem_peak != -1 || u.output != NULL ||
		           u.exec_ms != -1 || u.end_ms != -1 || u.term_ms != -1 ||
		           u.kill_ms != -1 || u.term_sig != 0 || u.term_why != PROTO_WHY_NONE ||
		           u.kill_why != PROTO_WHY_NONE) {
			fprintf(stderr, "fuzz_proto: a refused usage left values behind\n");
			abort();
		}
		return;
	}
	if (msg->type != PROTO_START)
		return;
	/* A copy of exactly its size, so that a read past its end is caught. */
	payload = malloc(msg->len + 1);
	memcpy(payload, msg->payload, msg->len + 1);
	if (proto_spec_parse(payload, msg->len, &spec, &cause) == 0) {
		fuzz_proto_again(&spec);
		proto_run_free(&spec);
	} else
		free(cause);
	free(payload);
}

/* The reader, once: its socket pair and event loop live as long as the process. */
static void
fuzz_proto_init(void)
{
	int sv[2];

	if (fuzz_conn != NULL)
		return;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv) != 0 ||
	    (fuzz_base = event_base_new()) == NULL)
		abort();
	fuzz_conn = proto_conn_new(fuzz_base, sv[0], fuzz_proto_msg_cb, NULL, NULL);
	fuzz_peer = sv[1];
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_proto_hdr hdr;
	int well_formed;

	/* An empty message reads as the peer's end (recv() returns 0), and would end the reader. */
	if (size == 0)
		return 0;
	fuzz_proto_init();
	fuzz_data = data;
	fuzz_size = size;
	fuzz_delivered = 0;
	if (send(fuzz_peer, data, size, 0) != (ssize_t)size)
		return 0; /* more than the socket takes in one message */
	event_base_loop(fuzz_base, EVLOOP_NONBLOCK);
	well_formed = 0;
	if (size >= sizeof hdr) {
		memcpy(&hdr, data, sizeof hdr);
		well_formed = size - sizeof hdr <= PROTO_MAX_PAYLOAD && hdr.type >= PROTO_START &&
		              hdr.type <= PROTO_STALE_GONE;
	}
	if (fuzz_delivered != well_formed) {
		fprintf(stderr, "fuzz_proto: %zu bytes: %d frames delivered, expected %d\n", size,
		        fuzz_delivered, well_formed);
		abort();
	}
	return 0;
}
