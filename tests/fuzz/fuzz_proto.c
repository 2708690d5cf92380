/*
 * fuzz_proto.c: the main <-> supervisor message codec: one frame as recv() returns it
 * (proto_decode) and the start spec the supervisor decodes into a run (proto_spec_parse,
 * which walks every tag). A spec that decodes must survive being written again with
 * proto_spec_add.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	if (proto_spec_parse(out.buf, out.len, &back, &cause) != 0) {
		fprintf(stderr, "fuzz_proto: a decoded spec, written again, is refused: %s\n",
		        cause);
		abort();
	}
	fuzz_proto_count(spec, &argc, &nenv);
	fuzz_proto_count(&back, &argc2, &nenv2);
	if (argc != argc2 || nenv != nenv2 || back.grace_ms != spec->grace_ms ||
	    back.umask != spec->umask || strcmp(back.argv[0], spec->argv[0]) != 0) {
		fprintf(stderr, "fuzz_proto: a decoded spec reads back differently\n");
		abort();
	}
	proto_run_free(&back);
	proto_spec_free(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_run spec;
	struct proto_msg msg;
	char *buf, *cause = NULL;

	/* As proto_read_cb does: a buffer with room for a NUL after the frame. */
	buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (proto_decode(buf, size, &msg) != 0) {
		free(buf);
		return 0;
	}
	if (msg.type == PROTO_START) {
		if (proto_spec_parse(msg.payload, msg.len, &spec, &cause) == 0) {
			fuzz_proto_again(&spec);
			proto_run_free(&spec);
		} else
			free(cause);
	}
	free(buf);
	return 0;
}
