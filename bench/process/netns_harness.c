/*
 * Interface-plugin benchmark harness: for each round and each case, makes
 * a fresh network namespace at /run/netns/NAME, runs the case's plugin
 * with CNI_COMMAND=ADD, then with DEL, each the way a runtime does (fork,
 * exec with an environment, config on a stdin pipe, stdout read until
 * EOF, wait4), then removes the namespace. Only the two executions are
 * timed. Prints one line per execution: case index, 0 for ADD or 1 for
 * DEL, wall nanoseconds, peak RSS (KiB, from wait4).
 *
 * Everything happens inside namespaces the harness creates: it first
 * moves itself into a new network namespace (the "host" side the plugins
 * see, with the host ends of their pairs, their routes and addresses), and
 * each container namespace is made from there, as `ip netns add` does
 * (unshare, bind mount, switch back). The harness is single-threaded, so
 * switching its own namespace is safe.
 *
 * usage: netns_harness ROUNDS NETNS_NAME CASE...
 *   CASE = BINARY:STDIN_FILE:ADD_ENV_FILE:DEL_ENV_FILE
 *   (env files: one NAME=VALUE per line; CNI_NETNS=/run/netns/NETNS_NAME)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

struct bench_case { char *bin; char *stdin_data; size_t stdin_len; char **env[2]; };

static void die(const char *what) { perror(what); exit(2); }

/* A new namespace mounted at `path`; the harness stays in `home`. */
static void make_netns(const char *path, int home) {
    int fd = open(path, O_RDONLY | O_CREAT | O_EXCL, 0444);
    if (fd < 0) die(path);
    close(fd);
    if (unshare(CLONE_NEWNET)) die("unshare");
    if (mount("/proc/thread-self/ns/net", path, NULL, MS_BIND, NULL)) die("mount");
    if (setns(home, CLONE_NEWNET)) die("setns");
}

static void remove_netns(const char *path) {
    if (umount2(path, MNT_DETACH)) die("umount");
    if (unlink(path)) die(path);
}

/* Runs one plugin execution; returns its wall time, sets *rss. */
static long long run(struct bench_case *c, int del, long *rss) {
    static char out[65536];
    int in[2], outp[2];
    if (pipe(in) || pipe(outp)) die("pipe");
    long long t0 = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0); dup2(outp[1], 1);
        close(in[0]); close(in[1]); close(outp[0]); close(outp[1]);
        char *args[] = { c->bin, NULL };
        execve(c->bin, args, c->env[del]);
        _exit(127);
    }
    close(in[0]); close(outp[1]);
    size_t off = 0;
    while (off < c->stdin_len) {
        ssize_t w = write(in[1], c->stdin_data + off, c->stdin_len - off);
        if (w <= 0) break;
        off += w;
    }
    close(in[1]);
    size_t got = 0; ssize_t r;
    while ((r = read(outp[0], out + got, sizeof out - 1 - got)) > 0) got += r;
    out[got] = 0;
    close(outp[0]);
    int status; struct rusage ru;
    wait4(pid, &status, 0, &ru);
    long long t = now_ns() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s %s failed with status %d: %s\n", c->bin, del ? "DEL" : "ADD", status, out);
        exit(1);
    }
    *rss = ru.ru_maxrss;
    return t;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: netns_harness ROUNDS NETNS_NAME CASE...\n"); return 2; }
    int rounds = atoi(argv[1]);
    char path[256];
    snprintf(path, sizeof path, "/run/netns/%s", argv[2]);
    int ncases = argc - 3;
    struct bench_case *cases = calloc(ncases, sizeof *cases);
    for (int i = 0; i < ncases; i++) {
        char *spec = strdup(argv[3 + i]);
        char *bin = strtok(spec, ":"), *in = strtok(NULL, ":");
        char *add = strtok(NULL, ":"), *del = strtok(NULL, ":");
        if (!bin || !in || !add || !del) { fprintf(stderr, "bad case %s\n", argv[3 + i]); return 2; }
        cases[i].bin = bin;
        cases[i].stdin_data = slurp(in, &cases[i].stdin_len);
        cases[i].env[0] = env_lines(slurp(add, NULL));
        cases[i].env[1] = env_lines(slurp(del, NULL));
    }
    mkdir("/run/netns", 0755);
    if (unshare(CLONE_NEWNET)) die("unshare (the harness needs root)");
    int home = open("/proc/thread-self/ns/net", O_RDONLY);
    if (home < 0) die("open own netns");
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < ncases; i++) {
            make_netns(path, home);
            for (int del = 0; del < 2; del++) {
                long rss;
                long long t = run(&cases[i], del, &rss);
                printf("%d %d %lld %ld\n", i, del, t, rss);
            }
            remove_netns(path);
        }
    }
    return 0;
}
