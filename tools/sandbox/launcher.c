/* Tiny exec helper for LocalSandbox: lowers rlimits, starts a session, drops to an unprivileged uid and
 * execs the command. Exists because doing this in a Python preexec_fn forces fork() of the (large)
 * parent instead of vfork(), which costs milliseconds per run.
 * usage: launcher UID CPU_S AS_BYTES NPROC FSIZE_BYTES NOFILE -- COMMAND [ARGS...]
 * UID < 0 keeps the current uid; AS_BYTES 0 means no address-space limit; NPROC 0 means unchanged. */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "sandbox launcher: %s: %s\n", what, strerror(errno));
    _exit(126);
}

static void limit(int resource, long long value, const char *what) {
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t)value;
    if (setrlimit(resource, &rl) != 0) die(what);
}

int main(int argc, char **argv) {
    if (argc < 9 || strcmp(argv[7], "--") != 0) {
        fprintf(stderr, "usage: %s UID CPU AS NPROC FSIZE NOFILE -- CMD...\n", argv[0]);
        return 125;
    }
    long long uid = atoll(argv[1]), cpu = atoll(argv[2]), as = atoll(argv[3]);
    long long nproc = atoll(argv[4]), fsize = atoll(argv[5]), nofile = atoll(argv[6]);
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
    execv(argv[8], argv + 8);
    die(argv[8]);
    return 126;
}
