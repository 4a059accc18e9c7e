/* The data of one inode as the mount shows it: the backing file (its durable content) overlaid
 * with cached 4 KiB pages. Invariants, per node:
 * - a cached page holds the page's whole current content; bytes of it past `size` are zero;
 * - an uncached byte below min(low, durable_size) is the backing file's; any other uncached byte
 *   below `size` is zero (it was cut off by a truncation, or lies past the durable end);
 * - low <= size; after a flush low == size == durable_size and no page is cached.
 */
#include "lazyfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* ---- the page map ------------------------------------------------------------------------ */

static size_t slot_of(const struct lz_pagemap *pm, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & (pm->cap - 1);
}

uint8_t *pm_get(const struct lz_pagemap *pm, uint64_t key)
{
    if (pm->count == 0)
        return NULL;
    for (size_t i = slot_of(pm, key);; i = (i + 1) & (pm->cap - 1)) {
        if (pm->vals[i] == NULL)
            return NULL;
        if (pm->keys[i] == key)
            return pm->vals[i];
    }
}

static int pm_grow(struct lz_pagemap *pm)
{
    size_t cap = pm->cap ? pm->cap * 2 : 64;
    uint64_t *keys = calloc(cap, sizeof *keys);
    uint8_t **vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -ENOMEM;
    }
    struct lz_pagemap bigger = {keys, vals, cap, 0};
    for (size_t i = 0; i < pm->cap; i++)
        if (pm->vals[i])
            pm_put(&bigger, pm->keys[i], pm->vals[i]);
    free(pm->keys);
    free(pm->vals);
    *pm = bigger;
    return 0;
}

int pm_put(struct lz_pagemap *pm, uint64_t key, uint8_t *val)
{
    if ((pm->count + 1) * 4 > pm->cap * 3) { /* keep the load under 3/4 */
        int rc = pm_grow(pm);
        if (rc)
            return rc;
    }
    size_t i = slot_of(pm, key);
    while (pm->vals[i] && pm->keys[i] != key)
        i = (i + 1) & (pm->cap - 1);
    if (!pm->vals[i])
        pm->count++;
    pm->keys[i] = key;
    pm->vals[i] = val;
    return 0;
}

uint8_t *pm_take(struct lz_pagemap *pm, uint64_t key)
{
    if (pm->count == 0)
        return NULL;
    size_t i = slot_of(pm, key);
    while (pm->vals[i] && pm->keys[i] != key)
        i = (i + 1) & (pm->cap - 1);
    uint8_t *val = pm->vals[i];
    if (!val)
        return NULL;
    pm->vals[i] = NULL;
    pm->count--;
    /* backward-shift deletion: move later members of the probe run into the hole */
    size_t hole = i;
    for (size_t j = (i + 1) & (pm->cap - 1); pm->vals[j]; j = (j + 1) & (pm->cap - 1)) {
        size_t home = slot_of(pm, pm->keys[j]);
        bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            pm->keys[hole] = pm->keys[j];
            pm->vals[hole] = pm->vals[j];
            pm->vals[j] = NULL;
            hole = j;
        }
    }
    return val;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t *pm_keys(const struct lz_pagemap *pm, size_t *n)
{
    *n = 0;
    uint64_t *keys = malloc((pm->count ? pm->count : 1) * sizeof *keys);
    if (!keys)
        return NULL;
    for (size_t i = 0; i < pm->cap; i++)
        if (pm->vals[i])
            keys[(*n)++] = pm->keys[i];
    if (*n > 1)
        qsort(keys, *n, sizeof *keys, cmp_u64);
    return keys;
}

static void pm_free_all(struct lz_fs *fs, struct lz_pagemap *pm)
{
    for (size_t i = 0; i < pm->cap; i++)
        free(pm->vals[i]);
    atomic_fetch_sub(&fs->cached_bytes, (uint64_t)pm->count * LZ_PAGE);
    free(pm->keys);
    free(pm->vals);
    memset(pm, 0, sizeof *pm);
}

/* ---- the backing file ---------------------------------------------------------------------- */

/* len bytes at off of the backing file; what lies past its end reads as zero. */
static int backing_read(int fd, char *buf, size_t len, off_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(fd, buf + done, len - done, off + (off_t)done);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0) {
            memset(buf + done, 0, len - done);
            break;
        }
        done += (size_t)r;
    }
    return 0;
}

static off_t min_off(off_t a, off_t b) { return a < b ? a : b; }

/* A page's current content, from the backing file and zeros (the page is not cached). */
static int fill_page(struct lz_node *n, uint64_t idx, uint8_t *page)
{
    off_t start = (off_t)idx * LZ_PAGE;
    off_t limit = min_off(n->low, n->durable_size);
    memset(page, 0, LZ_PAGE);
    if (start >= limit)
        return 0;
    return backing_read(n->fd, (char *)page, (size_t)min_off(LZ_PAGE, limit - start), start);
}

static void now(struct timespec *ts) { clock_gettime(CLOCK_REALTIME, ts); }

bool node_dirty(const struct lz_node *n)
{
    return n->pages.count || n->size != n->durable_size || n->low != n->durable_size || n->mtime_set;
}

void node_show(struct lz_node *n, struct stat *st)
{
    st->st_size = n->size;
    blkcnt_t blocks = (n->size + 511) / 512;
    if (st->st_blocks < blocks)
        st->st_blocks = blocks;
    if (n->mtime_set) {
        st->st_mtim = n->mtime;
        st->st_ctim = n->mtime;
    }
}

/* ---- reads and writes ---------------------------------------------------------------------- */

ssize_t node_read(struct lz_fs *fs, struct lz_node *n, char *buf, size_t size, off_t off)
{
    if (fs->passthrough) {
        ssize_t r = pread(n->fd, buf, size, off);
        return r < 0 ? -errno : r;
    }
    if (off >= n->size)
        return 0;
    off_t end = min_off(n->size, off + (off_t)size);
    off_t limit = min_off(n->low, n->durable_size);
    off_t pos = off;
    while (pos < end) {
        uint64_t idx = (uint64_t)pos / LZ_PAGE;
        off_t page_end = min_off(end, (off_t)(idx + 1) * LZ_PAGE);
        uint8_t *page = pm_get(&n->pages, idx);
        if (page) {
            memcpy(buf + (pos - off), page + (pos - (off_t)idx * LZ_PAGE), (size_t)(page_end - pos));
            pos = page_end;
            continue;
        }
        off_t run_end = page_end; /* a run of uncached pages: one pread */
        while (run_end < end && !pm_get(&n->pages, (uint64_t)run_end / LZ_PAGE))
            run_end = min_off(end, run_end + LZ_PAGE);
        if (pos < limit) {
            off_t from_disk = min_off(run_end, limit);
            int rc = backing_read(n->fd, buf + (pos - off), (size_t)(from_disk - pos), pos);
            if (rc)
                return rc;
            if (from_disk < run_end)
                memset(buf + (from_disk - off), 0, (size_t)(run_end - from_disk));
        } else {
            memset(buf + (pos - off), 0, (size_t)(run_end - pos));
        }
        pos = run_end;
    }
    return end - off;
}

static int reserve(struct lz_fs *fs, uint64_t pages)
{
    uint64_t bytes = pages * LZ_PAGE;
    uint64_t held = atomic_fetch_add(&fs->cached_bytes, bytes);
    if (fs->cache_limit && held + bytes > fs->cache_limit) {
        atomic_fetch_sub(&fs->cached_bytes, bytes);
        lz_log("cache full: %llu bytes not yet durable, limit %llu: write refused (ENOSPC)",
               (unsigned long long)held, (unsigned long long)fs->cache_limit);
        return -ENOSPC;
    }
    return 0;
}

/* The cached page idx, made from the backing file when absent (unless `whole` says every byte
 * of it is about to be overwritten). */
static int page_for_write(struct lz_fs *fs, struct lz_node *n, uint64_t idx, bool whole, uint8_t **out)
{
    uint8_t *page = pm_get(&n->pages, idx);
    if (page) {
        *out = page;
        return 0;
    }
    int rc = reserve(fs, 1);
    if (rc)
        return rc;
    page = malloc(LZ_PAGE);
    if (!page) {
        atomic_fetch_sub(&fs->cached_bytes, LZ_PAGE);
        return -ENOMEM;
    }
    rc = whole ? 0 : fill_page(n, idx, page);
    if (!rc)
        rc = pm_put(&n->pages, idx, page);
    if (rc) {
        free(page);
        atomic_fetch_sub(&fs->cached_bytes, LZ_PAGE);
        return rc;
    }
    *out = page;
    return 0;
}

ssize_t node_write(struct lz_fs *fs, struct lz_node *n, const char *buf, size_t size, off_t off)
{
    if (fs->passthrough) {
        ssize_t w = pwrite(n->fd, buf, size, off);
        return w < 0 ? -errno : w;
    }
    if (n->readonly)
        return -EBADF;
    off_t end = off + (off_t)size;
    off_t pos = off;
    while (pos < end) {
        uint64_t idx = (uint64_t)pos / LZ_PAGE;
        off_t start = (off_t)idx * LZ_PAGE;
        off_t page_end = min_off(end, start + LZ_PAGE);
        bool whole = pos == start && page_end == start + LZ_PAGE;
        uint8_t *page;
        int rc = page_for_write(fs, n, idx, whole, &page);
        if (rc) {
            if (pos == off)
                return rc;
            break; /* a short write: what was copied stays */
        }
        memcpy(page + (pos - start), buf + (pos - off), (size_t)(page_end - pos));
        pos = page_end;
    }
    if (pos > n->size)
        n->size = pos;
    now(&n->mtime);
    n->mtime_set = true;
    return pos - off;
}

/* ---- sizes ----------------------------------------------------------------------------------- */

int node_truncate(struct lz_fs *fs, struct lz_node *n, off_t size)
{
    if (fs->passthrough)
        return ftruncate(n->fd, size) ? -errno : 0;
    if (n->readonly)
        return -EBADF;
    if (size < n->size && n->pages.count) {
        size_t count;
        uint64_t *keys = pm_keys(&n->pages, &count);
        if (!keys)
            return -ENOMEM;
        for (size_t i = 0; i < count; i++) {
            off_t start = (off_t)keys[i] * LZ_PAGE;
            if (start >= size) {
                free(pm_take(&n->pages, keys[i]));
                atomic_fetch_sub(&fs->cached_bytes, LZ_PAGE);
            } else if (start + LZ_PAGE > size) {
                uint8_t *page = pm_get(&n->pages, keys[i]);
                memset(page + (size - start), 0, (size_t)(start + LZ_PAGE - size));
            }
        }
        free(keys);
    }
    n->low = min_off(n->low, size); /* uncached bytes past it now read as zero */
    n->size = size;
    now(&n->mtime);
    n->mtime_set = true;
    return 0;
}

/* Zero [off, end) within the file's size, through the cache. */
static int zero_range(struct lz_fs *fs, struct lz_node *n, off_t off, off_t end)
{
    off_t limit = min_off(n->low, n->durable_size);
    for (off_t pos = off; pos < end;) {
        uint64_t idx = (uint64_t)pos / LZ_PAGE;
        off_t start = (off_t)idx * LZ_PAGE;
        off_t page_end = min_off(end, start + LZ_PAGE);
        if (start >= limit && !pm_get(&n->pages, idx)) { /* reads as zero already */
            pos = page_end;
            continue;
        }
        uint8_t *page;
        int rc = page_for_write(fs, n, idx, false, &page);
        if (rc)
            return rc;
        memset(page + (pos - start), 0, (size_t)(page_end - pos));
        pos = page_end;
    }
    return 0;
}

int node_fallocate(struct lz_fs *fs, struct lz_node *n, int mode, off_t off, off_t len)
{
    if (fs->passthrough)
        return fallocate(n->fd, mode, off, len) ? -errno : 0;
    if (n->readonly)
        return -EBADF;
    if (off < 0 || len <= 0)
        return -EINVAL;
    off_t end = off + len;
    int rc = 0;
    switch (mode) {
    case 0: /* allocate: the size grows to cover the range (the new bytes read as zero) */
        if (end > n->size)
            rc = node_truncate(fs, n, end);
        break;
    case FALLOC_FL_KEEP_SIZE: /* space only: nothing to show */
        break;
    case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE:
        rc = zero_range(fs, n, off, min_off(end, n->size));
        break;
    case FALLOC_FL_ZERO_RANGE:
    case FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE:
        rc = zero_range(fs, n, off, min_off(end, n->size));
        if (!rc && !(mode & FALLOC_FL_KEEP_SIZE) && end > n->size)
            rc = node_truncate(fs, n, end);
        break;
    default:
        return -EOPNOTSUPP;
    }
    if (!rc) {
        now(&n->mtime);
        n->mtime_set = true;
    }
    return rc;
}

/* ---- durability ------------------------------------------------------------------------------- */

static int write_all(int fd, struct iovec *iov, int count, off_t off)
{
    while (count > 0) {
        ssize_t w = pwritev(fd, iov, count, off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        off += w;
        while (count > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            count--;
        }
        if (count > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

int node_flush(struct lz_fs *fs, struct lz_node *n)
{
    if (fs->passthrough || !node_dirty(n))
        return fsync(n->fd) ? -errno : 0;
    if (n->readonly)
        return -EBADF;
    /* what the backing file holds past `low` is stale: cut it first, write pages, set the size */
    if (n->low < n->durable_size && ftruncate(n->fd, n->low))
        return -errno;
    size_t count;
    uint64_t *keys = pm_keys(&n->pages, &count);
    if (!keys)
        return -ENOMEM;
    enum { BATCH = 256 };
    struct iovec iov[BATCH];
    int rc = 0;
    for (size_t i = 0; i < count && !rc;) {
        off_t run_start = (off_t)keys[i] * LZ_PAGE;
        int used = 0;
        do {
            off_t start = (off_t)keys[i] * LZ_PAGE;
            iov[used].iov_base = pm_get(&n->pages, keys[i]);
            iov[used].iov_len = (size_t)min_off(LZ_PAGE, n->size - start);
            used++;
            i++;
        } while (i < count && used < BATCH && keys[i] == keys[i - 1] + 1);
        rc = write_all(n->fd, iov, used, run_start);
    }
    free(keys);
    if (!rc && ftruncate(n->fd, n->size))
        rc = -errno;
    if (!rc && n->mtime_set) {
        struct timespec times[2] = {{0, UTIME_OMIT}, n->mtime};
        futimens(n->fd, times); /* the shown mtime, not the flush's; best effort */
    }
    if (!rc && fsync(n->fd))
        rc = -errno;
    if (rc) {
        lz_log("flush of inode %llu failed: %s", (unsigned long long)n->ino, strerror(-rc));
        return rc;
    }
    pm_free_all(fs, &n->pages);
    n->durable_size = n->low = n->size;
    n->mtime_set = false;
    return 0;
}

uint64_t node_discard(struct lz_fs *fs, struct lz_node *n)
{
    uint64_t lost = (uint64_t)n->pages.count * LZ_PAGE;
    pm_free_all(fs, &n->pages);
    n->size = n->low = n->durable_size;
    n->mtime_set = false;
    return lost;
}
