/* The control channel: a unix stream socket, backing/.fencepost-lazyfs/control.sock.
 * One command per connection, one line each way; the answer is a JSON object with "ok", sent
 * only once the command is done, so a caller knows `drop` has finished before it kills anything.
 *   ping        {"ok":true,"ready":...,"pid":...,"model":...,"dropped":...}
 *   stats       what is not durable yet: bytes (cached pages) and files of data, folders and entries
 *   checkpoint  make everything durable
 *   drop        lose everything not durable; every later request is answered with EIO
 * (A socket rather than a fifo: it answers, so success, failure and the end of a drop reach
 * the caller; several callers cannot interleave their commands; nothing blocks on open.)
 */
#include "lazyfs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int control_listen(struct lz_fs *fs)
{
    unlinkat(fs->state_fd, LZ_SOCKET, 0); /* left by a daemon that was killed; the lock is ours */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    /* through the state folder's descriptor: the real path may be longer than sun_path */
    snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/%s", fs->state_fd, LZ_SOCKET);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) || listen(fd, 16)) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

static const char *yes(bool b) { return b ? "true" : "false"; }

struct tally {
    uint64_t bytes, files;
    int error;
};

static void count_dirty(struct lz_fs *fs, struct lz_node *n, void *arg)
{
    (void)fs;
    struct tally *t = arg;
    if (!node_dirty(n))
        return;
    t->files++;
    t->bytes += (uint64_t)n->pages.count * LZ_PAGE;
}

static void discard(struct lz_fs *fs, struct lz_node *n, void *arg)
{
    struct tally *t = arg;
    if (node_dirty(n))
        t->files++;
    t->bytes += node_discard(fs, n);
}

static void flush(struct lz_fs *fs, struct lz_node *n, void *arg)
{
    struct tally *t = arg;
    if (!node_dirty(n))
        return;
    int rc = node_flush(fs, n);
    if (rc && !t->error)
        t->error = rc;
    t->files++;
}

int lz_checkpoint(struct lz_fs *fs)
{
    struct tally t = {0};
    nodes_each(fs, flush, &t);
    pthread_mutex_lock(&fs->ns_lock);
    ns_sync_all(fs);
    pthread_mutex_unlock(&fs->ns_lock);
    return t.error;
}

static void answer(struct lz_fs *fs, const char *cmd, char *out, size_t size)
{
    if (!strcmp(cmd, "ping")) {
        snprintf(out, size, "{\"ok\":true,\"ready\":%s,\"pid\":%d,\"model\":\"%s\",\"passthrough\":%s,\"dropped\":%s}",
                 yes(fs->ready), (int)getpid(), fs->model == LZ_STRICT ? "strict" : "journal",
                 yes(fs->passthrough), yes(fs->dropped));
    } else if (!strcmp(cmd, "stats")) {
        struct tally t = {0};
        uint64_t dirs = 0, entries = 0;
        pthread_rwlock_rdlock(&fs->drop_lock);
        if (!fs->dropped) {
            nodes_each(fs, count_dirty, &t);
            pthread_mutex_lock(&fs->ns_lock);
            ns_pending(fs, &dirs, &entries);
            pthread_mutex_unlock(&fs->ns_lock);
        }
        pthread_rwlock_unlock(&fs->drop_lock);
        snprintf(out, size,
                 "{\"ok\":true,\"dropped\":%s,\"dirty_bytes\":%llu,\"dirty_files\":%llu,"
                 "\"pending_dirs\":%llu,\"pending_entries\":%llu}",
                 yes(fs->dropped), (unsigned long long)t.bytes, (unsigned long long)t.files,
                 (unsigned long long)dirs, (unsigned long long)entries);
    } else if (!strcmp(cmd, "checkpoint")) {
        pthread_rwlock_wrlock(&fs->drop_lock);
        int rc = fs->dropped ? -EIO : lz_checkpoint(fs);
        pthread_rwlock_unlock(&fs->drop_lock);
        if (fs->dropped)
            snprintf(out, size, "{\"ok\":false,\"error\":\"dropped: nothing is served until it is mounted again\"}");
        else if (rc)
            snprintf(out, size, "{\"ok\":false,\"error\":\"checkpoint failed: %s\"}", strerror(-rc));
        else
            snprintf(out, size, "{\"ok\":true}");
    } else if (!strcmp(cmd, "drop")) {
        struct tally t = {0};
        struct ns_report r = {0};
        int rc = 0;
        pthread_rwlock_wrlock(&fs->drop_lock);
        if (!fs->dropped) {
            nodes_each(fs, discard, &t);
            pthread_mutex_lock(&fs->ns_lock);
            rc = ns_reconcile(fs, &r);
            pthread_mutex_unlock(&fs->ns_lock);
            fs->dropped = true;
        }
        pthread_rwlock_unlock(&fs->drop_lock);
        lz_log("drop: lost %llu bytes of %llu files; %llu entries put back, %llu taken away",
               (unsigned long long)t.bytes, (unsigned long long)t.files, (unsigned long long)r.restored,
               (unsigned long long)r.removed);
        if (rc)
            snprintf(out, size, "{\"ok\":false,\"error\":\"drop could not restore every entry: %s (see the log)\"}",
                     strerror(-rc));
        else
            snprintf(out, size,
                     "{\"ok\":true,\"lost_bytes\":%llu,\"lost_files\":%llu,\"restored_entries\":%llu,"
                     "\"removed_entries\":%llu}",
                     (unsigned long long)t.bytes, (unsigned long long)t.files, (unsigned long long)r.restored,
                     (unsigned long long)r.removed);
    } else {
        snprintf(out, size, "{\"ok\":false,\"error\":\"unknown command; known: ping, stats, checkpoint, drop\"}");
    }
}

static void serve_one(struct lz_fs *fs, int conn)
{
    struct timeval timeout = {5, 0};
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    char cmd[128];
    size_t used = 0;
    while (used < sizeof cmd - 1) {
        ssize_t r = read(conn, cmd + used, sizeof cmd - 1 - used);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        used += (size_t)r;
        if (memchr(cmd, '\n', used))
            break;
    }
    cmd[used] = '\0';
    cmd[strcspn(cmd, "\r\n")] = '\0';
    char out[512];
    answer(fs, cmd, out, sizeof out - 1);
    strcat(out, "\n");
    for (size_t sent = 0, len = strlen(out); sent < len;) {
        ssize_t w = send(conn, out + sent, len - sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        sent += (size_t)w;
    }
    close(conn);
}

struct serve_args {
    struct lz_fs *fs;
    int listen_fd;
};

static void *serve(void *arg)
{
    struct serve_args a = *(struct serve_args *)arg;
    free(arg);
    for (;;) {
        struct pollfd p[2] = {{a.listen_fd, POLLIN, 0}, {a.fs->wake[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            continue; /* EINTR */
        if (p[1].revents)
            return NULL;
        int conn = accept4(a.listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn >= 0)
            serve_one(a.fs, conn);
    }
}

int control_start(struct lz_fs *fs, int listen_fd, pthread_t *thread)
{
    if (pipe2(fs->wake, O_CLOEXEC))
        return -errno;
    struct serve_args *a = malloc(sizeof *a);
    if (!a)
        return -ENOMEM;
    *a = (struct serve_args){fs, listen_fd};
    int rc = pthread_create(thread, NULL, serve, a);
    if (rc)
        free(a);
    return -rc;
}

void control_stop(struct lz_fs *fs, int listen_fd, pthread_t thread)
{
    if (write(fs->wake[1], "x", 1) != 1)
        lz_log("cannot wake the control thread: %s", strerror(errno));
    pthread_join(thread, NULL);
    close(listen_fd);
}
