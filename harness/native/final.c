#include "final.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line, every field the exact reader (harness/rundir/final_reader.py) reads checked for shape. */
typedef struct {
    Span kind, topic, value, node;
    int64_t partition, offset, leader_epoch, log_end_offset, high_watermark;
    uint8_t has_offset, has_value, has_epoch, has_node, has_complete, complete, has_leo, has_hw;
    uint32_t epochs_first, epochs_count;
} Entry;

static int give_up(FinalTable *t, int64_t line, const char *fmt, ...) {
    int n = snprintf(t->why, sizeof t->why, "line %lld: ", (long long)line + 1);
    va_list args;
    va_start(args, fmt);
    if (n > 0 && (size_t)n < sizeof t->why) vsnprintf(t->why + n, sizeof t->why - n, fmt, args);
    va_end(args);
    return 1;
}

#define FIELD(bit) do { if (seen & (bit)) return give_up(t, line, "a field given twice"); seen |= (bit); } while (0)
#define OPTIONAL(has, scan) (scan_null(c) ? SCAN_OK : ((has) = 1, (scan)))

static int parse_epochs(FinalTable *t, Cursor *c, Entry *e) {
    if (!scan_take(c, '[')) return SCAN_GIVE_UP;
    e->epochs_first = (uint32_t)t->epochs.len;
    int first = 1, more;
    while ((more = scan_element(c, &first)) == 1) {
        IntPair pair;
        if (!scan_take(c, '[') || scan_int64(c, &pair.a) || !scan_take(c, ',') || scan_int64(c, &pair.b)
                || !scan_take(c, ']') || !vec_push(&t->epochs, pair))
            return SCAN_GIVE_UP;
    }
    e->epochs_count = (uint32_t)(t->epochs.len - e->epochs_first);
    return more == 0 ? SCAN_OK : SCAN_GIVE_UP;
}

static int parse_entry(FinalTable *t, int64_t line, Cursor *c, Entry *e) {
    memset(e, 0, sizeof *e);
    if (!scan_take(c, '{')) return give_up(t, line, "not a JSON object");
    unsigned seen = 0;
    int first = 1, more;
    Span key;
    while ((more = scan_member(c, &first, &key)) == 1) {
        int bad;
        int flag = 0;
        if (span_is(key, "kind")) {
            FIELD(1);
            bad = scan_string(c, &e->kind);
        } else if (span_is(key, "topic")) {
            FIELD(2);
            bad = scan_string(c, &e->topic);
        } else if (span_is(key, "partition")) {
            FIELD(4);
            bad = scan_int64(c, &e->partition);
        } else if (span_is(key, "offset")) {
            FIELD(8);
            bad = OPTIONAL(e->has_offset, scan_int64(c, &e->offset));
        } else if (span_is(key, "value")) {
            FIELD(16);
            bad = OPTIONAL(e->has_value, scan_string(c, &e->value));
        } else if (span_is(key, "leader_epoch")) {
            FIELD(32);
            bad = OPTIONAL(e->has_epoch, scan_int64(c, &e->leader_epoch));
        } else if (span_is(key, "node")) {
            FIELD(64);
            bad = OPTIONAL(e->has_node, scan_string(c, &e->node));
        } else if (span_is(key, "complete")) {
            FIELD(128);
            bad = OPTIONAL(e->has_complete, scan_bool(c, &flag));
            e->complete = e->has_complete && flag;
        } else if (span_is(key, "log_end_offset")) {
            FIELD(256);
            bad = OPTIONAL(e->has_leo, scan_int64(c, &e->log_end_offset));
        } else if (span_is(key, "high_watermark")) {
            FIELD(512);
            bad = OPTIONAL(e->has_hw, scan_int64(c, &e->high_watermark));
        } else if (span_is(key, "epochs")) {
            FIELD(1024);
            bad = parse_epochs(t, c, e); /* null is an error the exact reader reports */
        } else {
            bad = scan_skip(c, 1);
        }
        if (bad) return give_up(t, line, "a field of another shape");
    }
    if (more != 0) return give_up(t, line, "a malformed object");
    scan_ws(c);
    if (c->p != c->end) return give_up(t, line, "more after the object");
    if ((seen & 7) != 7) return give_up(t, line, "kind, topic or partition missing");
    return 0;
}

static FinalPartition *partition_of(FinalTable *t, uint32_t topic, int64_t number) {
    int added;
    uint32_t id = pairmap_intern(&t->keys, topic, number, &added);
    if (id == NO_ID) return NULL;
    if (added) {
        FinalPartition p;
        memset(&p, 0, sizeof p);
        p.topic = topic;
        p.number = number;
        p.complete = -1;
        if (!records_init(&p.seen) || !vec_push(&t->partitions, p)) return NULL;
    }
    return &t->partitions.items[id];
}

/* The ids interned last: most lines repeat them. */
typedef struct {
    uint32_t topic, node;
} Hot;

static int apply_entry(FinalTable *t, int64_t line, const Entry *e, Hot *hot) {
    uint32_t topic = strtab_intern_hot(&t->strings, e->topic, &hot->topic);
    FinalPartition *p = topic == NO_ID ? NULL : partition_of(t, topic, e->partition);
    if (p == NULL) return give_up(t, line, "out of memory");
    int is_read = span_is(e->kind, "read");
    if (is_read || span_is(e->kind, "replica")) {
        if (!e->has_offset || !e->has_value) return give_up(t, line, "a record without offset or value");
        if (e->offset < 0) return give_up(t, line, "a negative offset");
        uint32_t pair = records_intern(&p->seen, e->offset, e->value);
        if (pair == NO_ID) return give_up(t, line, "out of memory");
        if (is_read) {
            p->has_reads = 1;
            return vec_push(&p->reads, pair) ? 0 : give_up(t, line, "out of memory");
        }
        if (!e->has_node) return give_up(t, line, "a replica record without its node");
        uint32_t node = strtab_intern_hot(&t->strings, e->node, &hot->node);
        if (node == NO_ID) return give_up(t, line, "out of memory");
        ReplicaLog *log = NULL;
        for (size_t i = p->replicas.len; i-- > 0 && log == NULL;)
            if (p->replicas.items[i].node == node) log = &p->replicas.items[i];
        if (log == NULL) {
            ReplicaLog fresh;
            memset(&fresh, 0, sizeof fresh);
            fresh.node = node;
            if (!vec_push(&p->replicas, fresh)) return give_up(t, line, "out of memory");
            log = &p->replicas.items[p->replicas.len - 1];
        }
        return vec_push(&log->records, pair) ? 0 : give_up(t, line, "out of memory");
    }
    if (span_is(e->kind, "read-state")) {
        if (!e->has_complete) return give_up(t, line, "a read-state without complete");
        p->complete = (int8_t)(p->complete == -1 ? e->complete : (p->complete && e->complete));
        return 0;
    }
    if (span_is(e->kind, "replica-state")) {
        if (!e->has_node || !e->has_leo || !e->has_hw)
            return give_up(t, line, "a replica-state without node, log_end_offset or high_watermark");
        uint32_t node = strtab_intern_hot(&t->strings, e->node, &hot->node);
        if (node == NO_ID) return give_up(t, line, "out of memory");
        StateRec s = {node, e->log_end_offset, e->high_watermark, e->has_epoch ? e->leader_epoch : 0,
                      e->has_epoch, e->epochs_first, e->epochs_count};
        for (size_t i = 0; i < p->states.len; i++) {
            if (p->states.items[i].node == node) {
                p->states.items[i] = s;
                return 0;
            }
        }
        return vec_push(&p->states, s) ? 0 : give_up(t, line, "out of memory");
    }
    return give_up(t, line, "an unknown kind");
}

int final_read(FinalTable *t, const char *path) {
    memset(t, 0, sizeof *t);
    if (!strtab_init(&t->strings) || !pairmap_init(&t->keys)) {
        snprintf(t->why, sizeof t->why, "out of memory");
        return 1;
    }
    int err = mapped_open(&t->file, path);
    if (err) {
        snprintf(t->why, sizeof t->why, "cannot read it: %s", strerror(err));
        return 1;
    }
    const char *p = t->file.data;
    const char *end = p + t->file.size;
    int64_t line = 0;
    Entry e;
    Hot hot = {NO_ID, NO_ID};
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) return give_up(t, line, "a last line without its newline (torn)");
        Cursor c = {p, nl, &t->arena};
        if (parse_entry(t, line, &c, &e) || apply_entry(t, line, &e, &hot)) return 1;
        line++;
        p = nl + 1;
    }
    t->lines = line;
    return 0;
}

void final_free(FinalTable *t) {
    for (size_t i = 0; i < t->partitions.len; i++) {
        FinalPartition *p = &t->partitions.items[i];
        vec_free(&p->reads);
        for (size_t j = 0; j < p->replicas.len; j++) vec_free(&p->replicas.items[j].records);
        vec_free(&p->replicas);
        vec_free(&p->states);
        records_free(&p->seen);
    }
    vec_free(&t->partitions);
    vec_free(&t->epochs);
    strtab_free(&t->strings);
    arena_free(&t->arena);
    mapped_close(&t->file);
}
