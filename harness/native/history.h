/* history.jsonl read into per-partition tables of sends and polls, with no
 * Python object: what the exact reader (harness/rundir/history.py, loading.group_operations) builds, as plain C records.
 * The rules are that module's (it is the reference): sends placed in their
 * partition at their invoke, polls projected at their completion onto the
 * partitions they returned records of and those their process was assigned,
 * resets for assign/subscribe/crash, invokes never completed left `info`. */
#ifndef FENCEPOST_HISTORY_H
#define FENCEPOST_HISTORY_H

#include <stdint.h>

#include "arena.h"
#include "mapped.h"
#include "tables.h"

enum { OUTCOME_OK = 0, OUTCOME_FAIL = 1, OUTCOME_INFO = 2 };
enum { TYPE_INVOKE = 0, TYPE_OK = 1, TYPE_FAIL = 2, TYPE_INFO = 3 };
enum { F_SEND, F_POLL, F_ASSIGN, F_SUBSCRIBE, F_CRASH, F_OTHER };

typedef struct {
    int64_t process, invoke_index, invoke_time, complete_index, complete_time, offset, leader_epoch;
    Span value;
    uint32_t error; /* string id, or NO_ID */
    uint8_t outcome, completed, has_offset, has_epoch;
} SendRec;

typedef struct {
    int64_t process, invoke_index, invoke_time, complete_index, complete_time;
    uint32_t first_record, records; /* a stretch of the partition's `records` */
    uint32_t error;
    uint8_t outcome, completed;
} PollRec;

typedef struct {
    uint32_t topic; /* string id */
    int64_t number;
    VEC(SendRec) sends;  /* in invoke order */
    VEC(PollRec) polls;  /* in invoke order once read */
    VEC(uint32_t) records; /* record ids: the polls' records, one stretch each */
    RecordTable seen;    /* each distinct record the polls returned */
} HistPartition;

typedef struct {
    int64_t process, index, time;
    uint8_t f;
} ResetRec;

typedef struct {
    Mapped file;
    Arena arena;
    StrTab strings; /* topics, f names, errors (values are kept as spans) */
    PairMap keys; /* (topic string id, partition) -> index in `partitions` */
    VEC(HistPartition) partitions;
    VEC(ResetRec) resets;  /* in invoke order once read */
    PairMap f_types;       /* (f string id, type) -> index in `f_type_counts` */
    VEC(int64_t) f_type_counts;
    int64_t lines, nemesis;
    char why[160]; /* why the reader gave up, when it did */
} HistTable;

/* Read `path` into `t`: 0 when read, 1 when it gave up (t->why says why;
 * the table must still be freed). Touches no Python object. */
int history_read(HistTable *t, const char *path);
void history_free(HistTable *t);

#endif
