/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/* format.h: the format version every node leasekeeper writes carries, and what this one reads. */
#ifndef FORMAT_H
#define FORMAT_H

#include <stddef.h>

#include <jansson.h>

/*
 * The format this release writes ("v": 1) and the newest it reads. Data without "v" is the
 * previous release's (format 0), read as format 1 is: the two differ only by "v".
 */
#define FORMAT_VERSION 1
#define FORMAT_KEY     "v"
#define FORMAT_NONE    0  /* no "v": written by a release before versions */
#define FORMAT_INVALID -1 /* a "v" that is not an integer in 0..FORMAT_MAX */
#define FORMAT_MAX     1000000

/* Bytes of data format_of_data parses at most (every node this release writes is smaller). */
#define FORMAT_MAX_SIZE 65536

int format_of(const json_t *o);
int format_of_data(const char *data, size_t len);
int format_readable(int v);
void format_stamp(json_t *o);
const char *format_refusal(int v, char *buf, size_t size);

/* Log a refusal once per thing and version: nodes are read again at every tick. */
struct format_once {
	int warned; /* the version last warned about, 0 if none */
};

int format_warn_once(struct format_once *, int v, const char *what);

#endif
