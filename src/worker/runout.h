/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* runout.h: the output of the runs in progress here, kept for followers (`logs --follow`). */
#ifndef RUNOUT_H
#define RUNOUT_H

#include <stddef.h>
#include <stdint.h>

struct evhttp_request;
struct http;
struct runout;

/* What a follower reading a run from an offset gets now (runout_slice). */
struct runout_slice {
	const char *bytes; /* n bytes of output, from offset at */
	size_t n;
	uint64_t at;         /* >= the offset asked: past it, the bytes between were dropped */
	int ended;           /* the run ended */
	const char *outcome; /* ended and every byte given: its outcome, else NULL */
};

struct runout *runout_new(void);
const char *runout_token(const struct runout *);
void runout_start(struct runout *, uint32_t run, const char *job, const char *run_id, int kept);
void runout_add(struct runout *, uint32_t run, uint64_t offset, const char *buf, size_t len);
void runout_end(struct runout *, uint32_t run, const char *outcome);
void runout_end_all(struct runout *, const char *outcome);
int runout_slice(struct runout *, const char *run_id, uint64_t from, struct runout_slice *);
void runout_serve(struct runout *, struct http *, struct evhttp_request *);
void runout_free(struct runout *);

#endif
