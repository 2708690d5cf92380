/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands). */
/*
 * paramrec.c: the parameters of a manual run. A run-now request may hold "params":
 * {"NAME": "VALUE", ...}, written by anyone who can write the request: the worker checks it
 * here against the job's declared `params` (config-params.c) before it acts on the request,
 * and refuses it whole on any undeclared or malformed name, any value that is not a string,
 * is over PARAM_MAX_VALUE bytes or holds a NUL. A declared parameter not given gets its
 * default, and none without one. The values reach the run only as LEASEKEEPER_PARAM_NAME
 * variables: never spliced into its command line.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "param.h"
#include "paramrec.h"
#include "xmalloc.h"

/* The declared item ("NAME" or "NAME=DEFAULT") for name (len bytes), or NULL. */
const char *
paramrec_declared(char *const *declared, const char *name, size_t len)
{
	for (; declared != NULL && *declared != NULL; declared++)
		if (strncmp(*declared, name, len) == 0 &&
		    ((*declared)[len] == '\0' || (*declared)[len] == '='))
			return *declared;
	return NULL;
}

/* Check what was given; 0 with why when it is refused. */
static int
paramrec_check(const json_t *given, char *const *declared, char *why, size_t len)
{
	const char *name;
	json_t *v;

	if (given == NULL)
		return 1;
	if (!json_is_object(given)) {
		snprintf(why, len, "the request's params are not a JSON object");
		return 0;
	}
	if (json_object_size(given) > PARAM_MAX) {
		snprintf(why, len, "more than %d parameters", PARAM_MAX);
		return 0;
	}
	json_object_foreach((json_t *)given, name, v) {
		if (!param_name_ok(name, strlen(name))) {
			snprintf(why, len,
			         "a parameter name is not [A-Z][A-Z0-9_]* (at most %d bytes)",
			         PARAM_MAX_NAME);
			return 0;
		}
		if (paramrec_declared(declared, name, strlen(name)) == NULL) {
			snprintf(why, len, "parameter %s is not declared in the job's params",
			         name);
			return 0;
		}
		if (!json_is_string(v) ||
		    !param_value_ok(json_string_value(v), json_string_length(v)) ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(why, len,
			         "the value of parameter %s is not a string of at most %d bytes "
			         "without NUL",
			         name, PARAM_MAX_VALUE);
			return 0;
		}
	}
	return 1;
}

/*
 * Resolve given (a request's "params", or NULL) against declared: *env gets
 * "LEASEKEEPER_PARAM_NAME=VALUE" for each declared parameter with a value (NULL terminated),
 * *values {"NAME": "VALUE"}; 1, or 0 with why (len bytes) and nothing made.
 */
int
paramrec_resolve(const json_t *given, char *const *declared, char ***env, json_t **values,
                 char *why, size_t len)
{
	const char *eq, *val;
	char *name;
	size_t n = 0, i;
	json_t *v;

	*env = NULL;
	*values = NULL;
	if (!paramrec_check(given, declared, why, len))
		return 0;
	for (i = 0; declared != NULL && declared[i] != NULL; i++)
		;
	*env = xcalloc(i + 1, sizeof **env);
	*values = json_object();
	for (i = 0; declared != NULL && declared[i] != NULL; i++) {
		eq = strchr(declared[i], '=');
		name = eq != NULL ? xstrndup(declared[i], (size_t)(eq - declared[i]))
		                  : xstrdup(declared[i]);
		v = given != NULL ? json_object_get(given, name) : NULL;
		val = v != NULL ? json_string_value(v) : eq != NULL ? eq + 1 : NULL;
		if (val != NULL) {
			xasprintf(&(*env)[n++], PARAM_ENV "%s=%s", name, val);
			json_object_set_new(*values, name, json_string(val));
		}
		free(name);
	}
	return 1;
}
