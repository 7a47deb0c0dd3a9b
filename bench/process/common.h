/*
 * What both process harnesses (harness.c, netns_harness.c) need before
 * they fork a plugin: a file read whole, an environment from its lines, a
 * monotonic clock. Included by each one's single translation unit, so the
 * functions stay static and each harness stays one small static binary.
 */
#ifndef BENCH_PROCESS_COMMON_H
#define BENCH_PROCESS_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    char *buf = malloc(n + 1);
    if (fread(buf, 1, n, f) != (size_t)n) { perror(path); exit(2); }
    buf[n] = 0; fclose(f);
    if (len) *len = n;
    return buf;
}

static char **env_lines(char *text) {
    size_t cap = 16, n = 0; char **env = malloc(cap * sizeof *env);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (n + 2 > cap) env = realloc(env, (cap *= 2) * sizeof *env);
        env[n++] = line;
    }
    env[n] = NULL;
    return env;
}

static long long now_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
