/*
 * cluster_file.c -- the cluster file: where it is (gc_cluster_find) and
 * what it says (gc_cluster_parse), for gfs_init (client.c).  The `galley`
 * tool compiles this file too, to show each server's address exactly as
 * the library reads it.  Uses only libc and galley.h's error codes.
 *
 * Threads: any (no shared state).
 */
#include "cluster_file.h"

#include "galley.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gc_cluster_parse(const char *path, char ***hosts, char ***ports, int *n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return GFS_ENOCLUSTER;
    char line[512];
    int cap = 0, cnt = 0, rc = 0;
    char **h = NULL, **p = NULL;
    while (fgets(line, sizeof(line), f)) {
        char *s = line;
        char *hash = strchr(s, '#');
        if (hash)
            *hash = '\0'; /* comments run to the end of the line */
        while (isspace((unsigned char)*s))
            s++;
        char *e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1]))
            *--e = '\0';
        if (*s == '\0')
            continue;
        char *colon = strrchr(s, ':');
        if (!colon || colon == s || !colon[1] || cnt >= GFS_MAX_SERVERS) {
            rc = GFS_EBADCLUSTER;
            break;
        }
        *colon = '\0';
        char *host = s, *port = colon + 1;
        /* [v6addr]:port */
        if (host[0] == '[' && colon[-1] == ']') {
            host++;
            colon[-1] = '\0';
        }
        char *endp;
        long pn = strtol(port, &endp, 10);
        if (*endp || pn <= 0 || pn > 65535) {
            rc = GFS_EBADCLUSTER;
            break;
        }
        if (cnt == cap) {
            cap = cap ? cap * 2 : 8;
            char **nh = realloc(h, sizeof(*h) * (size_t)cap);
            char **np = nh ? realloc(p, sizeof(*p) * (size_t)cap) : NULL;
            if (nh)
                h = nh;
            if (np)
                p = np;
            if (!nh || !np) {
                rc = -ENOMEM;
                break;
            }
        }
        h[cnt] = strdup(host);
        p[cnt] = strdup(port);
        cnt++;
    }
    fclose(f);
    if (!rc && cnt == 0)
        rc = GFS_EBADCLUSTER;
    if (rc) {
        for (int i = 0; i < cnt; i++) {
            free(h[i]);
            free(p[i]);
        }
        free(h);
        free(p);
        return rc;
    }
    *hosts = h;
    *ports = p;
    *n = cnt;
    return 0;
}

static bool fopen_readable(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f)
        fclose(f);
    return f != NULL;
}

const char *gc_cluster_find(const char *given, char *buf, size_t len)
{
    return gc_cluster_search(given, buf, len, fopen_readable);
}
