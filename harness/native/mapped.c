#include "mapped.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
    while (size < cap) { /* what the file holds now, up to its size when opened */
        ssize_t n = read(fd, data + size, cap - size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            free(data);
            close(fd);
            return err;
        }
        if (n == 0) break;
        size += (size_t)n;
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
