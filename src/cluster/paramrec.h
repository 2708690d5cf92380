/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands). */
/* paramrec.h: a run-now request's "params", checked against the job's declared params. */
#ifndef PARAMREC_H
#define PARAMREC_H

#include <stddef.h>

#include <jansson.h>

int paramrec_resolve(const json_t *given, char *const *declared, char ***env, json_t **values,
                     char *why, size_t len);
const char *paramrec_declared(char *const *declared, const char *name, size_t len);

#endif
