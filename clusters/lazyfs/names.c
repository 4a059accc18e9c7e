/* Durable directory entries. Entry changes go to the backing directory at once; before a
 * directory's first change since its last durable point, its listing (name -> inode) is
 * remembered. An entry that goes away (unlink, rmdir, replaced by a rename) is moved into the
 * trash folder instead, so its inode outlives it while a remembered listing may name it.
 *
 * A listing becomes durable (is forgotten) at any fsync (model journal) or at an fsync of its
 * directory (model strict). `drop` (ns_reconcile) makes the backing tree equal the durable one:
 * walked from the root, each directory holds its remembered listing, or, when none is
 * remembered, what it holds now. A directory named in two durable listings (moved between two
 * directories of which only one was synced) keeps the first name in breadth-first order.
 */
#include "lazyfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH 512

char *rel_parent(const char *rel)
{
    const char *slash = strrchr(rel, '/');
    return slash ? strndup(rel, (size_t)(slash - rel)) : strdup(".");
}

static void free_entries(struct lz_entry *e, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(e[i].name);
    free(e);
}

/* The entries of an open directory (the state folder left out at the root). */
static int list_dir(int dirfd, bool is_root, struct lz_entry **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    int fd = dup(dirfd);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    rewinddir(d);
    size_t cap = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (is_root && !strcmp(de->d_name, LZ_STATE_DIR))
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
            continue; /* gone meanwhile (only a change outside the mount can do that) */
        if (*count == cap) {
            cap = cap ? cap * 2 : 16;
            struct lz_entry *more = realloc(*out, cap * sizeof *more);
            if (!more) {
                rc = -ENOMEM;
                break;
            }
            *out = more;
        }
        char *name = strdup(de->d_name);
        if (!name) {
            rc = -ENOMEM;
            break;
        }
        (*out)[(*count)++] = (struct lz_entry){name, st.st_ino, S_ISDIR(st.st_mode)};
    }
    closedir(d);
    if (rc) {
        free_entries(*out, *count);
        *out = NULL;
        *count = 0;
    }
    return rc;
}

static struct lz_listing *find_listing(struct lz_fs *fs, dev_t dev, ino_t ino)
{
    for (struct lz_listing *l = fs->listings; l; l = l->next)
        if (l->ino == ino && l->dev == dev)
            return l;
    return NULL;
}

static bool named(struct lz_fs *fs, ino_t ino)
{
    for (struct lz_listing *l = fs->listings; l; l = l->next)
        for (size_t i = 0; i < l->count; i++)
            if (l->entries[i].ino == ino)
                return true;
    return false;
}

/* Remove name (a whole tree) from dirfd; nodes of inodes left without a name are freed. */
static void remove_tree(struct lz_fs *fs, int dirfd, const char *name, int depth)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
        return;
    if (S_ISDIR(st.st_mode)) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && depth < MAX_DEPTH) {
            struct lz_entry *e;
            size_t count;
            if (!list_dir(fd, false, &e, &count)) {
                for (size_t i = 0; i < count; i++)
                    remove_tree(fs, fd, e[i].name, depth + 1);
                free_entries(e, count);
            }
        }
        if (fd >= 0)
            close(fd);
        if (unlinkat(dirfd, name, AT_REMOVEDIR))
            lz_log("cannot remove folder %s from the trash: %s", name, strerror(errno));
        return;
    }
    if (unlinkat(dirfd, name, 0)) {
        lz_log("cannot remove %s from the trash: %s", name, strerror(errno));
        return;
    }
    if (S_ISREG(st.st_mode) && st.st_nlink <= 1)
        node_forget(fs, st.st_dev, st.st_ino);
}

/* Empty the trash; with `unnamed_only`, keep what a remembered listing still names. */
static void empty_trash(struct lz_fs *fs, bool unnamed_only)
{
    struct lz_entry *e;
    size_t count;
    if (list_dir(fs->trash_fd, false, &e, &count))
        return;
    for (size_t i = 0; i < count; i++)
        if (!unnamed_only || !named(fs, e[i].ino))
            remove_tree(fs, fs->trash_fd, e[i].name, 0);
    free_entries(e, count);
}

int ns_init(struct lz_fs *fs)
{
    if (mkdirat(fs->state_fd, LZ_TRASH_DIR, 0700) && errno != EEXIST)
        return -errno;
    fs->trash_fd = openat(fs->state_fd, LZ_TRASH_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fs->trash_fd < 0)
        return -errno;
    /* a daemon killed without `drop` left what was deleted since its last durable point */
    empty_trash(fs, false);
    return 0;
}

int ns_touch(struct lz_fs *fs, const char *dir_rel)
{
    if (fs->passthrough)
        return 0;
    int fd = openat(fs->root_fd, dir_rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = fstat(fd, &st) ? -errno : 0;
    if (!rc && !find_listing(fs, st.st_dev, st.st_ino)) {
        struct lz_listing *l = calloc(1, sizeof *l);
        rc = l ? list_dir(fd, st.st_ino == fs->root_ino && st.st_dev == fs->root_dev, &l->entries, &l->count)
               : -ENOMEM;
        if (!rc) {
            l->dev = st.st_dev;
            l->ino = st.st_ino;
            l->next = fs->listings;
            fs->listings = l;
        } else {
            free(l);
        }
    }
    close(fd);
    return rc;
}

static void trash_name(struct lz_fs *fs, char *buf, size_t size)
{
    snprintf(buf, size, "%d-%llu", (int)getpid(), (unsigned long long)++fs->trash_seq);
}

int ns_trash(struct lz_fs *fs, const char *rel)
{
    char name[64];
    trash_name(fs, name, sizeof name);
    return renameat(fs->root_fd, rel, fs->trash_fd, name) ? -errno : 0;
}

int ns_trash_link(struct lz_fs *fs, const char *rel)
{
    char name[64];
    trash_name(fs, name, sizeof name);
    return linkat(fs->root_fd, rel, fs->trash_fd, name, 0) ? -errno : 0;
}

static void free_listing(struct lz_listing *l)
{
    free_entries(l->entries, l->count);
    free(l);
}

void ns_sync_all(struct lz_fs *fs)
{
    while (fs->listings) {
        struct lz_listing *l = fs->listings;
        fs->listings = l->next;
        free_listing(l);
    }
    empty_trash(fs, false);
}

void ns_sync_dir(struct lz_fs *fs, dev_t dev, ino_t ino)
{
    for (struct lz_listing **p = &fs->listings; *p; p = &(*p)->next) {
        if ((*p)->ino == ino && (*p)->dev == dev) {
            struct lz_listing *l = *p;
            *p = l->next;
            free_listing(l);
            break;
        }
    }
    empty_trash(fs, true);
}

/* ---- the whole tree, for drop and stats ------------------------------------------------------ */

struct rc_ent {
    ino_t parent;
    char *name;
    ino_t ino;
    bool dir;
};

struct tree {
    struct rc_ent *e;
    size_t count, cap;
    ino_t root, trash;
};

static int tree_add(struct tree *t, ino_t parent, const char *name, ino_t ino, bool dir)
{
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct rc_ent *more = realloc(t->e, cap * sizeof *more);
        if (!more)
            return -ENOMEM;
        t->e = more;
        t->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return -ENOMEM;
    t->e[t->count++] = (struct rc_ent){parent, copy, ino, dir};
    return 0;
}

static void tree_free(struct tree *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->e[i].name);
    free(t->e);
}

static int tree_scan(struct tree *t, int dirfd, ino_t dir_ino, bool is_root, int depth)
{
    if (depth > MAX_DEPTH)
        return -ELOOP;
    struct lz_entry *e;
    size_t count;
    int rc = list_dir(dirfd, is_root, &e, &count);
    for (size_t i = 0; !rc && i < count; i++) {
        rc = tree_add(t, dir_ino, e[i].name, e[i].ino, e[i].dir);
        if (rc || !e[i].dir)
            continue;
        int fd = openat(dirfd, e[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        rc = tree_scan(t, fd, e[i].ino, false, depth + 1);
        close(fd);
    }
    free_entries(e, count);
    return rc;
}

static int tree_load(struct lz_fs *fs, struct tree *t)
{
    memset(t, 0, sizeof *t);
    struct stat st;
    if (fstat(fs->trash_fd, &st))
        return -errno;
    t->root = fs->root_ino;
    t->trash = st.st_ino;
    int rc = tree_scan(t, fs->root_fd, t->root, true, 0);
    if (!rc)
        rc = tree_scan(t, fs->trash_fd, t->trash, false, 0);
    if (rc)
        tree_free(t);
    return rc;
}

static struct rc_ent *dir_entry(struct tree *t, ino_t ino)
{
    for (size_t i = 0; i < t->count; i++)
        if (t->e[i].dir && t->e[i].ino == ino)
            return &t->e[i];
    return NULL;
}

/* The path of directory ino, relative to the backing root. */
static int dir_path(struct tree *t, ino_t ino, char *buf, size_t size, int depth)
{
    if (ino == t->root)
        return snprintf(buf, size, ".") >= (int)size ? -ENAMETOOLONG : 0;
    if (ino == t->trash)
        return snprintf(buf, size, "%s/%s", LZ_STATE_DIR, LZ_TRASH_DIR) >= (int)size ? -ENAMETOOLONG : 0;
    struct rc_ent *e = dir_entry(t, ino);
    if (!e || depth > MAX_DEPTH)
        return -ENOENT;
    int rc = dir_path(t, e->parent, buf, size, depth + 1);
    if (rc)
        return rc;
    size_t used = strlen(buf);
    return snprintf(buf + used, size - used, "/%s", e->name) >= (int)(size - used) ? -ENAMETOOLONG : 0;
}

static int open_dir(struct lz_fs *fs, struct tree *t, ino_t ino)
{
    char path[PATH_MAX];
    int rc = dir_path(t, ino, path, sizeof path, 0);
    if (rc)
        return rc;
    int fd = openat(fs->root_fd, path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

struct target {
    ino_t parent;
    char *name;
    ino_t ino;
    bool dir;
};

struct plan {
    struct target *t;
    size_t count, cap;
    ino_t *dirs; /* placed directories, in breadth-first order */
    size_t ndirs, dirs_cap;
};

static int plan_add(struct plan *p, struct target tg)
{
    tg.name = strdup(tg.name);
    if (!tg.name)
        return -ENOMEM;
    if (p->count == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        struct target *more = realloc(p->t, cap * sizeof *more);
        if (!more) {
            free(tg.name);
            return -ENOMEM;
        }
        p->t = more;
        p->cap = cap;
    }
    p->t[p->count++] = tg;
    return 0;
}

static int plan_dir(struct plan *p, ino_t ino)
{
    if (p->ndirs == p->dirs_cap) {
        size_t cap = p->dirs_cap ? p->dirs_cap * 2 : 64;
        ino_t *more = realloc(p->dirs, cap * sizeof *more);
        if (!more)
            return -ENOMEM;
        p->dirs = more;
        p->dirs_cap = cap;
    }
    p->dirs[p->ndirs++] = ino;
    return 0;
}

static bool placed(const struct plan *p, ino_t ino)
{
    for (size_t i = 0; i < p->ndirs; i++)
        if (p->dirs[i] == ino)
            return true;
    return false;
}

static bool wanted(const struct plan *p, ino_t parent, const char *name, ino_t ino)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->t[i].parent == parent && p->t[i].ino == ino && !strcmp(p->t[i].name, name))
            return true;
    return false;
}

static bool exists(struct tree *t, ino_t ino, bool dir)
{
    for (size_t i = 0; i < t->count; i++)
        if (t->e[i].ino == ino && t->e[i].dir == dir)
            return true;
    return false;
}

/* The durable tree, breadth-first from the root, computed before anything moves. */
static int plan_tree(struct lz_fs *fs, struct tree *t, struct plan *p)
{
    int rc = plan_dir(p, t->root);
    for (size_t qi = 0; !rc && qi < p->ndirs; qi++) {
        ino_t d = p->dirs[qi];
        struct lz_listing *l = find_listing(fs, fs->root_dev, d);
        size_t count = l ? l->count : t->count;
        for (size_t i = 0; !rc && i < count; i++) {
            struct target tg;
            if (l) {
                tg = (struct target){d, l->entries[i].name, l->entries[i].ino, l->entries[i].dir};
            } else {
                if (t->e[i].parent != d)
                    continue;
                tg = (struct target){d, t->e[i].name, t->e[i].ino, t->e[i].dir};
            }
            if (!exists(t, tg.ino, tg.dir)) {
                lz_log("drop: %s (inode %llu) cannot be restored: its inode is gone", tg.name,
                       (unsigned long long)tg.ino);
                continue;
            }
            if (tg.dir) {
                if (placed(p, tg.ino))
                    continue;
                rc = plan_dir(p, tg.ino);
            }
            if (!rc)
                rc = plan_add(p, tg);
        }
    }
    return rc;
}

static int move_entry(struct lz_fs *fs, struct tree *t, struct rc_ent *e, ino_t to, int to_fd, const char *name)
{
    int from_fd = open_dir(fs, t, e->parent);
    if (from_fd < 0)
        return from_fd;
    int rc = renameat(from_fd, e->name, to_fd, name) ? -errno : 0;
    close(from_fd);
    if (rc)
        return rc;
    char *copy = strdup(name);
    if (!copy)
        return -ENOMEM;
    free(e->name);
    e->name = copy;
    e->parent = to;
    return 0;
}

/* Make directory d (already in its durable place) hold exactly its durable entries. */
static int settle_dir(struct lz_fs *fs, struct tree *t, struct plan *p, ino_t d, struct ns_report *report)
{
    int dfd = open_dir(fs, t, d);
    if (dfd < 0)
        return dfd;
    int rc = 0;
    for (size_t i = 0; !rc && i < t->count; i++) {
        struct rc_ent *e = &t->e[i];
        if (e->parent != d || wanted(p, d, e->name, e->ino))
            continue;
        char name[64];
        trash_name(fs, name, sizeof name);
        rc = move_entry(fs, t, e, t->trash, fs->trash_fd, name);
        report->removed++;
    }
    for (size_t i = 0; !rc && i < p->count; i++) {
        struct target *w = &p->t[i];
        if (w->parent != d)
            continue;
        bool there = false;
        struct rc_ent *spare = NULL, *any = NULL;
        for (size_t j = 0; j < t->count; j++) {
            struct rc_ent *e = &t->e[j];
            if (e->parent == d && !strcmp(e->name, w->name)) {
                there = true;
                break;
            }
            if (e->ino != w->ino || e->dir != w->dir)
                continue;
            any = any ? any : e;
            if (!spare && !wanted(p, e->parent, e->name, e->ino))
                spare = e;
        }
        if (there)
            continue;
        if (spare) {
            rc = move_entry(fs, t, spare, d, dfd, w->name);
        } else if (any && !w->dir) { /* every name of it is durable somewhere: one more link */
            int from_fd = open_dir(fs, t, any->parent);
            rc = from_fd < 0 ? from_fd : (linkat(from_fd, any->name, dfd, w->name, 0) ? -errno : 0);
            if (from_fd >= 0)
                close(from_fd);
            if (!rc)
                rc = tree_add(t, d, w->name, w->ino, false);
        } else {
            lz_log("drop: no inode %llu left for %s", (unsigned long long)w->ino, w->name);
            continue;
        }
        report->restored++;
    }
    close(dfd);
    return rc;
}

int ns_reconcile(struct lz_fs *fs, struct ns_report *report)
{
    memset(report, 0, sizeof *report);
    if (!fs->listings) { /* nothing changed since the last durable point */
        empty_trash(fs, false);
        return 0;
    }
    struct tree t;
    int rc = tree_load(fs, &t);
    if (rc)
        return rc;
    struct plan p = {0};
    rc = plan_tree(fs, &t, &p);
    for (size_t qi = 0; !rc && qi < p.ndirs; qi++)
        rc = settle_dir(fs, &t, &p, p.dirs[qi], report);
    if (rc)
        lz_log("drop: the backing folder could not be put back whole: %s", strerror(-rc));
    for (size_t i = 0; i < p.count; i++)
        free(p.t[i].name);
    free(p.t);
    free(p.dirs);
    tree_free(&t);
    while (fs->listings) {
        struct lz_listing *l = fs->listings;
        fs->listings = l->next;
        free_listing(l);
    }
    empty_trash(fs, false);
    return rc;
}

void ns_pending(struct lz_fs *fs, uint64_t *dirs, uint64_t *entries)
{
    *dirs = 0;
    *entries = 0;
    if (!fs->listings)
        return;
    struct tree t;
    if (tree_load(fs, &t))
        return;
    for (struct lz_listing *l = fs->listings; l; l = l->next) {
        (*dirs)++;
        for (size_t i = 0; i < l->count; i++) { /* durable, but gone or changed now */
            bool same = false;
            for (size_t j = 0; j < t.count && !same; j++)
                same = t.e[j].parent == l->ino && t.e[j].ino == l->entries[i].ino &&
                       !strcmp(t.e[j].name, l->entries[i].name);
            *entries += !same;
        }
        for (size_t j = 0; j < t.count; j++) { /* there now, not durable */
            if (t.e[j].parent != l->ino)
                continue;
            bool same = false;
            for (size_t i = 0; i < l->count && !same; i++)
                same = t.e[j].ino == l->entries[i].ino && !strcmp(t.e[j].name, l->entries[i].name);
            *entries += !same;
        }
    }
    tree_free(&t);
}
