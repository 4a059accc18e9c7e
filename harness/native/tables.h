/* Hash tables of the native loader: strings interned to dense ids (StrTab) and
 * pairs of 64-bit integers mapped to dense ids (PairMap). Open addressing,
 * linear probing, grown at half full. */
#ifndef FENCEPOST_TABLES_H
#define FENCEPOST_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "scan.h"

#define NO_ID UINT32_MAX

typedef struct {
    Span *spans;    /* id -> the string's bytes (in the file or an arena) */
    uint64_t *hashes; /* id -> its hash */
    uint32_t len, cap;
    uint32_t *slots; /* id + 1, 0 when empty */
    uint32_t mask;
} StrTab;

int strtab_init(StrTab *t);
void strtab_free(StrTab *t);
/* The id of `s`, added when new; NO_ID when out of memory. */
uint32_t strtab_intern(StrTab *t, Span s);
/* The id of `s`, or NO_ID when absent. */
uint32_t strtab_find(const StrTab *t, const char *ptr, uint32_t len);

/* The id of `s`, trying `*hot` (the id it had last time) before hashing. */
static inline uint32_t strtab_intern_hot(StrTab *t, Span s, uint32_t *hot);

typedef struct {
    int64_t a, b;
} IntPair;

typedef struct {
    IntPair *keys; /* id -> its pair */
    uint32_t len, cap;
    uint32_t *slots;
    uint32_t mask;
} PairMap;

int pairmap_init(PairMap *m);
void pairmap_free(PairMap *m);
/* The id of (a, b), added when new (*added = 1); NO_ID when out of memory. */
uint32_t pairmap_intern(PairMap *m, int64_t a, int64_t b, int *added);
uint32_t pairmap_find(const PairMap *m, int64_t a, int64_t b);

/* A partition's records: each distinct (offset, value) once, found by its
 * offset (the few values seen at one offset are chained), with no hashing of
 * the value: a record is compared byte for byte with those at its offset. */
typedef struct {
    int64_t offset;
    Span value;
    uint32_t next; /* the next record at this offset, or NO_ID */
} Record;

typedef struct {
    Record *items;
    uint32_t len, cap;
    /* Offsets are dense from 0 in any real log: those below `dense_len` are
     * found by index; others (far, negative: fuzzed input) by hash. */
    uint32_t *dense;  /* offset -> first record at it, NO_ID when none */
    size_t dense_len;
    int64_t *offsets; /* slot -> offset */
    uint32_t *firsts; /* slot -> first record at that offset, NO_ID when empty */
    uint32_t mask, used;
} RecordTable;

int records_init(RecordTable *t);
void records_free(RecordTable *t);
/* The id of (offset, value), added when new; NO_ID when out of memory. */
uint32_t records_intern(RecordTable *t, int64_t offset, Span value);
/* The id of (offset, value), or NO_ID when absent. */
uint32_t records_find(const RecordTable *t, int64_t offset, Span value);

static inline int span_eq(Span a, Span b) {
    return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0;
}

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static inline uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, p, n);
    h = (h ^ tail) * 0x100000001b3ULL;
    return mix64(h);
}

static inline uint32_t strtab_intern_hot(StrTab *t, Span s, uint32_t *hot) {
    if (*hot != NO_ID && t->spans[*hot].len == s.len && memcmp(t->spans[*hot].ptr, s.ptr, s.len) == 0)
        return *hot;
    return *hot = strtab_intern(t, s);
}

#endif
