/* Runs in: the supervisor process. */
/* supervisor.h: the supervisor process's entry point and the start spec it decodes. */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

/* The supervisor's life, on the socket at fd (main forks it: svlink.c). Returns the exit status. */
int supervisor_main(int fd);

/* Kill grace when a start spec names none, and the most one may name (a day). */
#define SUPERVISOR_DEFAULT_GRACE_MS 2000
#define SUPERVISOR_MAX_GRACE_MS     86400000ULL
/* The most arguments, and the most environment entries, in one start spec. */
#define SUPERVISOR_SPEC_MAX_ITEMS 4096

/* A start spec decoded: what the supervisor needs to start one job. */
struct supervisor_spec {
	const char *name;     /* NULL: none given */
	const char *log_path; /* absolute, or NULL: inherit the supervisor's output */
	uint64_t log_max;
	uint64_t grace_ms;
	char **argv;     /* NULL-terminated, never empty; the strings point into the payload */
	char **env;      /* "KEY=VALUE", NULL-terminated, or NULL */
	int inherit_env; /* 1: env is added to the supervisor's environment (exec); 0: a clean one */
	const char *workdir, *user, *group;
	int umask; /* -1: inherit */
};

/*
 * Decode and check a start spec (the payload of PROTO_START); -1 with *cause (caller frees)
 * when it is malformed. Pure, so a fuzzer can drive it. Free with supervisor_spec_free.
 */
int supervisor_spec_parse(const char *payload, size_t len, struct supervisor_spec *, char **cause);
void supervisor_spec_free(struct supervisor_spec *);

#endif
