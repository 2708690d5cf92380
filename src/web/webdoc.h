/* Runs in: the web process (`leasekeeper web`). */
/* webdoc.h: Host headers, listen addresses and bounded strings of the dashboard (pure). */
#ifndef WEBDOC_H
#define WEBDOC_H

#include <stddef.h>

#include <jansson.h>

int webdoc_loopback(const char *listen);
void webdoc_trim(json_t *, size_t max);

#endif
