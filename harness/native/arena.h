/* Growable arrays and a bump allocator: the only memory management of the
 * native loader. Everything a table holds is freed with the table. */
#ifndef FENCEPOST_ARENA_H
#define FENCEPOST_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* A bump allocator over a list of chunks (unescaped strings, small lists). */
typedef struct ArenaChunk {
    struct ArenaChunk *next;
    size_t used, size;
    char data[];
} ArenaChunk;

typedef struct {
    ArenaChunk *head;
} Arena;

void *arena_alloc(Arena *a, size_t n);
void arena_free(Arena *a);

/* A growable array of `T`: VEC(T) name; vec_push(&name, value) (0 when out of memory). */
#define VEC(T) struct { T *items; size_t len, cap; }

int vec_grow(void **items, size_t *cap, size_t item_size, size_t need);

#define vec_reserve(v, need) \
    ((need) <= (v)->cap || vec_grow((void **)&(v)->items, &(v)->cap, sizeof(*(v)->items), (need)))

#define vec_push(v, value) \
    (vec_reserve((v), (v)->len + 1) ? ((v)->items[(v)->len++] = (value), 1) : 0)

#define vec_free(v) (free((v)->items), (v)->items = NULL, (v)->len = (v)->cap = 0)

#endif
