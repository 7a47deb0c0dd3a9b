/*
 * Interface-plugin benchmark harness: for each round and each case, makes
 * a fresh network namespace at /run/netns/NAME, runs the case's plugin
 * with CNI_COMMAND=ADD, then with DEL, each the way a runtime does (fork,
 * exec with an environment, config on a stdin pipe, stdout read until
 * EOF, wait4), then removes the namespace. Only the executions are
 * timed. Prints one line per command: case index, 0 for ADD or 1 for
 * DEL, wall nanoseconds, peak RSS (KiB, from wait4).
 *
 * A case may be a chain, as a runtime runs a network list: BINARY and
 * STDIN_FILE are then comma-separated lists of the same length. ADD runs
 * them in order, each configuration's marker @PREV@ replaced by
 * `,"prevResult":` and the previous plugin's output (by nothing for the
 * first); DEL runs them in reverse order with the marker removed (libcni
 * sends no prevResult on DEL before cniVersion 0.4.0) or, with
 * --del-prev, replaced by the chain's last ADD output (from 0.4.0 libcni
 * gives every plugin's DEL the cached result of the list's ADD). The line
 * then has the whole chain's wall time, its largest peak RSS, and each
 * plugin's wall time in the order it ran.
 *
 * Everything happens inside namespaces the harness creates: it first
 * moves itself into a new network namespace (the "host" side the plugins
 * see, with the host ends of their pairs, their routes and addresses, and
 * their packet filter tables), and each container namespace is made from
 * there, as `ip netns add` does (unshare, bind mount, switch back). The
 * harness is single-threaded, so switching its own namespace is safe.
 * With --setup, COMMAND (run by /bin/sh) prepares that host namespace
 * first, e.g. prefills its tables.
 *
 * With --settle MS, the harness pauses MS milliseconds after removing each
 * namespace. The kernel tears a namespace down after its last reference
 * goes, on a worker (cleanup_net: RCU waits, the loopback's unregister
 * under the rtnl lock); without a pause that work overlaps the next
 * case's commands and is charged to them: measured on kind's chain, ours
 * ptp DEL 29.7 ms without, 19.6 ms with 100 ms, the reference's 23.9 and
 * 24.0 ms (its longer ADD leaves the kernel the time).
 *
 * usage: netns_harness [--del-prev] [--setup COMMAND] [--settle MS] ROUNDS NETNS_NAME CASE...
 *   CASE = BINARY[,BINARY...]:STDIN_FILE[,STDIN_FILE...]:ADD_ENV_FILE:DEL_ENV_FILE
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

#define MAX_CHAIN 8
#define MARKER "@PREV@"

struct bench_case { int n; char *bin[MAX_CHAIN]; char *stdin_data[MAX_CHAIN]; char **env[2]; };

static void die(const char *what) { perror(what); exit(2); }

/* --del-prev: DEL gets the chain's last ADD output as prevResult. */
static int del_prev;

/* --settle MS: pause after removing each namespace. */
static int settle_ms;

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

/* Runs one plugin execution; returns its wall time, sets *rss and leaves
 * its stdout in `out` (at most `cap` - 1 bytes, NUL-terminated). */
static long long run(const char *bin, const char *stdin_data, char **env, const char *what,
                     char *out, size_t cap, long *rss) {
    size_t stdin_len = strlen(stdin_data);
    int in[2], outp[2];
    if (pipe(in) || pipe(outp)) die("pipe");
    long long t0 = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0); dup2(outp[1], 1);
        close(in[0]); close(in[1]); close(outp[0]); close(outp[1]);
        char *args[] = { (char *)bin, NULL };
        execve(bin, args, env);
        _exit(127);
    }
    close(in[0]); close(outp[1]);
    size_t off = 0;
    while (off < stdin_len) {
        ssize_t w = write(in[1], stdin_data + off, stdin_len - off);
        if (w <= 0) break;
        off += w;
    }
    close(in[1]);
    size_t got = 0; ssize_t r;
    while ((r = read(outp[0], out + got, cap - 1 - got)) > 0) got += r;
    out[got] = 0;
    close(outp[0]);
    int status; struct rusage ru;
    wait4(pid, &status, 0, &ru);
    long long t = now_ns() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s %s failed with status %d: %s\n", bin, what, status, out);
        exit(1);
    }
    *rss = ru.ru_maxrss;
    return t;
}

/* `template` with its marker replaced by `,"prevResult":PREV` (PREV's
 * trailing whitespace dropped), or removed when `prev` is NULL. */
static char *with_prev(const char *template, const char *prev) {
    const char *at = strstr(template, MARKER);
    if (!at) return strdup(template);
    size_t plen = prev ? strlen(prev) : 0;
    while (plen && strchr(" \t\r\n", prev[plen - 1])) plen--;
    const char *key = prev ? ",\"prevResult\":" : "";
    size_t n = (at - template) + strlen(key) + plen + strlen(at + strlen(MARKER)) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%.*s%s", (int)(at - template), template, key, (int)plen,
             prev ? prev : "", at + strlen(MARKER));
    return s;
}

/* One command of a case: its chain in order (ADD) or reverse (DEL).
 * Prints the line described above. */
static void run_case(int index, struct bench_case *c, int del) {
    static char out[2][65536], cached[65536];
    long long step[MAX_CHAIN], total = 0;
    long max_rss = 0;
    const char *prev = NULL;
    for (int k = 0; k < c->n; k++) {
        int i = del ? c->n - 1 - k : k;
        char *input = with_prev(c->stdin_data[i], del ? (del_prev ? cached : NULL) : prev);
        long rss;
        step[k] = run(c->bin[i], input, c->env[del], del ? "DEL" : "ADD", out[k % 2], sizeof out[0], &rss);
        free(input);
        prev = out[k % 2];
        total += step[k];
        if (rss > max_rss) max_rss = rss;
    }
    if (!del) snprintf(cached, sizeof cached, "%s", prev);
    printf("%d %d %lld %ld", index, del, total, max_rss);
    if (c->n > 1)
        for (int k = 0; k < c->n; k++) printf(" %lld", step[k]);
    printf("\n");
}

/* Splits `text` at commas into at most MAX_CHAIN parts; returns how many. */
static int split(char *text, char **parts) {
    int n = 0;
    for (char *part = strtok(text, ","); part; part = strtok(NULL, ",")) {
        if (n == MAX_CHAIN) { fprintf(stderr, "a chain has at most %d plugins\n", MAX_CHAIN); exit(2); }
        parts[n++] = part;
    }
    return n;
}

int main(int argc, char **argv) {
    const char *setup = NULL;
    if (argc > 1 && strcmp(argv[1], "--del-prev") == 0) { del_prev = 1; argv++; argc--; }
    if (argc > 2 && strcmp(argv[1], "--setup") == 0) { setup = argv[2]; argv += 2; argc -= 2; }
    if (argc > 2 && strcmp(argv[1], "--settle") == 0) { settle_ms = atoi(argv[2]); argv += 2; argc -= 2; }
    if (argc < 4) { fprintf(stderr, "usage: netns_harness [--del-prev] [--setup COMMAND] [--settle MS] ROUNDS NETNS_NAME CASE...\n"); return 2; }
    int rounds = atoi(argv[1]);
    char path[256];
    snprintf(path, sizeof path, "/run/netns/%s", argv[2]);
    int ncases = argc - 3;
    struct bench_case *cases = calloc(ncases, sizeof *cases);
    for (int i = 0; i < ncases; i++) {
        char *spec = strdup(argv[3 + i]);
        char *bins = strtok(spec, ":"), *ins = strtok(NULL, ":");
        char *add = strtok(NULL, ":"), *del = strtok(NULL, ":");
        if (!bins || !ins || !add || !del) { fprintf(stderr, "bad case %s\n", argv[3 + i]); return 2; }
        char *files[MAX_CHAIN];
        cases[i].n = split(bins, cases[i].bin);
        if (split(ins, files) != cases[i].n) { fprintf(stderr, "case %s: one stdin file per binary\n", argv[3 + i]); return 2; }
        for (int k = 0; k < cases[i].n; k++) cases[i].stdin_data[k] = slurp(files[k], NULL);
        cases[i].env[0] = env_lines(slurp(add, NULL));
        cases[i].env[1] = env_lines(slurp(del, NULL));
    }
    mkdir("/run/netns", 0755);
    if (unshare(CLONE_NEWNET)) die("unshare (the harness needs root)");
    int home = open("/proc/thread-self/ns/net", O_RDONLY);
    if (home < 0) die("open own netns");
    if (setup) {
        int status = system(setup);
        if (status != 0) { fprintf(stderr, "setup command failed with status %d: %s\n", status, setup); return 1; }
    }
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < ncases; i++) {
            make_netns(path, home);
            for (int del = 0; del < 2; del++) run_case(i, &cases[i], del);
            remove_netns(path);
            if (settle_ms > 0) {
                struct timespec ts = { settle_ms / 1000, (settle_ms % 1000) * 1000000L };
                nanosleep(&ts, NULL);
            }
        }
    }
    return 0;
}
