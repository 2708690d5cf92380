/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot commands `leasekeeper logs` and `status`. */
/* runline.h: one ended run's line, as `logs` heads its output and `status` lists it. */
#ifndef RUNLINE_H
#define RUNLINE_H

#include <stdio.h>

#include <jansson.h>

/* Where the line goes: `logs`' header of a run, or a row of `status`' last runs. */
enum runline_style {
	RUNLINE_HEADER, /* "=== run ID (record N): outcome, exit status S, node X, ..." */
	RUNLINE_ROW,    /* "      END  outcome  node exit S, cpu ...  run=ID" */
};

/* The strings of rec are untrusted and printed escaped, unless the caller escaped them. */
#define RUNLINE_ESCAPED 1 /* flag: rec's strings are escaped already (status_escape) */

void runline_print(FILE *, json_t *rec, enum runline_style, int flags);

#endif
