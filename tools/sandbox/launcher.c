/* Tiny exec helper for LocalSandbox: joins the run's control groups, lowers rlimits, drops to an
 * unprivileged uid and execs the command. Exists because doing this in a Python preexec_fn forces fork()
 * of the (large) parent instead of vfork(), which costs milliseconds per run.
 * usage: launcher UID CPU_S AS_BYTES NPROC FSIZE_BYTES NOFILE CGROUP_PROCS -- COMMAND [ARGS...]
 * UID < 0 keeps the current uid; AS_BYTES 0 means no address-space limit; NPROC 0 means unchanged;
 * CGROUP_PROCS is a ':'-separated list of cgroup.procs files to write our pid into, or "-". Joining
 * happens before exec (and while still root), so nothing the command starts can run outside the run's
 * groups.
 * Parked mode: launcher --parked ORDERS_FD SECCOMP_FD CGROUP_PROCS joins the groups at once (moving a task
 * between cgroups waits for an RCU grace period, milliseconds), then blocks until the parent writes its
 * orders to ORDERS_FD: a 10-digit byte count, then that many bytes of NUL-terminated fields KEEP_SECCOMP
 * CWD UID CPU AS NPROC FSIZE NOFILE - -- COMMAND [ARGS...]. KEEP_SECCOMP "1" leaves SECCOMP_FD open for
 * the command (bwrap --seccomp), "0" closes it. EOF before the orders are complete: exit 125. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "sandbox launcher: %s: %s\n", what, strerror(errno));
    _exit(126);
}

static void join_cgroups(char *list) {
    if (strcmp(list, "-") == 0) return;
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%d", (int)getpid());
    for (char *path = strtok(list, ":"); path != NULL; path = strtok(NULL, ":")) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) die(path);
        if (write(fd, pid, (size_t)len) != len) die(path);
        close(fd);
    }
}

static void limit(int resource, long long value, const char *what) {
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t)value;
    if (setrlimit(resource, &rl) != 0) die(what);
}

static int run(int argc, char **argv);

/* Reads exactly n bytes of fd; fewer (EOF) means the orders will not come: exit quietly. */
static void read_exact(int fd, char *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        ssize_t got = read(fd, buf + done, n - done);
        if (got < 0) {
            if (errno == EINTR) continue;
            die("orders");
        }
        if (got == 0) _exit(125);
        done += (size_t)got;
    }
}

static int parked(char **argv) {
    int orders = atoi(argv[2]), seccomp = atoi(argv[3]);
    join_cgroups(argv[4]);
    /* A length header, not EOF, ends the orders: a copy of the write end in some forked process
     * cannot hold the run back. */
    char header[11] = {0};
    read_exact(orders, header, 10);
    size_t len = (size_t)strtoul(header, NULL, 10);
    if (len == 0 || len > (64u << 20)) { errno = EINVAL; die("orders"); }
    char *buf = malloc(len);
    if (buf == NULL) die("orders");
    read_exact(orders, buf, len);
    close(orders);
    if (buf[len - 1] != '\0') { errno = EINVAL; die("orders"); }
    size_t count = 0;
    for (size_t i = 0; i < len; i++) count += buf[i] == '\0';
    char **fields = calloc(count + 2, sizeof(char *));
    if (fields == NULL) die("orders");
    fields[0] = argv[0];
    size_t k = 1;
    for (char *p = buf; p < buf + len; p += strlen(p) + 1) fields[k++] = p;
    fields[k] = NULL;
    if (count < 2) { errno = EINVAL; die("orders"); }
    if (strcmp(fields[1], "1") != 0 && seccomp >= 0) close(seccomp);
    if (chdir(fields[2]) != 0) die(fields[2]);
    /* The rest is the ordinary command line: UID ... -- COMMAND. */
    fields[2] = argv[0];
    return run((int)count - 1, fields + 2);
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "--parked") == 0) return parked(argv);
    return run(argc, argv);
}

static int run(int argc, char **argv) {
    if (argc < 10 || strcmp(argv[8], "--") != 0) {
        fprintf(stderr, "usage: %s UID CPU AS NPROC FSIZE NOFILE CGROUP_PROCS -- CMD...\n", argv[0]);
        return 125;
    }
    long long uid = atoll(argv[1]), cpu = atoll(argv[2]), as = atoll(argv[3]);
    long long nproc = atoll(argv[4]), fsize = atoll(argv[5]), nofile = atoll(argv[6]);
    join_cgroups(argv[7]);
    limit(RLIMIT_CPU, cpu, "RLIMIT_CPU");
    limit(RLIMIT_FSIZE, fsize, "RLIMIT_FSIZE");
    limit(RLIMIT_NOFILE, nofile, "RLIMIT_NOFILE");
    limit(RLIMIT_CORE, 0, "RLIMIT_CORE");
    if (as > 0) limit(RLIMIT_AS, as, "RLIMIT_AS");
    if (nproc > 0) limit(RLIMIT_NPROC, nproc, "RLIMIT_NPROC");
    if (uid >= 0) {
        if (setgroups(0, NULL) != 0) die("setgroups");
        if (setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) != 0) die("setresgid");
        if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) die("setresuid");
    }
    execv(argv[9], argv + 9);
    die(argv[9]);
    return 126;
}
