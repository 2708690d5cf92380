/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker (its output endpoint), `leasekeeper logs --follow` and `leasekeeper web`. */
/* follow.h: the worker's output endpoint as both sides read it (GET /runs/ID/output?from=N). */
#ifndef FOLLOW_H
#define FOLLOW_H

#include <stddef.h>
#include <stdint.h>

#define FOLLOW_MAX_RUN_ID  160                 /* a run id is at most this long */
#define FOLLOW_MAX_OFFSET  (UINT64_C(1) << 53) /* offsets past this are refused */
#define FOLLOW_PREFIX      "/runs/"            /* GET /runs/<run id>/output?from=<offset> */
#define FOLLOW_SUFFIX      "/output"
#define FOLLOW_TOKEN_LEN   32           /* hex digits of a worker's output token */
#define FOLLOW_TAIL_PREFIX "/api/runs/" /* the dashboard's: /api/runs/<job>/<run id>/output */

/* The answer's headers (each a decimal offset, a state or an outcome). */
#define FOLLOW_H_OFFSET  "X-Output-Offset" /* where the body's first byte is in the output */
#define FOLLOW_H_NEXT    "X-Output-Next"   /* ... and the offset after its last: the next from */
#define FOLLOW_H_STATE   "X-Run-State"     /* "running" or "ended" */
#define FOLLOW_H_OUTCOME "X-Run-Outcome"   /* once ended, every byte given: its outcome */

int follow_parse_uri(const char *uri, char *run_id, size_t size, uint64_t *from);
int follow_parse_offset(const char *text, uint64_t *out);
int follow_valid_run_id(const char *id);
int follow_valid_word(const char *word, size_t max);
int follow_parse_tail_uri(const char *uri, char *job, size_t jsize, char *run_id, size_t size,
                          uint64_t *from);
int follow_parse_listen(const char *listen, const char *hostname, char *host, size_t size,
                        int *port);

#endif
