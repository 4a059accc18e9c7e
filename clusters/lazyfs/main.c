/* fencepost-lazyfs BACKING MOUNTPOINT [options]: serve BACKING at MOUNTPOINT, in the foreground,
 * until unmounted (a clean unmount, SIGTERM or SIGINT makes everything durable first, as a disk's
 * unmount does; after `drop` nothing is written any more).
 *
 * Exit codes: 0 unmounted; 1 failed while serving; 2 bad arguments or folders; 3 mount refused.
 */
#include "lazyfs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define SUBTYPE "fencepost-lazyfs"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: fencepost-lazyfs BACKING MOUNTPOINT [--model journal|strict] [--passthrough]\n"
            "                        [--mmap-suffix SUFFIX]... [--fsname NAME] [--cache-limit-mb N]\n"
            "Serves the folder BACKING at MOUNTPOINT, keeping what is not made durable (fsync) in memory.\n"
            "Control: a unix socket at BACKING/" LZ_STATE_DIR "/" LZ_SOCKET " (ping, stats, checkpoint, drop).\n");
}

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    lz_log("%s", line);
    return code;
}

/* Is `inner` the folder `outer` or inside it? (both resolved) */
static bool within(const char *inner, const char *outer)
{
    size_t n = strlen(outer);
    if (n == 1) /* "/" */
        return true;
    return !strncmp(inner, outer, n) && (inner[n] == '\0' || inner[n] == '/');
}

static void raise_file_limit(void)
{
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* fuse's -o values are comma separated: escape what would split them */
static char *escape_option(const char *value)
{
    char *out = malloc(strlen(value) * 2 + 1);
    if (!out)
        return NULL;
    char *p = out;
    for (; *value; value++) {
        if (*value == ',' || *value == '\\')
            *p++ = '\\';
        *p++ = *value;
    }
    *p = '\0';
    return out;
}

/* Hold the backing folder: one daemon per backing folder at a time. */
static int take_lock(struct lz_fs *fs)
{
    int fd = openat(fs->state_fd, LZ_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return fail(2, "cannot open %s/%s/%s: %s", fs->backing, LZ_STATE_DIR, LZ_LOCK, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        char holder[PATH_MAX + 32] = "";
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        return fail(2, "the backing folder %s is served by another fencepost-lazyfs (pid and mount point: %s): "
                       "unmount that one first (fencepost cleanup removes the ones crashed runs left)",
                    fs->backing, holder[0] ? holder : "unknown");
    }
    char line[PATH_MAX + 32];
    int len = snprintf(line, sizeof line, "%d %s\n", (int)getpid(), fs->mountpoint);
    if (ftruncate(fd, 0) || pwrite(fd, line, (size_t)len, 0) != len)
        lz_log("cannot record the lock holder: %s", strerror(errno));
    return 0; /* fd stays open: the lock lives as long as this process */
}

struct settings {
    const char *backing, *mountpoint, *fsname;
    enum lz_model model;
    bool passthrough;
    char **suffixes;
    int n_suffixes;
    uint64_t cache_limit;
};

static int parse(int argc, char **argv, struct settings *s)
{
    static char *default_suffixes[] = {".index", ".timeindex"};
    static const struct option longs[] = {
        {"model", required_argument, NULL, 'm'},    {"passthrough", no_argument, NULL, 'p'},
        {"mmap-suffix", required_argument, NULL, 's'}, {"fsname", required_argument, NULL, 'f'},
        {"cache-limit-mb", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *s = (struct settings){.fsname = SUBTYPE, .model = LZ_JOURNAL, .cache_limit = 1024ULL << 20};
    s->suffixes = calloc((size_t)argc + 1, sizeof *s->suffixes);
    int opt;
    while ((opt = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (opt) {
        case 'm':
            if (!strcmp(optarg, "journal"))
                s->model = LZ_JOURNAL;
            else if (!strcmp(optarg, "strict"))
                s->model = LZ_STRICT;
            else
                return fail(2, "--model %s: choose journal or strict", optarg);
            break;
        case 'p':
            s->passthrough = true;
            break;
        case 's':
            s->suffixes[s->n_suffixes++] = optarg;
            break;
        case 'f':
            s->fsname = optarg;
            break;
        case 'c': {
            char *end;
            unsigned long long mb = strtoull(optarg, &end, 10);
            if (*end || end == optarg)
                return fail(2, "--cache-limit-mb %s: give a whole number of MiB (0: no limit)", optarg);
            s->cache_limit = (uint64_t)mb << 20;
            break;
        }
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (argc - optind != 2) {
        usage(stderr);
        return 2;
    }
    if (!s->n_suffixes) {
        s->suffixes = default_suffixes;
        s->n_suffixes = 2;
    }
    s->backing = argv[optind];
    s->mountpoint = argv[optind + 1];
    return 0;
}

static int open_backing(struct lz_fs *fs, const struct settings *s)
{
    fs->backing = realpath(s->backing, NULL);
    if (!fs->backing)
        return fail(2, "backing folder %s: %s", s->backing, strerror(errno));
    fs->mountpoint = realpath(s->mountpoint, NULL);
    if (!fs->mountpoint)
        return fail(2, "mount point %s: %s", s->mountpoint, strerror(errno));
    if (within(fs->mountpoint, fs->backing) || within(fs->backing, fs->mountpoint))
        return fail(2, "mount point %s and backing folder %s must not contain each other", fs->mountpoint,
                    fs->backing);
    fs->root_fd = open(fs->backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fs->root_fd < 0)
        return fail(2, "backing folder %s: %s", fs->backing, strerror(errno));
    struct stat st;
    if (fstat(fs->root_fd, &st))
        return fail(2, "backing folder %s: %s", fs->backing, strerror(errno));
    fs->root_dev = st.st_dev;
    fs->root_ino = st.st_ino;
    if (mkdirat(fs->root_fd, LZ_STATE_DIR, 0700) && errno != EEXIST)
        return fail(2, "cannot make %s/%s: %s", fs->backing, LZ_STATE_DIR, strerror(errno));
    fs->state_fd = openat(fs->root_fd, LZ_STATE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fs->state_fd < 0)
        return fail(2, "cannot open %s/%s: %s", fs->backing, LZ_STATE_DIR, strerror(errno));
    return 0;
}

static int init_state(struct lz_fs *fs, const struct settings *s)
{
    fs->model = s->model;
    fs->passthrough = s->passthrough;
    fs->mmap_suffixes = s->suffixes;
    fs->n_mmap_suffixes = s->n_suffixes;
    fs->cache_limit = s->cache_limit;
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* a drop must not wait behind an endless stream of requests */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&fs->drop_lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    pthread_mutex_init(&fs->ns_lock, NULL);
    pthread_mutex_init(&fs->tab_lock, NULL);
    if (nodes_init(fs))
        return fail(1, "out of memory");
    int rc = ns_init(fs);
    if (rc)
        return fail(2, "cannot prepare %s/%s/%s: %s", fs->backing, LZ_STATE_DIR, LZ_TRASH_DIR, strerror(-rc));
    return 0;
}

static struct fuse *make_fuse(struct lz_fs *fs, const char *argv0, const char *fsname)
{
    char *name = escape_option(fsname);
    char opts[PATH_MAX];
    snprintf(opts, sizeof opts, "fsname=%s,subtype=%s,default_permissions%s", name ? name : SUBTYPE, SUBTYPE,
             geteuid() == 0 ? ",allow_other" : "");
    free(name);
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    if (fuse_opt_add_arg(&args, argv0) || fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, opts))
        return NULL;
    struct fuse *f = fuse_new(&args, &lz_ops, sizeof lz_ops, fs);
    fuse_opt_free_args(&args);
    return f;
}

int main(int argc, char **argv)
{
    struct settings s;
    int rc = parse(argc, argv, &s);
    if (rc)
        return rc;
    umask(0); /* modes come from the callers, masked with their own umask (ops.c) */
    raise_file_limit();
    struct lz_fs *fs = calloc(1, sizeof *fs);
    if (!fs)
        return fail(1, "out of memory");
    if ((rc = open_backing(fs, &s)) || (rc = take_lock(fs)) || (rc = init_state(fs, &s)))
        return rc;
    int listen_fd = control_listen(fs);
    if (listen_fd < 0)
        return fail(2, "cannot listen on %s/%s/%s: %s", fs->backing, LZ_STATE_DIR, LZ_SOCKET, strerror(-listen_fd));
    struct fuse *f = make_fuse(fs, argv[0], s.fsname);
    if (!f)
        return fail(2, "fuse refused the options (see above)");
    if (fuse_mount(f, fs->mountpoint))
        return fail(3, "cannot mount at %s (the reason is above): is /dev/fuse there, and are you root "
                       "or is fusermount3 installed?", fs->mountpoint);
    struct fuse_session *se = fuse_get_session(f);
    if (fuse_set_signal_handlers(se)) {
        fuse_unmount(f);
        return fail(1, "cannot install signal handlers");
    }
    pthread_t control;
    if ((rc = control_start(fs, listen_fd, &control))) {
        fuse_unmount(f);
        return fail(1, "cannot start the control thread: %s", strerror(-rc));
    }
    lz_log("serving %s at %s (model %s%s)", fs->backing, fs->mountpoint, fs->model == LZ_STRICT ? "strict" : "journal",
           fs->passthrough ? ", passthrough" : "");
    struct fuse_loop_config *loop = fuse_loop_cfg_create();
    rc = fuse_loop_mt(f, loop);
    fuse_loop_cfg_destroy(loop);
    control_stop(fs, listen_fd, control);
    fuse_remove_signal_handlers(se);
    fuse_unmount(f);
    fuse_destroy(f); /* runs op_destroy: a clean unmount makes everything durable */
    unlinkat(fs->state_fd, LZ_SOCKET, 0);
    lz_log("unmounted %s%s", fs->mountpoint, atomic_load(&fs->dropped) ? " (after a drop)" : "");
    return rc ? 1 : 0;
}
