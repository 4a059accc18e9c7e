/* The FUSE operations: a passthrough to the backing folder, with file data through the node
 * caches (pages.c) and entry changes remembered first (names.c). Every request but release and
 * releasedir is answered with EIO once `drop` has run.
 *
 * Files are opened with direct_io (every read and write reaches this daemon; the kernel keeps no
 * copy that could outlive a drop), except files whose names end with a mapped suffix (Kafka's
 * *.index, *.timeindex): the kernel cannot mmap a direct_io file, so those go through its page
 * cache, which writes mapped pages back here on msync, fsync, close and writeback. Attribute
 * and entry caching are off, and writeback caching is never enabled.
 */
#include "lazyfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

struct lz_fs *lz_fs_get(void) { return fuse_get_context()->private_data; }

struct dir_handle {
    DIR *dir;
    bool root;
};

static const char *rel(const char *path) { return path[1] ? path + 1 : "."; }

/* The state folder at the backing root is not part of the filesystem. */
static bool hidden(const char *path)
{
    size_t n = strlen(LZ_STATE_DIR);
    return path && path[0] == '/' && !strncmp(path + 1, LZ_STATE_DIR, n) && (path[1 + n] == '\0' || path[1 + n] == '/');
}

static bool mapped(struct lz_fs *fs, const char *path)
{
    size_t len = path ? strlen(path) : 0;
    for (int i = 0; i < fs->n_mmap_suffixes; i++) {
        size_t n = strlen(fs->mmap_suffixes[i]);
        if (len >= n && !strcmp(path + len - n, fs->mmap_suffixes[i]))
            return true;
    }
    return false;
}

static struct lz_node *node_of(struct fuse_file_info *fi) { return (struct lz_node *)(uintptr_t)fi->fh; }

static int enter(struct lz_fs *fs)
{
    pthread_rwlock_rdlock(&fs->drop_lock);
    if (atomic_load(&fs->dropped)) {
        pthread_rwlock_unlock(&fs->drop_lock);
        return -EIO;
    }
    return 0;
}

static int leave(struct lz_fs *fs, int rc)
{
    pthread_rwlock_unlock(&fs->drop_lock);
    return rc;
}

#define SERVE(call)                  \
    do {                             \
        struct lz_fs *fs = lz_fs_get(); \
        int rc_ = enter(fs);         \
        if (rc_)                     \
            return rc_;              \
        return leave(fs, call);      \
    } while (0)

/* The caller's umask: the kernel leaves applying it to the filesystem (FUSE_CAP_DONT_MASK). */
static mode_t masked(mode_t mode) { return mode & ~fuse_get_context()->umask; }

/* New entries belong to whoever made them, as on a disk (the daemon runs as root). */
static void own(struct lz_fs *fs, const char *path)
{
    if (geteuid() != 0)
        return;
    struct fuse_context *ctx = fuse_get_context();
    if (fchownat(fs->root_fd, rel(path), ctx->uid, ctx->gid, AT_SYMLINK_NOFOLLOW))
        lz_log("cannot give %s to %u:%u: %s", path, (unsigned)ctx->uid, (unsigned)ctx->gid, strerror(errno));
}

/* ---- attributes ------------------------------------------------------------------------------ */

static int do_getattr(struct lz_fs *fs, const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (fi && fi->fh) {
        struct lz_node *n = node_of(fi);
        if (fstat(n->fd, st))
            return -errno;
        pthread_mutex_lock(&n->lock);
        if (!fs->passthrough)
            node_show(n, st);
        pthread_mutex_unlock(&n->lock);
        return 0;
    }
    if (!path || hidden(path))
        return -ENOENT;
    if (fstatat(fs->root_fd, rel(path), st, AT_SYMLINK_NOFOLLOW))
        return -errno;
    if (S_ISREG(st->st_mode) && !fs->passthrough) {
        struct lz_node *n = node_find(fs, st->st_dev, st->st_ino);
        if (n) {
            pthread_mutex_lock(&n->lock);
            node_show(n, st);
            pthread_mutex_unlock(&n->lock);
            node_put(fs, n);
        }
    }
    return 0;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    SERVE(do_getattr(fs, path, st, fi));
}

static int do_access(struct lz_fs *fs, const char *path, int mask)
{
    if (hidden(path))
        return -ENOENT;
    return faccessat(fs->root_fd, rel(path), mask, 0) ? -errno : 0;
}

static int op_access(const char *path, int mask) { SERVE(do_access(fs, path, mask)); }

static int do_readlink(struct lz_fs *fs, const char *path, char *buf, size_t size)
{
    if (hidden(path) || size == 0)
        return -ENOENT;
    ssize_t n = readlinkat(fs->root_fd, rel(path), buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

static int op_readlink(const char *path, char *buf, size_t size) { SERVE(do_readlink(fs, path, buf, size)); }

static int do_chmod(struct lz_fs *fs, const char *path, mode_t mode, struct fuse_file_info *fi)
{
    if (fi && fi->fh)
        return fchmod(node_of(fi)->fd, mode) ? -errno : 0;
    if (!path || hidden(path))
        return -ENOENT;
    return fchmodat(fs->root_fd, rel(path), mode, 0) ? -errno : 0;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) { SERVE(do_chmod(fs, path, mode, fi)); }

static int do_chown(struct lz_fs *fs, const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    if (fi && fi->fh)
        return fchown(node_of(fi)->fd, uid, gid) ? -errno : 0;
    if (!path || hidden(path))
        return -ENOENT;
    return fchownat(fs->root_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    SERVE(do_chown(fs, path, uid, gid, fi));
}

static int do_utimens(struct lz_fs *fs, const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    struct lz_node *n = NULL;
    bool borrowed = fi && fi->fh;
    int rc;
    if (borrowed) {
        n = node_of(fi);
        rc = futimens(n->fd, tv) ? -errno : 0;
    } else {
        if (!path || hidden(path))
            return -ENOENT;
        rc = utimensat(fs->root_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
        struct stat st;
        if (!rc && !fstatat(fs->root_fd, rel(path), &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
            n = node_find(fs, st.st_dev, st.st_ino);
    }
    if (!rc && n && tv[1].tv_nsec != UTIME_OMIT) {
        pthread_mutex_lock(&n->lock);
        if (n->mtime_set) { /* a cached write would otherwise show (and at flush keep) its own time */
            if (tv[1].tv_nsec == UTIME_NOW)
                clock_gettime(CLOCK_REALTIME, &n->mtime);
            else
                n->mtime = tv[1];
        }
        pthread_mutex_unlock(&n->lock);
    }
    if (n && !borrowed)
        node_put(fs, n);
    return rc;
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    SERVE(do_utimens(fs, path, tv, fi));
}

static int do_statfs(struct lz_fs *fs, struct statvfs *st)
{
    return fstatvfs(fs->root_fd, st) ? -errno : 0;
}

static int op_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    SERVE(do_statfs(fs, st));
}

/* ---- entries --------------------------------------------------------------------------------- */

/* Remember the listing of rel's parent folder before an entry of it changes; ns_lock held. */
static int touch_parent(struct lz_fs *fs, const char *rel_path)
{
    char *parent = rel_parent(rel_path);
    if (!parent)
        return -ENOMEM;
    int rc = ns_touch(fs, parent);
    free(parent);
    return rc;
}

static int do_mknod(struct lz_fs *fs, const char *path, mode_t mode, dev_t rdev)
{
    if (hidden(path))
        return -EPERM;
    pthread_mutex_lock(&fs->ns_lock);
    int rc = touch_parent(fs, rel(path));
    if (!rc)
        rc = mknodat(fs->root_fd, rel(path), masked(mode), rdev) ? -errno : 0;
    pthread_mutex_unlock(&fs->ns_lock);
    if (!rc)
        own(fs, path);
    return rc;
}

static int op_mknod(const char *path, mode_t mode, dev_t rdev) { SERVE(do_mknod(fs, path, mode, rdev)); }

static int do_mkdir(struct lz_fs *fs, const char *path, mode_t mode)
{
    if (hidden(path))
        return -EPERM;
    pthread_mutex_lock(&fs->ns_lock);
    int rc = touch_parent(fs, rel(path));
    if (!rc)
        rc = mkdirat(fs->root_fd, rel(path), masked(mode)) ? -errno : 0;
    pthread_mutex_unlock(&fs->ns_lock);
    if (!rc)
        own(fs, path);
    return rc;
}

static int op_mkdir(const char *path, mode_t mode) { SERVE(do_mkdir(fs, path, mode)); }

static int do_symlink(struct lz_fs *fs, const char *target, const char *path)
{
    if (hidden(path))
        return -EPERM;
    pthread_mutex_lock(&fs->ns_lock);
    int rc = touch_parent(fs, rel(path));
    if (!rc)
        rc = symlinkat(target, fs->root_fd, rel(path)) ? -errno : 0;
    pthread_mutex_unlock(&fs->ns_lock);
    if (!rc)
        own(fs, path);
    return rc;
}

static int op_symlink(const char *target, const char *path) { SERVE(do_symlink(fs, target, path)); }

static int do_link(struct lz_fs *fs, const char *from, const char *to)
{
    if (hidden(from) || hidden(to))
        return -EPERM;
    pthread_mutex_lock(&fs->ns_lock);
    int rc = touch_parent(fs, rel(to));
    if (!rc)
        rc = linkat(fs->root_fd, rel(from), fs->root_fd, rel(to), 0) ? -errno : 0;
    pthread_mutex_unlock(&fs->ns_lock);
    return rc;
}

static int op_link(const char *from, const char *to) { SERVE(do_link(fs, from, to)); }

static int do_unlink(struct lz_fs *fs, const char *path)
{
    if (hidden(path))
        return -ENOENT;
    pthread_mutex_lock(&fs->ns_lock);
    int rc = touch_parent(fs, rel(path));
    struct stat st;
    if (!rc && fstatat(fs->root_fd, rel(path), &st, AT_SYMLINK_NOFOLLOW))
        rc = -errno;
    if (!rc && S_ISDIR(st.st_mode))
        rc = -EISDIR;
    if (!rc) /* into the trash: a durable listing may still name the inode */
        rc = fs->passthrough ? (unlinkat(fs->root_fd, rel(path), 0) ? -errno : 0) : ns_trash(fs, rel(path));
    pthread_mutex_unlock(&fs->ns_lock);
    return rc;
}

static int op_unlink(const char *path) { SERVE(do_unlink(fs, path)); }

static int empty_dir(struct lz_fs *fs, const char *rel_path)
{
    int fd = openat(fs->root_fd, rel_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            rc = -ENOTEMPTY;
    closedir(d);
    return rc;
}

static int do_rmdir(struct lz_fs *fs, const char *path)
{
    if (hidden(path))
        return -ENOENT;
    if (fs->passthrough)
        return unlinkat(fs->root_fd, rel(path), AT_REMOVEDIR) ? -errno : 0;
    pthread_mutex_lock(&fs->ns_lock);
    int rc = touch_parent(fs, rel(path));
    if (!rc)
        rc = empty_dir(fs, rel(path));
    if (!rc)
        rc = ns_trash(fs, rel(path));
    pthread_mutex_unlock(&fs->ns_lock);
    return rc;
}

static int op_rmdir(const char *path) { SERVE(do_rmdir(fs, path)); }

/* rename over an existing entry: the replaced inode is kept in the trash (for a file through an
 * extra link first, so the replacement stays atomic). */
static int replace(struct lz_fs *fs, const char *from, const char *to, unsigned int flags)
{
    struct stat src, dst;
    if (fstatat(fs->root_fd, from, &src, AT_SYMLINK_NOFOLLOW))
        return -errno;
    if (fstatat(fs->root_fd, to, &dst, AT_SYMLINK_NOFOLLOW)) {
        if (errno != ENOENT)
            return -errno;
        return renameat(fs->root_fd, from, fs->root_fd, to) ? -errno : 0;
    }
    if (flags & RENAME_NOREPLACE)
        return -EEXIST;
    if (src.st_dev == dst.st_dev && src.st_ino == dst.st_ino)
        return 0; /* two names of one file: POSIX says nothing happens */
    if (S_ISDIR(dst.st_mode)) {
        if (!S_ISDIR(src.st_mode))
            return -EISDIR;
        int rc = empty_dir(fs, to);
        if (!rc)
            rc = ns_trash(fs, to);
        if (!rc && renameat(fs->root_fd, from, fs->root_fd, to))
            rc = -errno;
        return rc;
    }
    if (S_ISDIR(src.st_mode))
        return -ENOTDIR;
    int rc = ns_trash_link(fs, to);
    if (!rc && renameat(fs->root_fd, from, fs->root_fd, to))
        rc = -errno;
    return rc;
}

static int do_rename(struct lz_fs *fs, const char *from, const char *to, unsigned int flags)
{
    if (hidden(from) || hidden(to))
        return -EPERM;
    if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
        return -EINVAL;
    pthread_mutex_lock(&fs->ns_lock);
    int rc = touch_parent(fs, rel(from));
    if (!rc)
        rc = touch_parent(fs, rel(to));
    if (!rc) {
        if (fs->passthrough || (flags & RENAME_EXCHANGE))
            rc = renameat2(fs->root_fd, rel(from), fs->root_fd, rel(to), flags) ? -errno : 0;
        else
            rc = replace(fs, rel(from), rel(to), flags);
    }
    pthread_mutex_unlock(&fs->ns_lock);
    return rc;
}

static int op_rename(const char *from, const char *to, unsigned int flags) { SERVE(do_rename(fs, from, to, flags)); }

/* ---- file data ------------------------------------------------------------------------------- */

static void set_caching(struct lz_fs *fs, const char *path, struct fuse_file_info *fi)
{
    fi->direct_io = !mapped(fs, path);
    fi->keep_cache = 0;
}

static int do_open(struct lz_fs *fs, const char *path, struct fuse_file_info *fi)
{
    if (hidden(path))
        return -ENOENT;
    bool write = (fi->flags & O_ACCMODE) != O_RDONLY;
    struct lz_node *n;
    int rc = node_open(fs, rel(path), write, &n);
    if (rc)
        return rc;
    if (write && (fi->flags & O_TRUNC)) {
        pthread_mutex_lock(&n->lock);
        rc = node_truncate(fs, n, 0);
        pthread_mutex_unlock(&n->lock);
        if (rc) {
            node_put(fs, n);
            return rc;
        }
    }
    fi->fh = (uintptr_t)n;
    set_caching(fs, path, fi);
    return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi) { SERVE(do_open(fs, path, fi)); }

static int do_create(struct lz_fs *fs, const char *path, mode_t mode, struct fuse_file_info *fi)
{
    if (hidden(path))
        return -EPERM;
    pthread_mutex_lock(&fs->ns_lock);
    int rc = touch_parent(fs, rel(path));
    int fd = -1;
    if (!rc) {
        fd = openat(fs->root_fd, rel(path), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW | (fi->flags & O_EXCL),
                    masked(mode));
        if (fd < 0)
            rc = -errno;
    }
    pthread_mutex_unlock(&fs->ns_lock);
    if (rc)
        return rc;
    own(fs, path);
    struct lz_node *n;
    rc = node_adopt(fs, fd, &n);
    if (rc)
        return rc;
    if (fi->flags & O_TRUNC) { /* it may have existed */
        pthread_mutex_lock(&n->lock);
        rc = node_truncate(fs, n, 0);
        pthread_mutex_unlock(&n->lock);
    }
    if (rc) {
        node_put(fs, n);
        return rc;
    }
    fi->fh = (uintptr_t)n;
    set_caching(fs, path, fi);
    return 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi) { SERVE(do_create(fs, path, mode, fi)); }

static int do_read(struct lz_fs *fs, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct lz_node *n = node_of(fi);
    pthread_mutex_lock(&n->lock);
    ssize_t r = node_read(fs, n, buf, size, off);
    pthread_mutex_unlock(&n->lock);
    return (int)r;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    SERVE(do_read(fs, buf, size, off, fi));
}

static int do_write(struct lz_fs *fs, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct lz_node *n = node_of(fi);
    pthread_mutex_lock(&n->lock);
    ssize_t w = node_write(fs, n, buf, size, off);
    pthread_mutex_unlock(&n->lock);
    return (int)w;
}

static int op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    SERVE(do_write(fs, buf, size, off, fi));
}

static int do_truncate(struct lz_fs *fs, const char *path, off_t size, struct fuse_file_info *fi)
{
    struct lz_node *n;
    bool borrowed = fi && fi->fh;
    if (borrowed) {
        n = node_of(fi);
    } else {
        if (!path || hidden(path))
            return -ENOENT;
        int rc = node_open(fs, rel(path), true, &n);
        if (rc)
            return rc;
    }
    pthread_mutex_lock(&n->lock);
    int rc = node_truncate(fs, n, size);
    pthread_mutex_unlock(&n->lock);
    if (!borrowed)
        node_put(fs, n);
    return rc;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi) { SERVE(do_truncate(fs, path, size, fi)); }

static int do_fallocate(struct lz_fs *fs, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
    if (!fi || !fi->fh)
        return -EOPNOTSUPP;
    struct lz_node *n = node_of(fi);
    pthread_mutex_lock(&n->lock);
    int rc = node_fallocate(fs, n, mode, off, len);
    pthread_mutex_unlock(&n->lock);
    return rc;
}

static int op_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
    (void)path;
    SERVE(do_fallocate(fs, mode, off, len, fi));
}

static int op_flush(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    (void)fi;
    SERVE(0);
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    node_put(lz_fs_get(), node_of(fi)); /* also after a drop: the handle is gone either way */
    return 0;
}

/* Any fsync makes every earlier entry change durable in the journal model. */
static void synced(struct lz_fs *fs)
{
    if (fs->model != LZ_JOURNAL || fs->passthrough)
        return;
    pthread_mutex_lock(&fs->ns_lock);
    ns_sync_all(fs);
    pthread_mutex_unlock(&fs->ns_lock);
}

static int do_fsync(struct lz_fs *fs, struct fuse_file_info *fi)
{
    struct lz_node *n = node_of(fi);
    pthread_mutex_lock(&n->lock);
    int rc = node_flush(fs, n);
    pthread_mutex_unlock(&n->lock);
    if (!rc)
        synced(fs);
    return rc;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    (void)datasync; /* fdatasync makes the data durable just the same */
    SERVE(do_fsync(fs, fi));
}

/* ---- folders --------------------------------------------------------------------------------- */

static int do_opendir(struct lz_fs *fs, const char *path, struct fuse_file_info *fi)
{
    if (!path || hidden(path))
        return -ENOENT;
    int fd = openat(fs->root_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct dir_handle *h = malloc(sizeof *h);
    DIR *d = h ? fdopendir(fd) : NULL;
    if (!d) {
        int rc = h ? -errno : -ENOMEM;
        free(h);
        close(fd);
        return rc;
    }
    h->dir = d;
    h->root = !strcmp(path, "/");
    fi->fh = (uintptr_t)h;
    return 0;
}

static int op_opendir(const char *path, struct fuse_file_info *fi) { SERVE(do_opendir(fs, path, fi)); }

static int do_readdir(void *buf, fuse_fill_dir_t fill, struct fuse_file_info *fi)
{
    struct dir_handle *h = (struct dir_handle *)(uintptr_t)fi->fh;
    rewinddir(h->dir);
    struct dirent *de;
    while ((de = readdir(h->dir))) {
        if (h->root && !strcmp(de->d_name, LZ_STATE_DIR))
            continue;
        struct stat st = {.st_ino = de->d_ino, .st_mode = (mode_t)DTTOIF(de->d_type)};
        if (fill(buf, de->d_name, &st, 0, 0))
            return -ENOMEM;
    }
    return 0;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags)
{
    (void)path;
    (void)off;
    (void)flags;
    SERVE(do_readdir(buf, fill, fi));
}

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    struct dir_handle *h = (struct dir_handle *)(uintptr_t)fi->fh;
    closedir(h->dir);
    free(h);
    return 0;
}

static int do_fsyncdir(struct lz_fs *fs, struct fuse_file_info *fi)
{
    struct dir_handle *h = (struct dir_handle *)(uintptr_t)fi->fh;
    struct stat st;
    if (fstat(dirfd(h->dir), &st))
        return -errno;
    if (fsync(dirfd(h->dir)))
        return -errno;
    if (fs->passthrough)
        return 0;
    pthread_mutex_lock(&fs->ns_lock);
    if (fs->model == LZ_JOURNAL)
        ns_sync_all(fs);
    else
        ns_sync_dir(fs, st.st_dev, st.st_ino);
    pthread_mutex_unlock(&fs->ns_lock);
    return 0;
}

static int op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    (void)datasync;
    SERVE(do_fsyncdir(fs, fi));
}

/* ---- the session ----------------------------------------------------------------------------- */

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    struct lz_fs *fs = lz_fs_get();
    cfg->use_ino = 1;
    cfg->readdir_ino = 1;
    cfg->hard_remove = 1;   /* no .fuse_hidden files: an unlinked open file is served by handle */
    cfg->nullpath_ok = 1;
    cfg->entry_timeout = 0; /* the kernel asks every time: nothing it cached outlives a drop */
    cfg->attr_timeout = 0;
    cfg->negative_timeout = 0;
    cfg->kernel_cache = 0;
    cfg->auto_cache = 0;
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE; /* the kernel must not hold written data */
    atomic_store(&fs->ready, true);
    return fs;
}

static void op_destroy(void *private_data)
{
    struct lz_fs *fs = private_data;
    if (atomic_load(&fs->dropped) || fs->passthrough)
        return;
    /* a clean unmount keeps everything, as a disk's does */
    pthread_rwlock_wrlock(&fs->drop_lock);
    int rc = lz_checkpoint(fs);
    pthread_rwlock_unlock(&fs->drop_lock);
    if (rc)
        lz_log("unmount: not everything could be made durable: %s", strerror(-rc));
}

const struct fuse_operations lz_ops = {
    .getattr = op_getattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .chmod = op_chmod,
    .chown = op_chown,
    .truncate = op_truncate,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .statfs = op_statfs,
    .flush = op_flush,
    .release = op_release,
    .fsync = op_fsync,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .init = op_init,
    .destroy = op_destroy,
    .access = op_access,
    .create = op_create,
    .utimens = op_utimens,
    .fallocate = op_fallocate,
};
