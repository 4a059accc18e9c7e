#include "mapped.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAPPED_CHUNK ((size_t)4 << 20) /* bytes read at a time, so that a long line is seen early */

int mapped_open(Mapped *m, const char *path) {
    m->data = NULL;
    m->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return err;
    }
    size_t cap = (size_t)st.st_size;
    char *data = malloc(cap ? cap : 1);
    if (data == NULL) {
        close(fd);
        return ENOMEM;
    }
    size_t size = 0;
    size_t line_start = 0; /* where the line being read began */
    while (size < cap) { /* what the file holds now, up to its size when opened */
        size_t want = cap - size < MAPPED_CHUNK ? cap - size : MAPPED_CHUNK;
        ssize_t n = read(fd, data + size, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            free(data);
            close(fd);
            return err;
        }
        if (n == 0) break;
        const char *first = memchr(data + size, '\n', (size_t)n);
        int over = first != NULL && (size_t)(first - data) + 1 - line_start > MAPPED_MAX_LINE;
        for (const char *p = data + size + n; first != NULL && p-- > first;) { /* the chunk's last newline */
            if (*p == '\n') {
                line_start = (size_t)(p - data) + 1;
                break;
            }
        }
        size += (size_t)n;
        /* A line ended in this chunk longer than the bound, or one not ended yet that
         * already fills it (its newline would make it longer). */
        if (over || size - line_start >= MAPPED_MAX_LINE) { /* pages not read into stay untouched */
            free(data);
            close(fd);
            return EFBIG;
        }
    }
    close(fd);
    m->data = data;
    m->size = size;
    return 0;
}

void mapped_close(Mapped *m) {
    free(m->data);
    m->data = NULL;
    m->size = 0;
}
