/* SPDX-License-Identifier: Apache-2.0 */
/*
 * no-zk-writes.h: forced (-include) into every file of lk_web, the read-only dashboard
 * (CMakeLists.txt). It declares ZooKeeper's and the cluster records' calls first, then
 * poisons each call that writes (creates, sets or deletes a node), so that a dashboard file
 * using one is a compile error rather than a review finding.
 */
#include "jobrec.h"
#include "zk.h"
#pragma GCC poison zk_create_node zk_create_path zk_set zk_delete zk_delete_guaranteed
#pragma GCC poison zk_delete_protected zoo_acreate zoo_acreate2 zoo_aset zoo_adelete zoo_amulti
#pragma GCC poison zoo_create zoo_create2 zoo_set zoo_set2 zoo_delete zoo_multi
#pragma GCC poison jobrec_new jobrec_check jobrec_claim jobrec_missed jobrec_paused_tick
#pragma GCC poison jobrec_record_run jobrec_missed_why jobrec_hand_back
