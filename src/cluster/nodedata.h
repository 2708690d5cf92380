/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/* nodedata.h: another party's node data, which anyone may write, for status and for logs. */
#ifndef NODEDATA_H
#define NODEDATA_H

#include <stdint.h>

#include <jansson.h>

/*
 * Copy what a node's data says into obj (status): its JSON fields, or the raw text
 * (Curator's); never over what status found out itself, and a huge one only by its size.
 */
void nodedata_merge(json_t *obj, const char *value, int len);

/* The largest integer every JSON reader reads exactly: 2^53. */
#define NODEDATA_MAX_SAFE 9007199254740992LL

/* Integers in v beyond NODEDATA_MAX_SAFE become strings of their digits. */
void nodedata_safe_numbers(json_t *v);

/*
 * A node's data for a log line (caller frees): what a worker node says of its worker
 * (host "h", pid 42, started "..."), else the data itself, quoted with utf8_quote: escaped
 * and cut short, so that data anyone can write never forges or floods a log line.
 */
char *nodedata_describe(const char *value, int len);

/* A clock offset beyond this (ms, about 31 years) is not believed. */
#define NODEDATA_CLOCK_MAX_MS 1000000000000LL

int nodedata_clock_offset(const json_t *worker, int64_t *offset_ms, int64_t *error_ms);

#endif
