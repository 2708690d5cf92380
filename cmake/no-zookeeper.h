/* SPDX-License-Identifier: Apache-2.0 */
/*
 * no-zookeeper.h: forced (-include) into every file of the libraries that must never use
 * ZooKeeper: lk_common, lk_supervisor, lk_config (CMakeLists.txt). Their include paths
 * already leave out src/zk, but the client's own headers live in /usr/include, which no
 * include path can hide: poisoning the handle type makes including them a compile error.
 */
#pragma GCC poison zhandle_t
