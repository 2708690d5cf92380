/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the web process (`leasekeeper web`). */
/*
 * webpage.h: the dashboard's page, generated at build time from src/web/page/ by
 * cmake/webpage.cmake: the HTML with its CSS and script inline, and the
 * Content-Security-Policy that lets exactly those run (by their SHA-256).
 */
#ifndef WEBPAGE_H
#define WEBPAGE_H

#include <stddef.h>

extern const char webpage_html[];
extern const size_t webpage_html_len;
extern const char webpage_csp[];

#endif
