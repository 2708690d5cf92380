/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_writes_zk.c: a probe that must NOT build. It stands for a dashboard file that writes
 * to ZooKeeper; compiled like every file of lk_web (with cmake/no-zk-writes.h forced in),
 * it fails on the poisoned call: ctest's boundary.web_writes_nothing checks that it does.
 */
#include "zk.h"

void boundary_probe(struct zk *);

void
boundary_probe(struct zk *zk)
{
	zk_delete(zk, "/leasekeeper", -1, NULL, NULL);
}
