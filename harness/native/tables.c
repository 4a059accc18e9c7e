#include "tables.h"

#include <stdlib.h>
#include <string.h>

#define INITIAL_SLOTS 64

static uint32_t *new_slots(uint32_t n) {
    return calloc(n, sizeof(uint32_t));
}

/* --- StrTab ------------------------------------------------------------- */

int strtab_init(StrTab *t) {
    memset(t, 0, sizeof(*t));
    t->slots = new_slots(INITIAL_SLOTS);
    t->mask = INITIAL_SLOTS - 1;
    return t->slots != NULL;
}

void strtab_free(StrTab *t) {
    free(t->spans);
    free(t->hashes);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static int strtab_rehash(StrTab *t) {
    uint32_t n = (t->mask + 1) * 2;
    uint32_t *slots = new_slots(n);
    if (slots == NULL) return 0;
    for (uint32_t id = 0; id < t->len; id++) {
        uint32_t i = (uint32_t)t->hashes[id] & (n - 1);
        while (slots[i]) i = (i + 1) & (n - 1);
        slots[i] = id + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = n - 1;
    return 1;
}

uint32_t strtab_find(const StrTab *t, const char *ptr, uint32_t len) {
    uint64_t h = hash_bytes(ptr, len);
    for (uint32_t i = (uint32_t)h & t->mask;; i = (i + 1) & t->mask) {
        uint32_t slot = t->slots[i];
        if (!slot) return NO_ID;
        uint32_t id = slot - 1;
        if (t->hashes[id] == h && t->spans[id].len == len && memcmp(t->spans[id].ptr, ptr, len) == 0)
            return id;
    }
}

uint32_t strtab_intern(StrTab *t, Span s) {
    uint64_t h = hash_bytes(s.ptr, s.len);
    uint32_t i = (uint32_t)h & t->mask;
    for (;; i = (i + 1) & t->mask) {
        uint32_t slot = t->slots[i];
        if (!slot) break;
        uint32_t id = slot - 1;
        if (t->hashes[id] == h && t->spans[id].len == s.len && memcmp(t->spans[id].ptr, s.ptr, s.len) == 0)
            return id;
    }
    if (t->len == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        Span *spans = realloc(t->spans, cap * sizeof(Span));
        if (spans == NULL) return NO_ID;
        t->spans = spans;
        uint64_t *hashes = realloc(t->hashes, cap * sizeof(uint64_t));
        if (hashes == NULL) return NO_ID;
        t->hashes = hashes;
        t->cap = cap;
    }
    uint32_t id = t->len++;
    t->spans[id] = s;
    t->hashes[id] = h;
    t->slots[i] = id + 1;
    if ((uint64_t)t->len * 2 > (uint64_t)t->mask + 1 && !strtab_rehash(t)) return NO_ID;
    return id;
}

/* --- PairMap ------------------------------------------------------------ */

static inline uint64_t pair_hash(int64_t a, int64_t b) {
    return mix64((uint64_t)a * 0x9e3779b97f4a7c15ULL ^ mix64((uint64_t)b));
}

int pairmap_init(PairMap *m) {
    memset(m, 0, sizeof(*m));
    m->slots = new_slots(INITIAL_SLOTS);
    m->mask = INITIAL_SLOTS - 1;
    return m->slots != NULL;
}

void pairmap_free(PairMap *m) {
    free(m->keys);
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

static int pairmap_rehash(PairMap *m) {
    uint32_t n = (m->mask + 1) * 2;
    uint32_t *slots = new_slots(n);
    if (slots == NULL) return 0;
    for (uint32_t id = 0; id < m->len; id++) {
        uint32_t i = (uint32_t)pair_hash(m->keys[id].a, m->keys[id].b) & (n - 1);
        while (slots[i]) i = (i + 1) & (n - 1);
        slots[i] = id + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->mask = n - 1;
    return 1;
}

uint32_t pairmap_find(const PairMap *m, int64_t a, int64_t b) {
    for (uint32_t i = (uint32_t)pair_hash(a, b) & m->mask;; i = (i + 1) & m->mask) {
        uint32_t slot = m->slots[i];
        if (!slot) return NO_ID;
        const IntPair *k = &m->keys[slot - 1];
        if (k->a == a && k->b == b) return slot - 1;
    }
}

uint32_t pairmap_intern(PairMap *m, int64_t a, int64_t b, int *added) {
    uint32_t i = (uint32_t)pair_hash(a, b) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        uint32_t slot = m->slots[i];
        if (!slot) break;
        const IntPair *k = &m->keys[slot - 1];
        if (k->a == a && k->b == b) {
            *added = 0;
            return slot - 1;
        }
    }
    if (m->len == m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : 64;
        IntPair *keys = realloc(m->keys, cap * sizeof(IntPair));
        if (keys == NULL) return NO_ID;
        m->keys = keys;
        m->cap = cap;
    }
    uint32_t id = m->len++;
    m->keys[id].a = a;
    m->keys[id].b = b;
    m->slots[i] = id + 1;
    *added = 1;
    if ((uint64_t)m->len * 2 > (uint64_t)m->mask + 1 && !pairmap_rehash(m)) return NO_ID;
    return id;
}

/* --- RecordTable ------------------------------------------------------------ */

/* The dense part covers up to this many offsets beyond four per record: a
 * real log's offsets never need more, a fuzzed one's far offsets are hashed. */
#define DENSE_SLACK (1 << 16)

int records_init(RecordTable *t) {
    memset(t, 0, sizeof(*t));
    t->offsets = malloc(INITIAL_SLOTS * sizeof(int64_t));
    t->firsts = malloc(INITIAL_SLOTS * sizeof(uint32_t));
    if (t->offsets == NULL || t->firsts == NULL) return 0;
    memset(t->firsts, 0xff, INITIAL_SLOTS * sizeof(uint32_t));
    t->mask = INITIAL_SLOTS - 1;
    return 1;
}

void records_free(RecordTable *t) {
    free(t->items);
    free(t->dense);
    free(t->offsets);
    free(t->firsts);
    memset(t, 0, sizeof(*t));
}

static uint32_t offset_slot(const RecordTable *t, int64_t offset) {
    uint32_t i = (uint32_t)mix64((uint64_t)offset) & t->mask;
    while (t->firsts[i] != NO_ID && t->offsets[i] != offset) i = (i + 1) & t->mask;
    return i;
}

static int records_rehash(RecordTable *t) {
    uint32_t n = (t->mask + 1) * 2;
    int64_t *offsets = malloc(n * sizeof(int64_t));
    uint32_t *firsts = malloc(n * sizeof(uint32_t));
    if (offsets == NULL || firsts == NULL) {
        free(offsets);
        free(firsts);
        return 0;
    }
    memset(firsts, 0xff, n * sizeof(uint32_t));
    for (uint32_t i = 0; i <= t->mask; i++) {
        if (t->firsts[i] == NO_ID) continue;
        uint32_t j = (uint32_t)mix64((uint64_t)t->offsets[i]) & (n - 1);
        while (firsts[j] != NO_ID) j = (j + 1) & (n - 1);
        offsets[j] = t->offsets[i];
        firsts[j] = t->firsts[i];
    }
    free(t->offsets);
    free(t->firsts);
    t->offsets = offsets;
    t->firsts = firsts;
    t->mask = n - 1;
    return 1;
}

/* Extend the dense part to cover `offset` when that stays within bounds;
 * 0 when it does not (or memory ran out): the offset is then hashed. */
static int dense_cover(RecordTable *t, int64_t offset) {
    if (offset < 0 || (uint64_t)offset >= 4 * (uint64_t)t->len + DENSE_SLACK) return 0;
    size_t n = t->dense_len ? t->dense_len : 1024;
    while (n <= (size_t)offset) n *= 2;
    uint32_t *dense = realloc(t->dense, n * sizeof(uint32_t));
    if (dense == NULL) return 0;
    memset(dense + t->dense_len, 0xff, (n - t->dense_len) * sizeof(uint32_t));
    t->dense = dense;
    t->dense_len = n;
    return 1;
}

/* An offset hashed before the dense part grew over it stays hashed: a miss
 * in the dense part looks there too, when anything is hashed. */
static uint32_t first_at(const RecordTable *t, int64_t offset) {
    if (offset >= 0 && (uint64_t)offset < t->dense_len) {
        uint32_t id = t->dense[offset];
        if (id != NO_ID) return id;
    }
    return t->used == 0 ? NO_ID : t->firsts[offset_slot(t, offset)];
}

uint32_t records_find(const RecordTable *t, int64_t offset, Span value) {
    uint32_t id = first_at(t, offset);
    while (id != NO_ID && !span_eq(t->items[id].value, value)) id = t->items[id].next;
    return id;
}

uint32_t records_intern(RecordTable *t, int64_t offset, Span value) {
    uint32_t last = NO_ID;
    for (uint32_t id = first_at(t, offset); id != NO_ID; id = t->items[id].next) {
        if (span_eq(t->items[id].value, value)) return id;
        last = id;
    }
    if (t->len == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        Record *items = realloc(t->items, cap * sizeof(Record));
        if (items == NULL) return NO_ID;
        t->items = items;
        t->cap = cap;
    }
    uint32_t id = t->len;
    t->items[id].offset = offset;
    t->items[id].value = value;
    t->items[id].next = NO_ID;
    if (last != NO_ID) {
        t->items[last].next = id;
        t->len++;
        return id;
    }
    /* The first record at this offset (in neither part: first_at looked). */
    if ((offset >= 0 && (uint64_t)offset < t->dense_len) || dense_cover(t, offset)) {
        t->dense[offset] = id;
    } else {
        uint32_t slot = offset_slot(t, offset);
        t->offsets[slot] = offset;
        t->firsts[slot] = id;
        if ((uint64_t)++t->used * 2 > (uint64_t)t->mask + 1 && !records_rehash(t)) return NO_ID;
    }
    t->len++;
    return id;
}
