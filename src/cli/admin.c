/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command. */
/*
 * admin.c: the harness every one-shot command that talks to the cluster runs on: it opens
 * its own session on a loop of its own, gives the command the session once it is up, stops
 * the loop with the command's exit status, and closes the session. Also the small helpers
 * they share: who asks, how a result is printed, a count from the command line.
 */

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "admin.h"
#include "target.h"
#include "sha1.h"
#include "clock.h"
#include "config.h"
#include "ctlrec.h"
#include "jobrec.h"
#include "layout.h"
#include "lease.h"
#include "log.h"
#include "nodedata.h"
#include "rolesrec.h"
#include "schedule.h"
#include "tickstate.h"
#include "utf8.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

static void admin_mk_free(struct admin *);

#define ADMIN_CONNECT_TIMEOUT_S LK_CONNECT_TIMEOUT_S

/* Stop the loop with an exit status. */
void
admin_done(struct admin *a, int code)
{
	a->exit_code = code;
	event_base_loopbreak(a->base);
}

static void
admin_zk_cb(struct zk *zk, enum zk_event event, void *arg)
{
	struct admin *a = arg;

	(void)zk;
	if (event == ZK_EVENT_SESSION_NEW && !a->started) {
		a->started = 1;
		evtimer_del(a->timer);
		a->ready(a);
	} else if (a->started && a->event != NULL)
		a->event(a, event);
}

static void
admin_timeout_cb(int fd, short what, void *arg)
{
	struct admin *a = arg;

	(void)fd;
	(void)what;
	fprintf(stderr, "leasekeeper: cannot reach ZooKeeper at %s within %d s\n", a->hosts,
	        ADMIN_CONNECT_TIMEOUT_S);
	admin_done(a, EXIT_UNAVAILABLE);
}

/* Run ready() once a session is up; return the exit status it leaves. */
int
admin_run(struct admin *a, int timeout_ms)
{
	struct timeval tv = {ADMIN_CONNECT_TIMEOUT_S, 0};

	if ((a->base = event_base_new()) == NULL)
		fatalx("event_base_new");
	a->timer = evtimer_new(a->base, admin_timeout_cb, a);
	evtimer_add(a->timer, &tv);
	a->zk = zk_create(a->base, a->hosts, timeout_ms, 0,
	                  a->auth != NULL  ? a->auth
	                  : a->cfg != NULL ? a->cfg->auth
	                                   : NULL,
	                  admin_zk_cb, a);
	if (a->cfg != NULL && a->cfg->reader != NULL)
		zk_set_reader(a->zk, a->cfg->reader); /* what we create (requests) it may read */
	if (a->cfg != NULL && a->cfg->operator_id != NULL)
		zk_set_operator(a->zk, a->cfg->root, a->cfg->operator_id);
	event_base_dispatch(a->base);
	zk_free(a->zk);
	admin_mk_free(a);
	if (a->finish != NULL)
		a->finish(a); /* events of its own go before the loop */
	event_free(a->timer);
	event_base_free(a->base);
	if (a->auth != NULL)
		explicit_bzero(a->auth, strlen(a->auth));
	free(a->auth);
	a->auth = NULL;
	return a->exit_code;
}

/* A control record to create once the workers' identity is read. */
struct admin_mk {
	char *path;
	char *data;
	int flags;
	zk_reply_cb cb;
};

/* Forget the create in waiting, if any. */
static void
admin_mk_free(struct admin *a)
{
	if (a->mk == NULL)
		return;
	free(a->mk->path);
	free(a->mk->data);
	free(a->mk);
	a->mk = NULL;
}

/* The roles node: the record gets the workers' every permission and the reader's READ. */
static void
admin_mk_roles_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct admin_mk *mk = a->mk;
	const char *auth = a->auth != NULL ? a->auth : a->cfg != NULL ? a->cfg->auth : NULL;
	char *id = auth != NULL ? sha1_zk_digest_id(auth) : NULL;
	struct ACL entries[3] = {{ZOO_PERM_ALL, {(char *)"auth", (char *)""}}};
	struct ACL_vector acl = {1, entries};
	struct rolesrec r;

	if (mk == NULL) {
		free(id);
		return;
	}
	if (id != NULL && reply->rc == ZOK &&
	    rolesrec_parse(reply->value, reply->value_len, id, &r)) {
		entries[acl.count++] = (struct ACL){ZOO_PERM_ALL, {(char *)"digest", r.workers}};
		if (r.reader[0] != '\0')
			entries[acl.count++] =
			    (struct ACL){ZOO_PERM_READ, {(char *)"digest", r.reader}};
		zk_create_node_acl(a->zk, mk->path, mk->data, (int)strlen(mk->data), mk->flags,
		                   &acl, mk->cb, a);
	} else
		zk_create_node(a->zk, mk->path, mk->data, (int)strlen(mk->data), mk->flags, mk->cb,
		               a);
	free(id);
	admin_mk_free(a);
}

/*
 * Create a control record (a run or stop request, a drain). An operator identity is not
 * the workers' ([zookeeper] operator): its record also gives the workers, as their
 * <root>/roles node names them, every permission (they claim and delete it), and the
 * reader READ. Without that node, or with the workers' own credential, the default ACL.
 * cb gets the create's answer with a as its arg.
 */
void
admin_create_control(struct admin *a, const char *path, const char *data, int flags, zk_reply_cb cb)
{
	char *roles = layout_roles(a->root);

	admin_mk_free(a);
	a->mk = xcalloc(1, sizeof *a->mk);
	a->mk->path = xstrdup(path);
	a->mk->data = xstrdup(data);
	a->mk->flags = flags;
	a->mk->cb = cb;
	zk_get(a->zk, roles, NULL, admin_mk_roles_cb, a);
	free(roles);
}

/*
 * Say on standard error when workers will ignore the control record cmd writes: the command
 * has no credentials, so neither (it is assumed) do the workers, and they honour run
 * requests, pauses and drains only with credentials or [worker] allow_open_control = true.
 */
void
admin_control_note(const struct admin *a, const char *cmd)
{
	if (a->auth != NULL ||
	    (a->cfg != NULL && (a->cfg->auth != NULL || a->cfg->allow_open_control)))
		return;
	fprintf(stderr,
	        "leasekeeper %s: note: no credentials (--auth-file, or [zookeeper] auth_file): "
	        "workers ignore run requests, pauses and drains on a root without credentials "
	        "and ACLs, unless their [worker] allow_open_control = true (see "
	        "docs/security.md)\n",
	        cmd);
}

/* Who asks, for a control's record: --by, else user@host (caller frees). */
char *
admin_who(const char *by)
{
	char host[HOST_NAME_MAX + 1], *who;
	struct passwd *pw = getpwuid(geteuid());

	if (by != NULL)
		return xstrdup(by);
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	host[sizeof host - 1] = '\0';
	xasprintf(&who, "%s@%s", pw != NULL ? pw->pw_name : "?", host);
	return who;
}

/* A command's result: the JSON object with --json, else the human line (if any). */
void
admin_print(json_t *out, int as_json, const char *line)
{
	char *text;

	if (as_json) {
		text = json_dumps(out, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
		printf("%s\n", text);
		free(text);
	} else if (line != NULL)
		printf("%s\n", line);
}

/* A lease count from the command line, 1 to LK_MAX_LEASES; -1 after saying why. */
int
admin_count(const char *cmd, const char *what, const char *text, int *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || n < 1 || n > LK_MAX_LEASES) {
		fprintf(stderr, "leasekeeper %s: %s must be a number from 1 to %d, not \"%s\"\n",
		        cmd, what, LK_MAX_LEASES, text);
		return -1;
	}
	*out = (int)n;
	return 0;
}

/*
 * getopt takes "-1" for an option: the first argument that looks like a negative number,
 * to say what is wrong with it rather than "invalid option -- '1'".
 */
const char *
admin_negative(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1] >= '0' && argv[i][1] <= '9')
			return argv[i];
	return "-";
}

/* Parse the common options into a; 0, or an exit status after saying why. */
int
admin_setup(struct admin *a, struct target_opts *o, const char *cmd)
{
	struct target tg;
	int rc;

	if ((rc = target_resolve(o, cmd, &tg)) != 0)
		return rc;
	a->cfg = tg.cfg;
	a->hosts = tg.hosts;
	a->root = tg.root;
	a->auth = tg.auth;
	return 0;
}
