/* fencepost-lazyfs: a FUSE filesystem over a backing directory that keeps every change not yet
 * made durable in its own memory, so that a power cut can lose exactly that.
 *
 * Rules (docs/LAZYFS.md says them for users):
 * - The backing directory holds file *data* only as last made durable: writes, truncations and
 *   fallocations live in per-inode page caches (pages.c) until an fsync/fdatasync of the file, a
 *   `checkpoint` command or a clean unmount writes them there and fsyncs the backing file.
 * - Directory entries are changed in the backing directory at once, but every directory's listing
 *   as of its last durable point is remembered before its first change (names.c), and unlinked or
 *   replaced inodes are kept in a trash folder while any remembered listing names them. `drop`
 *   puts every directory back to its durable listing. Durable point: any fsync (model journal) or
 *   an fsync of that directory (model strict).
 * - After `drop`, every request is answered with EIO until the filesystem is mounted again.
 *
 * Lock order: drop_lock (read by every request, write by drop/checkpoint) -> ns_lock (entries,
 * remembered listings, trash) -> tab_lock (the inode table) -> a node's lock (its cache).
 */
#ifndef FENCEPOST_LAZYFS_H
#define FENCEPOST_LAZYFS_H

#define FUSE_USE_VERSION 312
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <fuse.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define LZ_PAGE 4096
#define LZ_STATE_DIR ".fencepost-lazyfs" /* inside the backing dir; hidden from the mount */
#define LZ_TRASH_DIR "trash"
#define LZ_SOCKET "control.sock"
#define LZ_LOCK "lock"

enum lz_model { LZ_JOURNAL, LZ_STRICT };

/* Page index -> 4 KiB buffer; open addressing with linear probing. */
struct lz_pagemap {
    uint64_t *keys;
    uint8_t **vals; /* NULL: empty slot */
    size_t cap;     /* a power of two, or 0 */
    size_t count;
};

/* One backing inode whose data may differ from its backing file. */
struct lz_node {
    dev_t dev;
    ino_t ino;
    int fd;               /* the backing file, O_RDWR (O_RDONLY when `readonly`) */
    bool readonly;
    int refs;             /* open handles and temporary users; guarded by tab_lock */
    pthread_mutex_t lock; /* guards everything below */
    off_t size;           /* as the mount shows it */
    off_t durable_size;   /* of the backing file */
    off_t low;            /* bytes at or past `low` that no cached page holds read as zero */
    struct lz_pagemap pages;
    struct timespec mtime; /* shown, and kept on the backing file at flush, when mtime_set */
    bool mtime_set;
    struct lz_node *next; /* hash chain */
};

/* A directory's listing as of its last durable point. */
struct lz_entry {
    char *name;
    ino_t ino;
    bool dir;
};

struct lz_listing {
    dev_t dev;
    ino_t ino;
    struct lz_entry *entries;
    size_t count;
    struct lz_listing *next;
};

struct lz_fs {
    char *backing;
    char *mountpoint;
    int root_fd;  /* the backing dir */
    int state_fd; /* backing/.fencepost-lazyfs */
    int trash_fd;
    dev_t root_dev;
    ino_t root_ino;
    enum lz_model model;
    bool passthrough; /* no laziness at all: the bench's baseline */
    char **mmap_suffixes; /* files named so are served through the kernel page cache (mmap) */
    int n_mmap_suffixes;
    uint64_t cache_limit; /* bytes; writes past it fail with ENOSPC */
    atomic_uint_fast64_t cached_bytes;

    pthread_rwlock_t drop_lock;
    atomic_bool dropped;
    atomic_bool ready;
    int wake[2]; /* a pipe: written to when the control thread is to end */

    pthread_mutex_t ns_lock;
    struct lz_listing *listings;
    uint64_t trash_seq;

    pthread_mutex_t tab_lock;
    struct lz_node **table;
    size_t table_cap;
    size_t node_count;
};

struct lz_fs *lz_fs_get(void); /* the mounted filesystem, from the FUSE context */
void lz_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* pagemap (pages.c) */
uint8_t *pm_get(const struct lz_pagemap *pm, uint64_t key);
int pm_put(struct lz_pagemap *pm, uint64_t key, uint8_t *val);
uint8_t *pm_take(struct lz_pagemap *pm, uint64_t key);
uint64_t *pm_keys(const struct lz_pagemap *pm, size_t *n); /* sorted; caller frees */

/* a node's data (pages.c); the node's lock is held by the caller */
ssize_t node_read(struct lz_fs *fs, struct lz_node *n, char *buf, size_t size, off_t off);
ssize_t node_write(struct lz_fs *fs, struct lz_node *n, const char *buf, size_t size, off_t off);
int node_truncate(struct lz_fs *fs, struct lz_node *n, off_t size);
int node_fallocate(struct lz_fs *fs, struct lz_node *n, int mode, off_t off, off_t len);
int node_flush(struct lz_fs *fs, struct lz_node *n); /* make durable: write, truncate, fsync */
uint64_t node_discard(struct lz_fs *fs, struct lz_node *n); /* lose the cache; bytes of pages lost */
bool node_dirty(const struct lz_node *n);
void node_show(struct lz_node *n, struct stat *st); /* the cached size and times over a backing stat */

/* the inode table (nodes.c) */
int nodes_init(struct lz_fs *fs);
int node_open(struct lz_fs *fs, const char *rel, bool write, struct lz_node **out);
int node_adopt(struct lz_fs *fs, int fd, struct lz_node **out); /* takes fd over */
struct lz_node *node_find(struct lz_fs *fs, dev_t dev, ino_t ino); /* a new reference, or NULL */
void node_put(struct lz_fs *fs, struct lz_node *n);
void node_forget(struct lz_fs *fs, dev_t dev, ino_t ino); /* its inode may be gone: free if unused */
typedef void (*node_fn)(struct lz_fs *fs, struct lz_node *n, void *arg);
void nodes_each(struct lz_fs *fs, node_fn fn, void *arg); /* fn runs with the node's lock held */

/* durable directory entries (names.c); ns_lock held by the caller */
int ns_init(struct lz_fs *fs);
int ns_touch(struct lz_fs *fs, const char *dir_rel); /* remember dir's listing before a change */
int ns_trash(struct lz_fs *fs, const char *rel);      /* move an entry away, kept while named */
int ns_trash_link(struct lz_fs *fs, const char *rel); /* keep one more link to an entry's inode */
void ns_sync_all(struct lz_fs *fs);                    /* every listing durable */
void ns_sync_dir(struct lz_fs *fs, dev_t dev, ino_t ino);
struct ns_report {
    uint64_t restored;      /* entries put back */
    uint64_t removed;       /* entries taken away */
};
int ns_reconcile(struct lz_fs *fs, struct ns_report *report); /* back to the durable listings */
void ns_pending(struct lz_fs *fs, uint64_t *dirs, uint64_t *entries);
char *rel_parent(const char *rel); /* malloc'd; "." for a top-level entry */

/* the control socket (control.c) */
int control_listen(struct lz_fs *fs);
int control_start(struct lz_fs *fs, int listen_fd, pthread_t *thread);
void control_stop(struct lz_fs *fs, int listen_fd, pthread_t thread);
int lz_checkpoint(struct lz_fs *fs); /* every change durable; drop_lock held for writing */

/* FUSE operations (ops.c) */
extern const struct fuse_operations lz_ops;

#endif
