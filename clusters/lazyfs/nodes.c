/* The table of backing inodes the mount has open or holds unsynced data of, keyed by (dev, ino).
 * A node holds an open descriptor of its backing inode, so the inode (and its number) cannot be
 * reused while the node lives. A node is freed when nothing uses it and it holds nothing that is
 * not durable, or when its inode has no name left anywhere (nlink 0: its data can never be seen).
 */
#include "lazyfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t bucket_of(const struct lz_fs *fs, dev_t dev, ino_t ino)
{
    uint64_t h = ((uint64_t)ino * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)dev;
    return (size_t)(h >> 11) & (fs->table_cap - 1);
}

int nodes_init(struct lz_fs *fs)
{
    fs->table_cap = 1024;
    fs->table = calloc(fs->table_cap, sizeof *fs->table);
    return fs->table ? 0 : -ENOMEM;
}

static struct lz_node *lookup(struct lz_fs *fs, dev_t dev, ino_t ino)
{
    for (struct lz_node *n = fs->table[bucket_of(fs, dev, ino)]; n; n = n->next)
        if (n->ino == ino && n->dev == dev)
            return n;
    return NULL;
}

static void grow(struct lz_fs *fs)
{
    size_t cap = fs->table_cap * 2;
    struct lz_node **table = calloc(cap, sizeof *table);
    if (!table)
        return; /* longer chains, still correct */
    struct lz_node **old = fs->table;
    size_t old_cap = fs->table_cap;
    fs->table = table;
    fs->table_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        for (struct lz_node *n = old[i], *next; n; n = next) {
            next = n->next;
            size_t b = bucket_of(fs, n->dev, n->ino);
            n->next = table[b];
            table[b] = n;
        }
    }
    free(old);
}

static void unlink_node(struct lz_fs *fs, struct lz_node *gone)
{
    for (struct lz_node **p = &fs->table[bucket_of(fs, gone->dev, gone->ino)]; *p; p = &(*p)->next) {
        if (*p == gone) {
            *p = gone->next;
            fs->node_count--;
            return;
        }
    }
}

static void destroy(struct lz_fs *fs, struct lz_node *n)
{
    node_discard(fs, n);
    close(n->fd);
    pthread_mutex_destroy(&n->lock);
    free(n);
}

static bool nameless(const struct lz_node *n)
{
    struct stat st;
    return fstat(n->fd, &st) == 0 && st.st_nlink == 0;
}

/* Free n if nothing uses it and it holds nothing durable-to-be; tab_lock held. */
static void maybe_free(struct lz_fs *fs, struct lz_node *n)
{
    if (n->refs > 0)
        return;
    pthread_mutex_lock(&n->lock);
    bool drop = !node_dirty(n) || nameless(n);
    pthread_mutex_unlock(&n->lock);
    if (drop) {
        unlink_node(fs, n);
        destroy(fs, n);
    }
}

static bool writable(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_ACCMODE) == O_RDWR;
}

int node_adopt(struct lz_fs *fs, int fd, struct lz_node **out)
{
    struct stat st;
    if (fstat(fd, &st)) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    pthread_mutex_lock(&fs->tab_lock);
    struct lz_node *n = lookup(fs, st.st_dev, st.st_ino);
    if (n) {
        n->refs++;
        pthread_mutex_lock(&n->lock);
        if (n->readonly && writable(fd)) { /* a writer came: keep its descriptor instead */
            close(n->fd);
            n->fd = fd;
            n->readonly = false;
            fd = -1;
        }
        pthread_mutex_unlock(&n->lock);
        pthread_mutex_unlock(&fs->tab_lock);
        if (fd >= 0)
            close(fd);
        *out = n;
        return 0;
    }
    n = calloc(1, sizeof *n);
    if (!n) {
        pthread_mutex_unlock(&fs->tab_lock);
        close(fd);
        return -ENOMEM;
    }
    n->dev = st.st_dev;
    n->ino = st.st_ino;
    n->fd = fd;
    n->readonly = !writable(fd);
    n->refs = 1;
    n->size = n->durable_size = n->low = st.st_size;
    pthread_mutex_init(&n->lock, NULL);
    if (++fs->node_count > fs->table_cap)
        grow(fs);
    size_t b = bucket_of(fs, n->dev, n->ino);
    n->next = fs->table[b];
    fs->table[b] = n;
    pthread_mutex_unlock(&fs->tab_lock);
    *out = n;
    return 0;
}

int node_open(struct lz_fs *fs, const char *rel, bool write, struct lz_node **out)
{
    int fd = openat(fs->root_fd, rel, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && !write && (errno == EACCES || errno == EPERM || errno == EROFS || errno == ETXTBSY))
        fd = openat(fs->root_fd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    return node_adopt(fs, fd, out);
}

struct lz_node *node_find(struct lz_fs *fs, dev_t dev, ino_t ino)
{
    pthread_mutex_lock(&fs->tab_lock);
    struct lz_node *n = lookup(fs, dev, ino);
    if (n)
        n->refs++;
    pthread_mutex_unlock(&fs->tab_lock);
    return n;
}

void node_put(struct lz_fs *fs, struct lz_node *n)
{
    pthread_mutex_lock(&fs->tab_lock);
    n->refs--;
    maybe_free(fs, n);
    pthread_mutex_unlock(&fs->tab_lock);
}

void node_forget(struct lz_fs *fs, dev_t dev, ino_t ino)
{
    pthread_mutex_lock(&fs->tab_lock);
    struct lz_node *n = lookup(fs, dev, ino);
    if (n && n->refs == 0 && nameless(n)) {
        unlink_node(fs, n);
        destroy(fs, n);
    }
    pthread_mutex_unlock(&fs->tab_lock);
}

void nodes_each(struct lz_fs *fs, node_fn fn, void *arg)
{
    pthread_mutex_lock(&fs->tab_lock);
    for (size_t i = 0; i < fs->table_cap; i++) {
        for (struct lz_node *n = fs->table[i], *next; n; n = next) {
            next = n->next;
            pthread_mutex_lock(&n->lock);
            fn(fs, n, arg);
            pthread_mutex_unlock(&n->lock);
        }
    }
    /* what the walk left clean and unused goes */
    for (size_t i = 0; i < fs->table_cap; i++)
        for (struct lz_node *n = fs->table[i], *next; n; n = next) {
            next = n->next;
            maybe_free(fs, n);
        }
    pthread_mutex_unlock(&fs->tab_lock);
}
