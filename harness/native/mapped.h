/* A file read whole into memory (read(2), not mmap: a file cut short while it
 * is read must not kill the process with SIGBUS). */
#ifndef FENCEPOST_MAPPED_H
#define FENCEPOST_MAPPED_H

#include <stddef.h>

typedef struct {
    char *data; /* never NULL once opened, also for an empty file */
    size_t size;
} Mapped;

/* 0 on success; else an errno value, `m` left empty. */
int mapped_open(Mapped *m, const char *path);
void mapped_close(Mapped *m);

#endif
