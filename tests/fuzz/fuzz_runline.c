/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_runline.c: a run record read from ZooKeeper, which anyone who can write under
 * <root>/jobs can forge, printed as `logs` heads a run and as `status` lists it
 * (runline_print, each style). The input is the record's JSON.
 *
 * Each style prints exactly one line: one newline, at the end, and no other control
 * character (every string of the record is escaped), whatever the record holds.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "runline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* rec printed in style: one line of printable text (UTF-8 above 0x7f allowed). */
static void
fuzz_runline_one(json_t *rec, enum runline_style style)
{
	char *out = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&out, &len);

	if (f == NULL)
		abort();
	runline_print(f, rec, style, 0);
	fclose(f);
	if (len == 0 || out[len - 1] != '\n' || strlen(out) != len)
		abort();
	for (i = 0; i + 1 < len; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			abort();
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *rec;

	if (size > 65536)
		return 0;
	rec = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (rec == NULL)
		return 0;
	fuzz_runline_one(rec, RUNLINE_HEADER);
	fuzz_runline_one(rec, RUNLINE_ROW);
	json_decref(rec);
	return 0;
}
