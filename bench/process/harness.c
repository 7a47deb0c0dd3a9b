/*
 * Process benchmark harness: runs plugin binaries the way a runtime does
 * (fork, exec with an environment, config on a stdin pipe, stdout read from
 * a pipe until EOF, wait4), interleaved A B C A B C ..., and prints one line
 * per invocation: case index, wall nanoseconds, peak RSS (KiB, from wait4).
 *
 * It is a small static C program on purpose: a child's peak RSS as the
 * kernel reports it includes the memory of the process it was forked from,
 * so the parent must be tiny to measure the plugins, not the harness.
 *
 * usage: harness ROUNDS DEBUG_FILE DEBUG_TEMPLATE CASE...
 *   CASE = BINARY:STDIN_FILE:ENV_FILE (ENV_FILE: one NAME=VALUE per line)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

struct bench_case { char *bin; char *stdin_data; size_t stdin_len; char **env; };

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: harness ROUNDS DEBUG_FILE DEBUG_TEMPLATE CASE...\n"); return 2; }
    int rounds = atoi(argv[1]);
    const char *debug_file = argv[2];
    size_t tmpl_len; char *tmpl = slurp(argv[3], &tmpl_len);
    int ncases = argc - 4;
    struct bench_case *cases = calloc(ncases, sizeof *cases);
    for (int i = 0; i < ncases; i++) {
        char *spec = strdup(argv[4 + i]);
        char *bin = strtok(spec, ":"), *in = strtok(NULL, ":"), *envf = strtok(NULL, ":");
        if (!bin || !in || !envf) { fprintf(stderr, "bad case %s\n", argv[4 + i]); return 2; }
        cases[i].bin = bin;
        cases[i].stdin_data = slurp(in, &cases[i].stdin_len);
        cases[i].env = env_lines(slurp(envf, NULL));
    }
    char out[65536];
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < ncases; i++) {
            /* Reset the debug file outside the timed region. */
            int d = open(debug_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (d < 0 || write(d, tmpl, tmpl_len) != (ssize_t)tmpl_len) { perror(debug_file); return 2; }
            close(d);
            int in[2], outp[2];
            if (pipe(in) || pipe(outp)) { perror("pipe"); return 2; }
            long long t0 = now_ns();
            pid_t pid = fork();
            if (pid == 0) {
                dup2(in[0], 0); dup2(outp[1], 1);
                close(in[0]); close(in[1]); close(outp[0]); close(outp[1]);
                char *args[] = { cases[i].bin, NULL };
                execve(cases[i].bin, args, cases[i].env);
                _exit(127);
            }
            close(in[0]); close(outp[1]);
            size_t off = 0;
            while (off < cases[i].stdin_len) {
                ssize_t w = write(in[1], cases[i].stdin_data + off, cases[i].stdin_len - off);
                if (w <= 0) break;
                off += w;
            }
            close(in[1]);
            while (read(outp[0], out, sizeof out) > 0) {}
            close(outp[0]);
            int status; struct rusage ru;
            wait4(pid, &status, 0, &ru);
            long long t = now_ns() - t0;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "case %d (%s) failed with status %d\n", i, cases[i].bin, status);
                return 1;
            }
            printf("%d %lld %ld\n", i, t, ru.ru_maxrss);
        }
    }
    return 0;
}
