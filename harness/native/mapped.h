/* A file read whole into memory (read(2), not mmap: a file cut short while it
 * is read must not kill the process with SIGBUS). A line longer than
 * MAPPED_MAX_LINE (the readers' bound, harness/rundir/history.py MAX_LINE_BYTES)
 * stops the read at once with EFBIG: what is held stays within the bound past
 * the lines before it, and the Python readers say which line it was. */
#ifndef FENCEPOST_MAPPED_H
#define FENCEPOST_MAPPED_H

#include <stddef.h>

#define MAPPED_MAX_LINE ((size_t)64 << 20) /* bytes, its newline included */

typedef struct {
    char *data; /* never NULL once opened, also for an empty file */
    size_t size;
} Mapped;

/* 0 on success; else an errno value (EFBIG: a line over MAPPED_MAX_LINE), `m` left empty. */
int mapped_open(Mapped *m, const char *path);
void mapped_close(Mapped *m);

#endif
