/* Runs in: any process (main or the supervisor). */
/* safepath.h: directories opened by root without following a path someone else controls. */
#ifndef SAFEPATH_H
#define SAFEPATH_H

#include <sys/stat.h>

/* safepath_open_dir's flags. */
#define SAFEPATH_CREATE   0x1 /* create missing directories (mode 0750) */
#define SAFEPATH_CHECK    0x2 /* refuse a directory someone but root can write */
#define SAFEPATH_EXISTING 0x4 /* stop at the first missing directory: open its parent */

const char *safepath_unsafe(const struct stat *, int last);
int safepath_open_dir(const char *path, int flags, char **cause);

#endif
