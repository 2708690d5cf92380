/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (pure). */
/*
 * param.c: what a parameter of a manual run may be, checked alike by the configuration, the
 * command (`run-now --param`) and the worker: a name of [A-Z][A-Z0-9_]*, at most
 * PARAM_MAX_NAME bytes; a value of at most PARAM_MAX_VALUE bytes, without NUL.
 */

#include <string.h>

#include "param.h"

/* Whether name (len bytes) is a parameter's name. */
int
param_name_ok(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || len > PARAM_MAX_NAME || name[0] < 'A' || name[0] > 'Z')
		return 0;
	for (i = 1; i < len; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_'))
			return 0;
	return 1;
}

/* Whether value (len bytes) may be a parameter's value. */
int
param_value_ok(const char *value, size_t len)
{
	return len <= PARAM_MAX_VALUE && memchr(value, '\0', len) == NULL;
}
