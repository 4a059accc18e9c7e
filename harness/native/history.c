#include "history.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An operation invoked and not yet completed, of one client process. */
typedef struct {
    uint8_t active, f;
    int64_t index, time;
    uint32_t partition, send;   /* a send: where it was placed */
    uint32_t topic;             /* a send: its invoke's value, to match the completion */
    Span value;
    int64_t number;
    uint32_t keys_first, keys_count; /* an assign: its partitions in Reader.assign_keys */
} Pending;

typedef struct {
    Pending pending;
    uint8_t has_assigned;
    uint32_t assigned_first, assigned_count; /* its latest assign, in Reader.assigned */
} Process;

/* What a line's value holds, of the fields the rules read. */
typedef struct {
    uint8_t present; /* an object (not null, not absent) */
    uint8_t has_topic, has_partition, has_value, has_offset, has_epoch, has_records, has_partitions;
    uint8_t from_ok; /* `from` absent, null, "beginning" or an object */
    uint32_t topic;
    Span value;
    int64_t partition, offset, leader_epoch;
    uint32_t keys_first, keys_count; /* `partitions`, when kept, in Reader.assign_keys */
} Value;

typedef struct {
    int64_t index, time, process;
    uint8_t is_nemesis, type, f_kind, value_parsed;
    uint32_t f; /* string id */
    const char *value_at; /* NULL when absent */
    uint8_t has_error;
    uint32_t error;
    Value value;
} Line;

/* What to do with a value's `records` and `partitions`. */
enum { KEEP_NONE = 0, KEEP_RECORDS = 1, KEEP_PARTITIONS = 2 };

typedef struct {
    HistTable *t;
    PairMap process_ids; /* (process, 0) -> index in `processes` */
    VEC(Process) processes;
    VEC(int64_t) process_numbers;
    VEC(IntPair) assign_keys; /* (topic id, partition) of assign invokes */
    VEC(uint32_t) assigned;   /* partition indices of completed assigns */
    /* the records of the poll being read: pair id and group, one each */
    VEC(uint32_t) scratch_pairs;
    VEC(uint32_t) scratch_groups;
    VEC(uint32_t) groups;       /* group -> partition index, in order of first record */
    VEC(uint32_t) group_counts;
    VEC(uint32_t) placed;       /* partitions a poll was projected onto */
    uint32_t f_ids[5];          /* string ids of the client fs */
    uint32_t hot_topic, hot_error; /* the ids interned last (most lines repeat them) */
    int64_t line;
} Reader;

static int give_up(Reader *r, const char *fmt, ...) {
    int n = snprintf(r->t->why, sizeof r->t->why, "line %lld: ", (long long)r->line + 1);
    va_list args;
    va_start(args, fmt);
    if (n > 0 && (size_t)n < sizeof r->t->why) vsnprintf(r->t->why + n, sizeof r->t->why - n, fmt, args);
    va_end(args);
    return 1;
}

static int out_of_memory(Reader *r) {
    return give_up(r, "out of memory");
}

static uint32_t intern_topic(Reader *r, Span s) {
    return strtab_intern_hot(&r->t->strings, s, &r->hot_topic);
}

/* The index of partition (topic, number), created when new; NO_ID when out of memory. */
static uint32_t partition_of(Reader *r, uint32_t topic, int64_t number) {
    HistTable *t = r->t;
    int added;
    uint32_t id = pairmap_intern(&t->keys, topic, number, &added);
    if (id == NO_ID || !added) return id;
    HistPartition p;
    memset(&p, 0, sizeof p);
    p.topic = topic;
    p.number = number;
    if (!records_init(&p.seen) || !vec_push(&t->partitions, p)) return NO_ID;
    return id;
}

static Process *process_of(Reader *r, int64_t number) {
    int added;
    uint32_t id = pairmap_intern(&r->process_ids, number, 0, &added);
    if (id == NO_ID) return NULL;
    if (added) {
        Process p;
        memset(&p, 0, sizeof p);
        if (!vec_push(&r->processes, p) || !vec_push(&r->process_numbers, number)) return NULL;
    }
    return &r->processes.items[id];
}

static int count_line(Reader *r, uint32_t f, int type) {
    HistTable *t = r->t;
    int added;
    uint32_t id = pairmap_intern(&t->f_types, f, type, &added);
    if (id == NO_ID || (added && !vec_push(&t->f_type_counts, 0))) return out_of_memory(r);
    t->f_type_counts.items[id]++;
    return 0;
}

/* --- values ----------------------------------------------------------------- */

#define FIELD(bit) do { if (seen & (bit)) return give_up(r, "a field given twice"); seen |= (bit); } while (0)

/* One poll record: kept (grouped by partition) or only checked. */
static int parse_record(Reader *r, Cursor *c, int keep) {
    if (!scan_take(c, '{')) return give_up(r, "a record that is not an object");
    unsigned seen = 0;
    Span topic = {0}, value = {0};
    int64_t partition = 0, offset = 0, epoch = 0;
    int first = 1, more;
    Span key;
    while ((more = scan_member(c, &first, &key)) == 1) {
        int bad;
        if (span_is(key, "topic")) {
            FIELD(1);
            bad = scan_string(c, &topic);
        } else if (span_is(key, "partition")) {
            FIELD(2);
            bad = scan_int64(c, &partition);
        } else if (span_is(key, "offset")) {
            FIELD(4);
            bad = scan_int64(c, &offset);
        } else if (span_is(key, "value")) {
            FIELD(8);
            bad = scan_string(c, &value);
        } else if (span_is(key, "leader_epoch")) {
            FIELD(16);
            bad = scan_null(c) ? SCAN_OK : scan_int64(c, &epoch);
        } else {
            bad = scan_skip(c, 2);
        }
        if (bad) return give_up(r, "a record field of another shape");
    }
    if (more != 0 || (seen & 15) != 15) return give_up(r, "a record without its fields");
    if (offset < 0) return give_up(r, "a negative offset");
    if (!keep) return 0;
    uint32_t topic_id = intern_topic(r, topic);
    if (topic_id == NO_ID) return out_of_memory(r);
    uint32_t part = partition_of(r, topic_id, partition);
    if (part == NO_ID) return out_of_memory(r);
    uint32_t pair = records_intern(&r->t->partitions.items[part].seen, offset, value);
    if (pair == NO_ID) return out_of_memory(r);
    /* Records come in runs of one partition: the last group first. */
    uint32_t group = NO_ID;
    size_t n = r->groups.len;
    if (n && r->groups.items[n - 1] == part) {
        group = (uint32_t)(n - 1);
    } else {
        for (size_t g = 0; g < n; g++)
            if (r->groups.items[g] == part) group = (uint32_t)g;
        if (group == NO_ID) {
            group = (uint32_t)n;
            if (!vec_push(&r->groups, part) || !vec_push(&r->group_counts, 0)) return out_of_memory(r);
        }
    }
    r->group_counts.items[group]++;
    if (!vec_push(&r->scratch_pairs, pair) || !vec_push(&r->scratch_groups, group)) return out_of_memory(r);
    return 0;
}

static int parse_records(Reader *r, Cursor *c, int keep) {
    if (!scan_take(c, '[')) return give_up(r, "records that are not a list");
    int first = 1, more;
    while ((more = scan_element(c, &first)) == 1)
        if (parse_record(r, c, keep)) return 1;
    return more == 0 ? 0 : give_up(r, "a malformed list of records");
}

/* An assign's partitions: a list of [topic, partition] pairs. */
static int parse_partitions(Reader *r, Cursor *c, Value *v, int keep) {
    if (!scan_take(c, '[')) return give_up(r, "partitions that are not a list");
    v->keys_first = (uint32_t)r->assign_keys.len;
    int first = 1, more;
    while ((more = scan_element(c, &first)) == 1) {
        Span topic;
        int64_t number;
        if (!scan_take(c, '[') || scan_string(c, &topic) || !scan_take(c, ',') || scan_int64(c, &number)
                || !scan_take(c, ']'))
            return give_up(r, "a partition that is not [topic, number]");
        if (keep) {
            uint32_t topic_id = intern_topic(r, topic);
            IntPair key = {topic_id, number};
            if (topic_id == NO_ID || !vec_push(&r->assign_keys, key)) return out_of_memory(r);
        }
    }
    if (more != 0) return give_up(r, "a malformed list of partitions");
    v->keys_count = (uint32_t)(r->assign_keys.len - v->keys_first);
    return 0;
}

/* A client value with every field the exact reader (harness/rundir/history.py) reads checked for shape. */
static int parse_value(Reader *r, Cursor *c, Value *v, int keep) {
    memset(v, 0, sizeof *v);
    v->from_ok = 1;
    if (scan_null(c)) return 0;
    if (!scan_take(c, '{')) return give_up(r, "a value that is not an object");
    v->present = 1;
    unsigned seen = 0;
    int first = 1, more;
    Span key, s;
    while ((more = scan_member(c, &first, &key)) == 1) {
        int bad = SCAN_OK;
        if (span_is(key, "topic")) {
            FIELD(1);
            if (!scan_null(c) && !(bad = scan_string(c, &s))) {
                v->has_topic = 1;
                if ((v->topic = intern_topic(r, s)) == NO_ID) return out_of_memory(r);
            }
        } else if (span_is(key, "partition")) {
            FIELD(2);
            if (!scan_null(c) && !(bad = scan_int64(c, &v->partition))) v->has_partition = 1;
        } else if (span_is(key, "value")) {
            FIELD(4);
            if (!scan_null(c) && !(bad = scan_string(c, &v->value))) v->has_value = 1;
        } else if (span_is(key, "offset")) {
            FIELD(8);
            if (!scan_null(c) && !(bad = scan_int64(c, &v->offset))) v->has_offset = 1;
        } else if (span_is(key, "leader_epoch")) {
            FIELD(16);
            if (!scan_null(c) && !(bad = scan_int64(c, &v->leader_epoch))) v->has_epoch = 1;
        } else if (span_is(key, "records")) {
            FIELD(32);
            if (!scan_null(c)) {
                if (parse_records(r, c, keep & KEEP_RECORDS)) return 1;
                v->has_records = 1;
            }
        } else if (span_is(key, "partitions")) {
            FIELD(64);
            if (!scan_null(c)) {
                if (parse_partitions(r, c, v, keep & KEEP_PARTITIONS)) return 1;
                v->has_partitions = 1;
            }
        } else if (span_is(key, "from")) {
            FIELD(128);
            int ch = scan_peek(c);
            if (ch == '"') {
                bad = scan_string(c, &s);
                v->from_ok = !bad && span_is(s, "beginning");
            } else {
                v->from_ok = ch == 'n' || ch == '{';
                bad = scan_skip(c, 1);
            }
        } else if (span_is(key, "group")) {
            /* a consumer group member's commit or resume: the Python readers build those */
            return give_up(r, "a consumer group's value (left to the Python readers)");
        } else {
            bad = scan_skip(c, 1);
        }
        if (bad) return give_up(r, "a value field of another shape");
    }
    return more == 0 ? 0 : give_up(r, "a malformed value");
}

/* How a client line's value is read: its shape checked where the rules read
 * it (the exact reader ignores it), else only checked to be JSON. */
static int read_value(Reader *r, Cursor *c, Line *l) {
    l->value_parsed = 1;
    if (l->is_nemesis) return scan_skip(c, 1) ? give_up(r, "a malformed value") : 0;
    switch (l->f_kind) {
    case F_SEND:
        return parse_value(r, c, &l->value, KEEP_NONE);
    case F_POLL:
        if (l->type == TYPE_INVOKE) {
            if (!scan_null(c)) return give_up(r, "a poll invoke with a value");
            memset(&l->value, 0, sizeof l->value);
            return 0;
        }
        if (l->type == TYPE_OK) return parse_value(r, c, &l->value, KEEP_RECORDS);
        break;
    case F_ASSIGN:
        if (l->type == TYPE_INVOKE) return parse_value(r, c, &l->value, KEEP_PARTITIONS);
        if (l->type == TYPE_OK) return parse_value(r, c, &l->value, KEEP_NONE);
        break;
    case F_OTHER:
        return give_up(r, "a client f the rules do not know");
    }
    return scan_skip(c, 1) ? give_up(r, "a malformed value") : 0;
}

/* --- lines ------------------------------------------------------------------ */

static const char *const TYPE_NAMES[] = {"invoke", "ok", "fail", "info"};
static const char *const F_NAMES[] = {"send", "poll", "assign", "subscribe", "crash"};

static int parse_line(Reader *r, Cursor *c, Line *l) {
    memset(l, 0, sizeof *l);
    if (!scan_take(c, '{')) return give_up(r, "not a JSON object");
    unsigned seen = 0;
    int first = 1, more;
    Span key, s;
    while ((more = scan_member(c, &first, &key)) == 1) {
        int bad = SCAN_OK;
        if (span_is(key, "index")) {
            FIELD(1);
            bad = scan_int64(c, &l->index);
        } else if (span_is(key, "time")) {
            FIELD(2);
            bad = scan_int64(c, &l->time);
        } else if (span_is(key, "process")) {
            FIELD(4);
            if (scan_peek(c) == '"') {
                bad = scan_string(c, &s);
                if (!bad && !span_is(s, "nemesis")) return give_up(r, "a process that is neither a number nor nemesis");
                l->is_nemesis = 1;
            } else {
                bad = scan_int64(c, &l->process);
            }
        } else if (span_is(key, "type")) {
            FIELD(8);
            if (!(bad = scan_string(c, &s))) {
                l->type = 4;
                for (int i = 0; i < 4; i++)
                    if (span_is(s, TYPE_NAMES[i])) l->type = (uint8_t)i;
                if (l->type == 4) return give_up(r, "an unknown type");
            }
        } else if (span_is(key, "f")) {
            FIELD(16);
            if (!(bad = scan_string(c, &s))) {
                l->f_kind = F_OTHER;
                for (int i = 0; i < 5 && l->f_kind == F_OTHER; i++)
                    if (span_is(s, F_NAMES[i])) l->f_kind = (uint8_t)i;
                l->f = l->f_kind == F_OTHER ? strtab_intern(&r->t->strings, s) : r->f_ids[l->f_kind];
                if (l->f == NO_ID) return out_of_memory(r);
            }
        } else if (span_is(key, "value")) {
            FIELD(32);
            scan_ws(c);
            l->value_at = c->p;
            if ((seen & 28) == 28) { /* process, type and f known: read it now */
                if (read_value(r, c, l)) return 1;
            } else {
                bad = scan_skip(c, 1);
            }
        } else if (span_is(key, "error")) {
            FIELD(64);
            if (!scan_null(c) && !(bad = scan_string(c, &s))) {
                l->has_error = 1;
                if ((l->error = strtab_intern_hot(&r->t->strings, s, &r->hot_error)) == NO_ID)
                    return out_of_memory(r);
            }
        } else {
            bad = scan_skip(c, 1);
        }
        if (bad) return give_up(r, "a field of another shape");
    }
    if (more != 0) return give_up(r, "a malformed object");
    scan_ws(c);
    if (c->p != c->end) return give_up(r, "more after the object");
    if ((seen & 31) != 31) return give_up(r, "a required field missing");
    if (l->index != r->line) return give_up(r, "an index that is not the line number");
    if (l->time < 0) return give_up(r, "a negative time");
    if (!l->value_parsed) {
        if (l->value_at != NULL) {
            Cursor again = {l->value_at, c->end, c->arena};
            if (read_value(r, &again, l)) return 1;
        } else if (!l->is_nemesis && l->f_kind == F_OTHER) {
            return give_up(r, "a client f the rules do not know");
        } else {
            memset(&l->value, 0, sizeof l->value);
            l->value.from_ok = 1;
        }
    }
    return 0;
}

/* --- the rules -------------------------------------------------------------- */

static int push_poll(Reader *r, uint32_t part, int64_t process, const Pending *p, int outcome,
                     const Line *done, uint32_t first_record, uint32_t records) {
    PollRec rec;
    rec.process = process;
    rec.invoke_index = p->index;
    rec.invoke_time = p->time;
    rec.completed = done != NULL;
    rec.complete_index = done ? done->index : 0;
    rec.complete_time = done ? done->time : 0;
    rec.error = done && done->has_error ? done->error : NO_ID;
    rec.outcome = (uint8_t)outcome;
    rec.first_record = first_record;
    rec.records = records;
    return vec_push(&r->t->partitions.items[part].polls, rec) ? 0 : out_of_memory(r);
}

/* What harness/check/loading.py's group_operations does with a paired poll, assign, subscribe or
 * crash; `done` is the completing line (NULL: never completed), and an ok
 * poll's records are in the scratch lists. */
static int finish(Reader *r, int64_t number, Process *proc, int outcome, const Line *done) {
    HistTable *t = r->t;
    Pending *p = &proc->pending;
    p->active = 0;
    if (p->f == F_POLL) {
        size_t groups = r->groups.len;
        r->placed.len = 0;
        /* Each group's records into its partition, in the order returned:
         * group_counts becomes each group's next slot. */
        for (size_t g = 0; g < groups; g++) {
            HistPartition *part = &t->partitions.items[r->groups.items[g]];
            uint32_t count = r->group_counts.items[g];
            if (!vec_reserve(&part->records, part->records.len + count)
                    || push_poll(r, r->groups.items[g], number, p, outcome, done,
                                 (uint32_t)part->records.len, count)
                    || !vec_push(&r->placed, r->groups.items[g]))
                return out_of_memory(r);
            r->group_counts.items[g] = (uint32_t)part->records.len;
            part->records.len += count;
        }
        for (size_t i = 0; i < r->scratch_pairs.len; i++) {
            uint32_t g = r->scratch_groups.items[i];
            t->partitions.items[r->groups.items[g]].records.items[r->group_counts.items[g]++] =
                r->scratch_pairs.items[i];
        }
        if (proc->has_assigned) {
            for (uint32_t k = 0; k < proc->assigned_count; k++) {
                uint32_t part = r->assigned.items[proc->assigned_first + k];
                int found = 0;
                for (size_t j = 0; j < r->placed.len && !found; j++) found = r->placed.items[j] == part;
                if (found) continue;
                if (push_poll(r, part, number, p, outcome, done, 0, 0) || !vec_push(&r->placed, part))
                    return out_of_memory(r);
            }
        }
        r->scratch_pairs.len = r->scratch_groups.len = r->groups.len = r->group_counts.len = 0;
        return 0;
    }
    ResetRec reset = {number, p->index, p->time, p->f};
    if (!vec_push(&t->resets, reset)) return out_of_memory(r);
    if (p->f == F_ASSIGN && outcome != OUTCOME_FAIL) {
        uint32_t first = (uint32_t)r->assigned.len;
        for (uint32_t k = 0; k < p->keys_count; k++) {
            IntPair key = r->assign_keys.items[p->keys_first + k];
            uint32_t part = partition_of(r, (uint32_t)key.a, key.b);
            if (part == NO_ID || !vec_push(&r->assigned, part)) return out_of_memory(r);
        }
        proc->has_assigned = 1;
        proc->assigned_first = first;
        proc->assigned_count = p->keys_count;
    } else if (p->f != F_ASSIGN) {
        proc->has_assigned = 0;
    }
    return 0;
}

static const int OUTCOME_OF_TYPE[] = {OUTCOME_INFO, OUTCOME_OK, OUTCOME_FAIL, OUTCOME_INFO};

static int apply_send(Reader *r, Process *proc, const Line *l) {
    const Value *v = &l->value;
    if (!v->present || !v->has_topic || !v->has_partition || !v->has_value)
        return give_up(r, "a send without topic, partition or value");
    HistTable *t = r->t;
    Pending *p = &proc->pending;
    if (l->type == TYPE_INVOKE) {
        if (p->active) return give_up(r, "an invoke while another is pending");
        uint32_t part = partition_of(r, v->topic, v->partition);
        if (part == NO_ID) return out_of_memory(r);
        SendRec s;
        memset(&s, 0, sizeof s);
        s.process = l->process;
        s.value = v->value;
        s.outcome = OUTCOME_INFO;
        s.invoke_index = l->index;
        s.invoke_time = l->time;
        s.error = NO_ID;
        HistPartition *hp = &t->partitions.items[part];
        if (!vec_push(&hp->sends, s)) return out_of_memory(r);
        memset(p, 0, sizeof *p);
        p->active = 1;
        p->f = F_SEND;
        p->index = l->index;
        p->time = l->time;
        p->partition = part;
        p->send = (uint32_t)(hp->sends.len - 1);
        p->topic = v->topic;
        p->value = v->value;
        p->number = v->partition;
        return 0;
    }
    if (!p->active || p->f != F_SEND) return give_up(r, "a send completion without its invoke");
    if (!span_eq(v->value, p->value) || v->partition != p->number || v->topic != p->topic)
        return give_up(r, "a send completion unlike its invoke");
    SendRec *s = &t->partitions.items[p->partition].sends.items[p->send];
    s->completed = 1;
    s->complete_index = l->index;
    s->complete_time = l->time;
    s->error = l->has_error ? l->error : NO_ID;
    if (l->type == TYPE_OK) {
        if (!v->has_offset) return give_up(r, "an ok send without its offset");
        if (v->offset < 0) return give_up(r, "a negative offset");
        s->outcome = OUTCOME_OK;
        s->offset = v->offset;
        s->has_offset = 1;
        s->has_epoch = v->has_epoch;
        s->leader_epoch = v->leader_epoch;
    } else {
        s->outcome = (uint8_t)OUTCOME_OF_TYPE[l->type];
    }
    p->active = 0;
    return 0;
}

static int apply_other(Reader *r, Process *proc, const Line *l) {
    Pending *p = &proc->pending;
    const Value *v = &l->value;
    if (l->type == TYPE_INVOKE) {
        if (p->active) return give_up(r, "an invoke while another is pending");
        memset(p, 0, sizeof *p);
        if (l->f_kind == F_ASSIGN) {
            if (!v->present || !v->has_partitions || !v->from_ok) return give_up(r, "an assign of another shape");
            p->keys_first = v->keys_first;
            p->keys_count = v->keys_count;
        }
        p->active = 1;
        p->f = l->f_kind;
        p->index = l->index;
        p->time = l->time;
        return 0;
    }
    if (!p->active || p->f != l->f_kind) return give_up(r, "a completion without its invoke");
    if (l->f_kind == F_POLL && l->type == TYPE_OK && (!v->present || !v->has_records))
        return give_up(r, "an ok poll without records");
    if (l->f_kind == F_ASSIGN && l->type == TYPE_OK && (!v->present || !v->has_partitions || !v->from_ok))
        return give_up(r, "an assign of another shape");
    return finish(r, l->process, proc, OUTCOME_OF_TYPE[l->type], l);
}

static int apply_line(Reader *r, const Line *l) {
    if (l->is_nemesis) {
        r->t->nemesis++;
        return count_line(r, l->f, l->type);
    }
    Process *proc = process_of(r, l->process);
    if (proc == NULL) return out_of_memory(r);
    int failed = l->f_kind == F_SEND ? apply_send(r, proc, l) : apply_other(r, proc, l);
    return failed ? 1 : count_line(r, l->f, l->type);
}

static int by_invoke_index(const void *a, const void *b) {
    int64_t x = ((const PollRec *)a)->invoke_index, y = ((const PollRec *)b)->invoke_index;
    return (x > y) - (x < y);
}

static int by_index(const void *a, const void *b) {
    int64_t x = ((const ResetRec *)a)->index, y = ((const ResetRec *)b)->index;
    return (x > y) - (x < y);
}

static int read_lines(Reader *r) {
    HistTable *t = r->t;
    const char *p = t->file.data;
    const char *end = p + t->file.size;
    Line line;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) return give_up(r, "a last line without its newline (torn)");
        Cursor c = {p, nl, &t->arena};
        if (parse_line(r, &c, &line) || apply_line(r, &line)) return 1;
        r->line++;
        p = nl + 1;
    }
    t->lines = r->line;
    for (size_t i = 0; i < r->processes.len; i++) {
        Process *proc = &r->processes.items[i];
        if (proc->pending.active && proc->pending.f != F_SEND
                && finish(r, r->process_numbers.items[i], proc, OUTCOME_INFO, NULL))
            return 1;
    }
    for (size_t i = 0; i < t->partitions.len; i++) {
        HistPartition *hp = &t->partitions.items[i];
        if (hp->polls.len > 1) qsort(hp->polls.items, hp->polls.len, sizeof(PollRec), by_invoke_index);
    }
    if (t->resets.len > 1) qsort(t->resets.items, t->resets.len, sizeof(ResetRec), by_index);
    return 0;
}

int history_read(HistTable *t, const char *path) {
    memset(t, 0, sizeof *t);
    if (!strtab_init(&t->strings) || !pairmap_init(&t->keys) || !pairmap_init(&t->f_types)) {
        snprintf(t->why, sizeof t->why, "out of memory");
        return 1;
    }
    int err = mapped_open(&t->file, path);
    if (err) {
        snprintf(t->why, sizeof t->why, "cannot read it: %s", strerror(err));
        return 1;
    }
    Reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.hot_topic = r.hot_error = NO_ID;
    int failed = 0;
    for (int i = 0; i < 5 && !failed; i++) {
        Span name = {F_NAMES[i], (uint32_t)strlen(F_NAMES[i])};
        failed = (r.f_ids[i] = strtab_intern(&t->strings, name)) == NO_ID;
    }
    if (failed || !pairmap_init(&r.process_ids)) failed = out_of_memory(&r);
    else failed = read_lines(&r);
    pairmap_free(&r.process_ids);
    vec_free(&r.processes);
    vec_free(&r.process_numbers);
    vec_free(&r.assign_keys);
    vec_free(&r.assigned);
    vec_free(&r.scratch_pairs);
    vec_free(&r.scratch_groups);
    vec_free(&r.groups);
    vec_free(&r.group_counts);
    vec_free(&r.placed);
    return failed;
}

void history_free(HistTable *t) {
    for (size_t i = 0; i < t->partitions.len; i++) {
        HistPartition *hp = &t->partitions.items[i];
        vec_free(&hp->sends);
        vec_free(&hp->polls);
        vec_free(&hp->records);
        records_free(&hp->seen);
    }
    vec_free(&t->partitions);
    vec_free(&t->resets);
    vec_free(&t->f_type_counts);
    pairmap_free(&t->f_types);
    pairmap_free(&t->keys);
    strtab_free(&t->strings);
    arena_free(&t->arena);
    mapped_close(&t->file);
}
