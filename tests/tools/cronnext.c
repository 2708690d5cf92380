/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cronnext.c: test driver for schedule.c. Reads "EXPR<TAB>TZ<TAB>START<TAB>K" lines (TZ
 * empty or "-" for the process's zone, START in Unix seconds) and prints, per line, the next
 * K fire times after START separated by spaces, or for negative K the |K| latest at or
 * before START, newest first (each next step starting one second before the last). A
 * search that finds nothing prints "none" and stops the line; a bad line prints
 * "error: <cause>".
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

/* Answer one input line on stdout. */
static void
cronnext_line(char *line)
{
	char *fields[4], *cause, *end;
	struct schedule *s;
	long long start, k, i;
	int64_t t;
	int n = 0;

	line[strcspn(line, "\r\n")] = '\0';
	for (fields[n++] = line; n < 4 && (line = strchr(line, '\t')) != NULL; n++) {
		*line++ = '\0';
		fields[n] = line;
	}
	if (n != 4) {
		printf("error: expected EXPR<TAB>TZ<TAB>START<TAB>K\n");
		return;
	}
	start = strtoll(fields[2], &end, 10);
	if (*fields[2] == '\0' || *end != '\0') {
		printf("error: bad START \"%s\"\n", fields[2]);
		return;
	}
	k = strtoll(fields[3], &end, 10);
	if (*fields[3] == '\0' || *end != '\0' || k == 0 || k > 100000 || k < -100000) {
		printf("error: bad K \"%s\"\n", fields[3]);
		return;
	}
	if (schedule_parse(fields[0],
	                   (*fields[1] == '\0' || strcmp(fields[1], "-") == 0) ? NULL : fields[1],
	                   &s, &cause) != 0) {
		printf("error: %s\n", cause);
		free(cause);
		return;
	}
	t = start;
	for (i = 0; i < (k > 0 ? k : -k); i++) {
		t = k > 0 ? schedule_next(s, t) : schedule_prev(s, i == 0 ? t : t - 1);
		if (t == -1) {
			printf("%snone", i == 0 ? "" : " ");
			break;
		}
		printf("%s%lld", i == 0 ? "" : " ", (long long)t);
	}
	printf("\n");
	schedule_free(s);
}

int
main(void)
{
	char *line = NULL;
	size_t size = 0;

	while (getline(&line, &size, stdin) != -1) {
		cronnext_line(line);
		fflush(stdout);
	}
	free(line);
	return 0;
}
