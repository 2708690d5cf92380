/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * config-label.c: placement: a worker's labels ([worker] labels = zone=a, role=batch) and a
 * job's constraint (constraint = zone=a, role!=gpu), parsed strictly and matched.
 *
 * Both are lists of KEY=VALUE terms separated by commas; a constraint term may also be
 * KEY!=VALUE. Keys and values are short words of letters, digits and "._-", so that they go
 * into a worker's registration node, a log line and a metric without escaping. A job runs
 * on a worker only when every term of its constraint holds: KEY=VALUE that the worker has
 * the label with that value, KEY!=VALUE that it has not (a worker without KEY satisfies it).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-int.h"
#include "xmalloc.h"

#define CONFIG_LABEL_MAX       63 /* bytes of a key or a value */
#define CONFIG_LABELS_MAX      32 /* labels of a worker, terms of a constraint */
#define CONFIG_LABEL_CHARS     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
#define CONFIG_LABEL_SYNTAX    "write KEY=VALUE terms separated by commas"
#define CONFIG_LABEL_WORD_HINT "use letters, digits, '.', '_' and '-', at most 63 of them"

/* Whether [p, p + len) is a label key or value; if not, *why says why. */
static int
config_label_word(const char *p, size_t len, const char **why)
{
	if (len == 0) {
		*why = "is empty";
		return 0;
	}
	if (len > CONFIG_LABEL_MAX) {
		*why = "is longer than 63 bytes";
		return 0;
	}
	if (strspn(p, CONFIG_LABEL_CHARS) < len) {
		*why = "has a character other than letters, digits, '.', '_' and '-'";
		return 0;
	}
	return 1;
}

/* [p, p + len) quoted for a message, living as long as ctx. */
static const char *
config_label_q(struct config_ctx *ctx, const char *p, size_t len)
{
	char *s = xstrndup(p, len);
	const char *q = config_q(ctx, s);

	free(s);
	return q;
}

/*
 * Parse kv's value into terms (negate allowed when terms is a constraint). Every problem is
 * reported at kv's line. Returns the number of terms kept.
 */
static size_t
config_label_parse(struct config_ctx *ctx, const struct config_sec *sec, const struct config_kv *kv,
                   int constraint, struct config_term **out)
{
	const char *what = constraint ? "constraint" : "labels", *p = kv->value, *item, *eq, *why;
	struct config_term *terms = NULL, t;
	size_t n = 0, len, j, klen;
	int bad;

	*out = NULL;
	for (;;) {
		p += strspn(p, " \t");
		item = p;
		len = strcspn(p, ",");
		p += len;
		while (len > 0 && (item[len - 1] == ' ' || item[len - 1] == '\t'))
			len--;
		if (len == 0) {
			config_error_kv(ctx, sec, kv,
			                "%s %s: an empty term: " CONFIG_LABEL_SYNTAX
			                ", e.g. %s = zone=a, role=batch",
			                what, config_q(ctx, kv->value), what);
			break;
		}
		eq = memchr(item, '=', len);
		if (eq == NULL) {
			config_error_kv(ctx, sec, kv,
			                "%s: term %s has no '=': " CONFIG_LABEL_SYNTAX
			                "%s, e.g. %s = zone=a",
			                what, config_label_q(ctx, item, len),
			                constraint ? " (or KEY!=VALUE)" : "", what);
			goto next;
		}
		t.negate = constraint && eq > item && eq[-1] == '!';
		klen = (size_t)(eq - item) - (t.negate ? 1 : 0);
		while (klen > 0 && (item[klen - 1] == ' ' || item[klen - 1] == '\t'))
			klen--;
		t.key = xstrndup(item, klen);
		eq++;
		eq += strspn(eq, " \t");
		t.value = xstrndup(eq, len - (size_t)(eq - item));
		bad = 0;
		if (!config_label_word(t.key, strlen(t.key), &why)) {
			config_error_kv(ctx, sec, kv,
			                "%s: the key of %s %s: " CONFIG_LABEL_WORD_HINT, what,
			                config_label_q(ctx, item, len), why);
			bad = 1;
		} else if (!config_label_word(t.value, strlen(t.value), &why)) {
			config_error_kv(ctx, sec, kv,
			                "%s: the value of %s %s: " CONFIG_LABEL_WORD_HINT, what,
			                config_label_q(ctx, item, len), why);
			bad = 1;
		}
		for (j = 0; !bad && j < n; j++) {
			if (strcmp(terms[j].key, t.key) != 0)
				continue;
			if (!constraint) {
				config_error_kv(ctx, sec, kv, "labels: %s is set twice: keep one",
				                t.key);
				bad = 1;
			} else if (strcmp(terms[j].value, t.value) == 0) {
				if (terms[j].negate == t.negate)
					config_error_kv(
					    ctx, sec, kv,
					    "constraint: %s%s%s is written twice: keep one", t.key,
					    t.negate ? "!=" : "=", t.value);
				else
					config_error_kv(
					    ctx, sec, kv,
					    "constraint: %s=%s is both required and refused, "
					    "so no worker can run the job: keep one",
					    t.key, t.value);
				bad = 1;
			} else if (!terms[j].negate && !t.negate) {
				config_error_kv(
				    ctx, sec, kv,
				    "constraint: %s=%s and %s=%s can never both hold (a "
				    "worker has one value per label): keep one",
				    t.key, terms[j].value, t.key, t.value);
				bad = 1;
			}
		}
		if (!bad && n == CONFIG_LABELS_MAX) {
			config_error_kv(ctx, sec, kv, "%s: more than %d terms: keep at most %d",
			                what, CONFIG_LABELS_MAX, CONFIG_LABELS_MAX);
			bad = 1;
		}
		if (bad) {
			free(t.key);
			free(t.value);
		} else {
			terms = xreallocarray(terms, n + 1, sizeof *terms);
			terms[n++] = t;
		}
	next:
		if (*p == '\0')
			break;
		p++; /* the comma */
	}
	*out = terms;
	return n;
}

/* Compare two labels by key, for qsort. */
static int
config_label_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Resolve [worker] labels into cfg->labels ("key=value", sorted, NULL terminated). */
void
config_resolve_labels(struct config_ctx *ctx, struct config *cfg, const struct config_sec *wk)
{
	const struct config_kv *kv = config_kv_find(wk, "labels");
	struct config_term *terms = NULL;
	size_t n = 0, i;

	if (kv != NULL)
		n = config_label_parse(ctx, wk, kv, 0, &terms);
	cfg->labels = xcalloc(n + 1, sizeof *cfg->labels);
	for (i = 0; i < n; i++) {
		xasprintf(&cfg->labels[i], "%s=%s", terms[i].key, terms[i].value);
		free(terms[i].key);
		free(terms[i].value);
	}
	free(terms);
	qsort(cfg->labels, n, sizeof *cfg->labels, config_label_cmp);
}

/* Resolve a job's constraint into job->constraint. */
void
config_resolve_constraint(struct config_ctx *ctx, const struct config_sec *sec,
                          struct config_job *job)
{
	const struct config_kv *kv = config_kv_find(sec, "constraint");

	if (kv != NULL)
		job->nconstraint = config_label_parse(ctx, sec, kv, 1, &job->constraint);
}

/* Whether labels has key=value. */
static int
config_label_has(char *const *labels, const char *key, const char *value)
{
	size_t klen = strlen(key);

	for (; labels != NULL && *labels != NULL; labels++) {
		if (strncmp(*labels, key, klen) == 0 && (*labels)[klen] == '=' &&
		    strcmp(*labels + klen + 1, value) == 0)
			return 1;
	}
	return 0;
}

/* Whether labels satisfy the job's constraint; why (size bytes): the first term that fails. */
int
config_job_matches(const struct config_job *job, char *const *labels, char *why, size_t size)
{
	const struct config_term *t;
	size_t i;

	for (i = 0; i < job->nconstraint; i++) {
		t = &job->constraint[i];
		if (config_label_has(labels, t->key, t->value) != t->negate)
			continue;
		if (why != NULL)
			snprintf(why, size, "%s%s%s", t->key, t->negate ? "!=" : "=", t->value);
		return 0;
	}
	return 1;
}

/* The constraint as "zone=a, role!=gpu" (caller frees); "" when there is none. */
char *
config_constraint_text(const struct config_job *job)
{
	char *out = xstrdup(""), *t;
	size_t i;

	for (i = 0; i < job->nconstraint; i++) {
		xasprintf(&t, "%s%s%s%s%s", out, i > 0 ? ", " : "", job->constraint[i].key,
		          job->constraint[i].negate ? "!=" : "=", job->constraint[i].value);
		free(out);
		out = t;
	}
	return out;
}

/* Free a job's constraint. */
void
config_free_constraint(struct config_job *job)
{
	size_t i;

	for (i = 0; i < job->nconstraint; i++) {
		free(job->constraint[i].key);
		free(job->constraint[i].value);
	}
	free(job->constraint);
	job->constraint = NULL;
	job->nconstraint = 0;
}
