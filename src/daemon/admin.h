/* Runs in: the main process. */
/* admin.h: one-shot commands that read or change the cluster: status, set-leases. */
#ifndef ADMIN_H
#define ADMIN_H

#include "leasekeeper.h"

int admin_status(int argc, char **argv);
int admin_set_leases(int argc, char **argv);
int admin_logs(int argc, char **argv);

#endif
