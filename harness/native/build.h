/* One partition's Python objects from the native tables: its sends and polls
 * (checkers.partition.Send / Poll), its final read, replica logs and replica
 * states. Each distinct value string and (offset, value) record is made once,
 * and the history's records are the final read's objects where they are
 * equal; objects are made partition by partition, so one partition's lie
 * together in memory (what harness/check/loading.fresh_copy makes by copying). */
#ifndef FENCEPOST_BUILD_H
#define FENCEPOST_BUILD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "final.h"
#include "history.h"

typedef struct {
    PyObject *ok, *fail, *info;         /* the outcome strings */
    PyObject *send_type, *poll_type;    /* the classes to make */
} BuildContext;

/* (sends, polls, final read or None, {node: records}, [(node, leo, hw, epoch, epochs)])
 * of partition `h_index` of `history` and `f_index` of `final` (either may be
 * NULL / -1); NULL with an exception set on failure. */
PyObject *build_partition(const BuildContext *ctx, const HistTable *history, Py_ssize_t h_index,
                          const FinalTable *final, Py_ssize_t f_index);

/* A Python str of the ASCII bytes of `s`. */
PyObject *span_str(Span s);

#endif
