/* Runs in: the main process. */
/* ctlrec.h: the cluster-wide controls as ZooKeeper holds them (pause, drain), read bounded. */
#ifndef CTLREC_H
#define CTLREC_H

#include <stdint.h>

#define CTLREC_MAX_SIZE    65536        /* bytes of a control node parsed; larger is ignored */
#define CTLREC_MAX_DRAIN_S (30 * 86400) /* a drain deadline longer than this is none */

int ctlrec_paused(const char *data, int len, int *stop_running);
int64_t ctlrec_drain_deadline_ms(const char *data, int len);

#endif
