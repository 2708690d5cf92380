/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (pure). */
/* param.h: a manual run's parameters (`params`, `run-now --param`): names and values checked. */
#ifndef PARAM_H
#define PARAM_H

#include <stddef.h>

#define PARAM_MAX       32   /* parameters a job declares, or a request gives, at most */
#define PARAM_MAX_NAME  64   /* bytes of a name */
#define PARAM_MAX_VALUE 1024 /* bytes of a value (or a default) */
#define PARAM_ENV       "LEASEKEEPER_PARAM_"

int param_name_ok(const char *name, size_t len);
int param_value_ok(const char *value, size_t len);

#endif
