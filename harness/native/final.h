/* final.jsonl read into per-partition tables, with no Python object: what
 * the exact reader, harness/rundir/final_reader.py, builds (the reference for every rule here). */
#ifndef FENCEPOST_FINAL_H
#define FENCEPOST_FINAL_H

#include <stdint.h>

#include "arena.h"
#include "mapped.h"
#include "tables.h"

typedef struct {
    uint32_t node; /* string id */
    VEC(uint32_t) records; /* record ids, in file order */
} ReplicaLog;

typedef struct {
    uint32_t node;
    int64_t log_end_offset, high_watermark, leader_epoch;
    uint8_t has_epoch;
    uint32_t epochs_first, epochs_count; /* in FinalTable.epochs */
} StateRec;

typedef struct {
    uint32_t topic;
    int64_t number;
    uint8_t has_reads;
    int8_t complete; /* -1: no read-state line; else every one's `complete`, and-ed */
    VEC(uint32_t) reads;   /* record ids of the final read, in file order */
    VEC(ReplicaLog) replicas; /* in order of each node's first record */
    VEC(StateRec) states;     /* in order of each node's first state; a later one replaces it */
    RecordTable seen;         /* each distinct record of the read and the replicas */
} FinalPartition;

typedef struct {
    Mapped file;
    Arena arena;
    StrTab strings; /* topics and nodes (values are kept as spans) */
    PairMap keys; /* (topic string id, partition) -> index in `partitions` */
    VEC(FinalPartition) partitions;
    VEC(IntPair) epochs;
    int64_t lines;
    char why[160];
} FinalTable;

/* Read `path` into `t`: 0 when read, 1 when it gave up (t->why says why;
 * the table must still be freed). Touches no Python object. */
int final_read(FinalTable *t, const char *path);
void final_free(FinalTable *t);

#endif
