/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot command `leasekeeper set-leases`. */
/*
 * setleases.c: `leasekeeper set-leases JOB N`: change the cluster's agreed lease count on
 * purpose, and clear its recorded locks (the first worker that agrees records its own).
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admin.h"
#include "cli.h"
#include "format.h"
#include "target.h"
#include "config.h"
#include "jobrec.h"
#include "layout.h"
#include "leasekeeper.h"
#include "log.h"
#include "usage.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

struct setleases {
	const char *job;
	int leases;
	int create; /* --create: record a job the cluster does not know yet */
	char *path;
};

static void setleases_read(struct admin *);

/*
 * A job's lock lives under <root>/mutex for one lease and <root>/semaphore for more: when
 * the count crosses between the two, the recorded lock moves along (a lock_path outside
 * those folders is the operator's and stays).
 */
static void
setleases_move_lock(struct admin *a, json_t *record, int leases)
{
	const char *lock = json_string_value(json_object_get(record, "lock"));
	char *from, *prefix, *moved;

	if (lock == NULL)
		return;
	from = layout_lock_dir(a->root, leases == 1 ? 2 : 1);
	prefix = znode_join(from, "");
	free(from);
	if (strncmp(lock, prefix, strlen(prefix)) == 0) {
		moved = layout_lock_path(a->root, lock + strlen(prefix), NULL, leases);
		printf("its lock moves to %s\n", moved);
		json_object_set_new(record, "lock", json_string(moved));
		free(moved);
	}
	free(prefix);
}

/* The write landed, or lost a race (read again), or failed. */
static void
setleases_write_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct setleases *s = a->ctx;

	if (reply->rc == ZBADVERSION || reply->rc == ZNODEEXISTS) {
		setleases_read(a);
		return;
	}
	if (reply->rc != ZOK) {
		fprintf(stderr, "leasekeeper set-leases: cannot write %s: %s\n", s->path,
		        zerror(reply->rc));
		admin_done(a, EXIT_UNAVAILABLE);
		return;
	}
	admin_done(a, 0);
}

/* The record as it is: change its count, keeping whatever else it holds. */
static void
setleases_read_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct setleases *s = a->ctx;
	json_t *o = NULL;
	char why[200], *data;
	int old, cleared = 0;

	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		fprintf(stderr, "leasekeeper set-leases: cannot read %s: %s\n", s->path,
		        zerror(reply->rc));
		admin_done(a, EXIT_UNAVAILABLE);
		return;
	}
	if (reply->rc == ZNONODE && !s->create &&
	    (a->cfg == NULL || config_find_job(a->cfg, s->job) == NULL)) {
		fprintf(stderr,
		        "leasekeeper set-leases: the cluster knows no job \"%s\" (%s does not "
		        "exist): check the name, or pass --create to record it now\n",
		        s->job, s->path);
		admin_done(a, 1);
		return;
	}
	if (reply->rc == ZOK && reply->value != NULL)
		o = json_loadb(reply->value, (size_t)reply->value_len, 0, NULL);
	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		o = json_object();
	}
	if (!format_readable(format_of(o))) {
		/* Written by a newer leasekeeper: writing over it would lose what it says. */
		fprintf(stderr, "leasekeeper set-leases: %s is %s\n", s->path,
		        format_refusal(format_of(o), why, sizeof why));
		json_decref(o);
		admin_done(a, 1);
		return;
	}
	old = jobrec_parse_leases(reply->value, reply->value_len);
	json_object_set_new(o, "leases", json_integer(s->leases));
	setleases_move_lock(a, o, s->leases);
	/* The locks follow the workers: the first configured with N records its own. */
	if (json_object_get(o, "locks") != NULL) {
		json_object_del(o, "locks");
		cleared = 1;
	}
	format_stamp(o);
	data = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (old > 0)
		printf("job %s: leases %d (was %d)\n", s->job, s->leases, old);
	else
		printf("job %s: leases %d\n", s->job, s->leases);
	if (cleared)
		printf(
		    "its recorded locks are cleared: the first worker configured with %d "
		    "lease(s) records its own, and workers configured otherwise do not contend\n",
		    s->leases);
	if (reply->rc == ZNONODE)
		zk_create_node(a->zk, s->path, data, (int)strlen(data), ZOO_PERSISTENT,
		               setleases_write_cb, a);
	else
		zk_set(a->zk, s->path, data, (int)strlen(data), reply->stat->version,
		       setleases_write_cb, a);
	free(data);
}

static void
setleases_read(struct admin *a)
{
	struct setleases *s = a->ctx;

	zk_get(a->zk, s->path, NULL, setleases_read_cb, a);
}

/* The session is up: make sure the parents exist, then read and write. */
static void
setleases_ready(struct admin *a)
{
	char *path = layout_jobs(a->root);

	zk_create_path(a->zk, path, ZOO_PERSISTENT, NULL, NULL);
	free(path);
	setleases_read(a);
}

/* `set-leases JOB N`. */
int
setleases_main(int argc, char **argv)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"zk", required_argument, NULL, 'z'},
	                                         {"root", required_argument, NULL, 'r'},
	                                         {"create", no_argument, NULL, 'C'},
	                                         {"auth-file", required_argument, NULL, 'A'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	static const char usage[] =
	    "usage: leasekeeper set-leases [-c FILE | --zk HOSTS] [--root PATH]\n"
	    "                              [--auth-file FILE] [--create] JOB N\n"
	    "\n"
	    "Change the number of leases the cluster agrees on for a job (workers configured with\n"
	    "another number stop contending for it), and clear the locks it agreed on (the first\n"
	    "worker configured with N records its lock, lock_mode and locks; workers configured\n"
	    "otherwise stop contending). To change a job's locks, configure every worker alike,\n"
	    "then run this with the job's count.\n"
	    "\n"
	    "  -C, --create          create the job's record if the cluster has none "
	    "yet\n" TARGET_OPTIONS_HELP;
	struct admin a;
	struct target_opts o = {NULL, NULL, NULL, NULL};
	struct setleases s;
	char *cause;
	int ch, rc;

	memset(&a, 0, sizeof a);
	memset(&s, 0, sizeof s);
	/* The digits: "-1" is a count that is out of range, not an unknown option. */
	while ((ch = getopt_long(argc, argv, "c:z:r:A:Ch0123456789", longopts, NULL)) != -1) {
		if (target_option(ch, optarg, &o))
			continue;
		switch (ch) {
		case 'C':
			s.create = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case '0':
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
		case '6':
		case '7':
		case '8':
		case '9':
			admin_count("set-leases", "N", admin_negative(argc, argv), &s.leases);
			return EXIT_USAGE;
		default:
			return usage_hint("set-leases");
		}
	}
	if (optind + 2 != argc) {
		if (optind + 2 > argc)
			fprintf(stderr, "leasekeeper set-leases: give a job name and a count\n");
		else
			fprintf(stderr, "leasekeeper set-leases: unexpected argument \"%s\"\n",
			        argv[optind + 2]);
		return usage_hint("set-leases");
	}
	s.job = argv[optind];
	if (admin_count("set-leases", "N", argv[optind + 1], &s.leases) != 0)
		return EXIT_USAGE;
	if (!znode_valid_name(s.job, &cause)) {
		fprintf(stderr, "leasekeeper set-leases: bad job name: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if ((rc = admin_setup(&a, &o, "set-leases")) != 0)
		return rc;
	s.path = layout_job_record(a.root, s.job);
	a.ctx = &s;
	a.ready = setleases_ready;
	rc = admin_run(&a, 10000);
	free(s.path);
	config_free(a.cfg);
	return rc;
}
