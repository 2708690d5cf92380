/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boundary.c: the main of the lk-boundary-NAME executables (CMakeLists.txt), each linking
 * every object of one program's library (lk_worker, lk_cli, lk_web) with only the
 * libraries that program may use. A call across a forbidden boundary (the worker using a
 * cli/ function) is then an undefined reference, and the build fails.
 */
int
main(void)
{
	return 0;
}
