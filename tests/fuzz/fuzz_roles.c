/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_roles.c: <root>/roles as an operator's command reads it before it creates a control
 * record (rolesrec_parse), which whoever can write the node may have forged. The first byte
 * picks the command's own identity (none, the workers', another); the rest is the node.
 *
 * What parses names workers that are a digest id, bounded, not the command's own, and a
 * reader that is "" or such an id; what does not parse names nobody; an accepted pair
 * written again (rolesrec_dump) reads back the same.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "authfile.h"
#include "rolesrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An identity a parse may give: "" or a digest id, bounded, not own. */
static void
fuzz_roles_id(const char *id, const char *own)
{
	if (strlen(id) > ROLESREC_MAX_ID)
		abort();
	if (id[0] != '\0' && (!authfile_valid_digest_id(id) || (own != NULL && !strcmp(id, own))))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *owns[] = {NULL, "leasekeeper:AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
	                             "operator:BBBBBBBBBBBBBBBBBBBBBBBBBBB="};
	struct rolesrec r, back;
	const char *own;
	char *out;

	if (size < 1 || size > 2 * ROLESREC_MAX_DATA)
		return 0;
	own = owns[data[0] % 3];
	if (rolesrec_parse((const char *)data + 1, (int)(size - 1), own, &r)) {
		if (r.workers[0] == '\0')
			abort();
		fuzz_roles_id(r.workers, own);
		fuzz_roles_id(r.reader, own);
		out = rolesrec_dump(r.workers, r.reader[0] != '\0' ? r.reader : NULL);
		if (!rolesrec_parse(out, (int)strlen(out), own, &back) ||
		    strcmp(back.workers, r.workers) != 0 || strcmp(back.reader, r.reader) != 0)
			abort();
		free(out);
	} else if (r.workers[0] != '\0' || r.reader[0] != '\0')
		abort();
	return 0;
}
