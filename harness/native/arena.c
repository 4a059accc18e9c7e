#include "arena.h"

#include <string.h>

#define CHUNK_SIZE (1 << 20)

void *arena_alloc(Arena *a, size_t n) {
    n = (n + 7) & ~(size_t)7;
    ArenaChunk *chunk = a->head;
    if (chunk == NULL || chunk->size - chunk->used < n) {
        size_t size = n > CHUNK_SIZE ? n : CHUNK_SIZE;
        chunk = malloc(sizeof(ArenaChunk) + size);
        if (chunk == NULL) return NULL;
        chunk->next = a->head;
        chunk->used = 0;
        chunk->size = size;
        a->head = chunk;
    }
    void *out = chunk->data + chunk->used;
    chunk->used += n;
    return out;
}

void arena_free(Arena *a) {
    ArenaChunk *chunk = a->head;
    while (chunk != NULL) {
        ArenaChunk *next = chunk->next;
        free(chunk);
        chunk = next;
    }
    a->head = NULL;
}

int vec_grow(void **items, size_t *cap, size_t item_size, size_t need) {
    size_t cap2 = *cap ? *cap : 8;
    while (cap2 < need) cap2 *= 2;
    void *grown = realloc(*items, cap2 * item_size);
    if (grown == NULL) return 0;
    *items = grown;
    *cap = cap2;
    return 1;
}
