#include "build.h"

PyObject *span_str(Span s) {
    /* The readers keep only ASCII (they give up on anything else). */
    PyObject *out = PyUnicode_New((Py_ssize_t)s.len, 127);
    if (out != NULL) memcpy(PyUnicode_DATA(out), s.ptr, s.len);
    return out;
}

/* The caches of one build: the tables' few interned strings by id, and
 * records by id. */
typedef struct {
    const HistTable *h;
    const FinalTable *f;
    const HistPartition *hp;
    const FinalPartition *fp;
    PyObject **hstr, **fstr; /* string id -> str */
    PyObject **htup, **ftup; /* record id -> (offset, value) */
} Build;

static PyObject *interned(PyObject **cache, const StrTab *strings, uint32_t id) {
    if (cache[id] == NULL) cache[id] = span_str(strings->spans[id]);
    return cache[id];
}

static PyObject *record(int64_t offset, PyObject *value) {
    if (value == NULL) return NULL;
    PyObject *o = PyLong_FromLongLong(offset);
    if (o == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    PyObject *t = PyTuple_New(2);
    if (t == NULL) {
        Py_DECREF(o);
        Py_DECREF(value);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, o);
    PyTuple_SET_ITEM(t, 1, value); /* stolen */
    return t;
}

static PyObject *final_record(Build *b, uint32_t id) {
    if (b->ftup[id] == NULL) {
        const Record *r = &b->fp->seen.items[id];
        b->ftup[id] = record(r->offset, span_str(r->value));
    }
    return b->ftup[id];
}

/* A polled record: the final read's own object where it holds the same. */
static PyObject *history_record(Build *b, uint32_t id) {
    if (b->htup[id] == NULL) {
        const Record *r = &b->hp->seen.items[id];
        uint32_t same = b->fp ? records_find(&b->fp->seen, r->offset, r->value) : NO_ID;
        if (same != NO_ID) {
            PyObject *shared = final_record(b, same);
            Py_XINCREF(shared);
            b->htup[id] = shared;
        } else {
            b->htup[id] = record(r->offset, span_str(r->value));
        }
    }
    return b->htup[id];
}

/* An acked send's value: the string of the record at its offset where one
 * holds it (the final read's, else a poll's), else a new one. */
static PyObject *send_value(Build *b, const SendRec *s) {
    PyObject *rec = NULL;
    if (s->has_offset) {
        uint32_t id = b->fp ? records_find(&b->fp->seen, s->offset, s->value) : NO_ID;
        if (id != NO_ID) {
            rec = final_record(b, id);
        } else if ((id = records_find(&b->hp->seen, s->offset, s->value)) != NO_ID) {
            rec = history_record(b, id);
        }
        if (rec == NULL && PyErr_Occurred()) return NULL;
    }
    if (rec == NULL) return span_str(s->value);
    PyObject *value = PyTuple_GET_ITEM(rec, 1);
    Py_INCREF(value);
    return value;
}

/* A list of the records `pairs[0..n)`, made by `make`. */
static PyObject *record_list(Build *b, const uint32_t *pairs, size_t n,
                             PyObject *(*make)(Build *, uint32_t)) {
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *r = make(b, pairs[i]);
        if (r == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        Py_INCREF(r);
        PyList_SET_ITEM(list, (Py_ssize_t)i, r);
    }
    return list;
}

static PyObject *int_or_none(int has, int64_t v) {
    if (has) return PyLong_FromLongLong(v);
    Py_RETURN_NONE;
}

static PyObject *outcome(const BuildContext *ctx, int o) {
    PyObject *s = o == OUTCOME_OK ? ctx->ok : o == OUTCOME_FAIL ? ctx->fail : ctx->info;
    Py_INCREF(s);
    return s;
}

static PyObject *error_str(Build *b, uint32_t id) {
    if (id == NO_ID) Py_RETURN_NONE;
    PyObject *s = interned(b->hstr, &b->h->strings, id);
    Py_XINCREF(s);
    return s;
}

/* Call `type` with the `n` new references in `args`, which it releases. */
static PyObject *make(PyObject *type, PyObject **args, size_t n) {
    PyObject *out = NULL;
    size_t i;
    for (i = 0; i < n; i++)
        if (args[i] == NULL) break;
    if (i == n) out = PyObject_Vectorcall(type, args, n, NULL);
    for (i = 0; i < n; i++) Py_XDECREF(args[i]);
    return out;
}

static PyObject *build_sends(const BuildContext *ctx, Build *b) {
    const HistPartition *hp = b->hp;
    PyObject *list = PyList_New((Py_ssize_t)hp->sends.len);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < hp->sends.len; i++) {
        const SendRec *s = &hp->sends.items[i];
        PyObject *args[10] = {
            PyLong_FromLongLong(s->process), send_value(b, s), outcome(ctx, s->outcome),
            PyLong_FromLongLong(s->invoke_index), PyLong_FromLongLong(s->invoke_time),
            int_or_none(s->completed, s->complete_index), int_or_none(s->completed, s->complete_time),
            int_or_none(s->has_offset, s->offset), int_or_none(s->has_epoch, s->leader_epoch),
            error_str(b, s->error),
        };
        PyObject *send = make(ctx->send_type, args, 10);
        if (send == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, send);
    }
    return list;
}

static PyObject *build_polls(const BuildContext *ctx, Build *b) {
    const HistPartition *hp = b->hp;
    PyObject *list = PyList_New((Py_ssize_t)hp->polls.len);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < hp->polls.len; i++) {
        const PollRec *p = &hp->polls.items[i];
        PyObject *args[8] = {
            PyLong_FromLongLong(p->process), outcome(ctx, p->outcome),
            PyLong_FromLongLong(p->invoke_index), PyLong_FromLongLong(p->invoke_time),
            int_or_none(p->completed, p->complete_index), int_or_none(p->completed, p->complete_time),
            record_list(b, hp->records.items + p->first_record, p->records, history_record),
            error_str(b, p->error),
        };
        PyObject *poll = make(ctx->poll_type, args, 8);
        if (poll == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, poll);
    }
    return list;
}

static PyObject *build_replicas(Build *b) {
    PyObject *replicas = PyDict_New();
    if (replicas == NULL || b->fp == NULL) return replicas;
    for (size_t i = 0; i < b->fp->replicas.len; i++) {
        const ReplicaLog *log = &b->fp->replicas.items[i];
        PyObject *node = interned(b->fstr, &b->f->strings, log->node);
        PyObject *records = node ? record_list(b, log->records.items, log->records.len, final_record) : NULL;
        if (records == NULL || PyDict_SetItem(replicas, node, records) < 0) {
            Py_XDECREF(records);
            Py_DECREF(replicas);
            return NULL;
        }
        Py_DECREF(records);
    }
    return replicas;
}

static PyObject *build_states(Build *b) {
    PyObject *states = PyList_New(0);
    if (states == NULL || b->fp == NULL) return states;
    for (size_t i = 0; i < b->fp->states.len; i++) {
        const StateRec *s = &b->fp->states.items[i];
        PyObject *epochs = PyList_New((Py_ssize_t)s->epochs_count);
        for (uint32_t k = 0; epochs != NULL && k < s->epochs_count; k++) {
            IntPair e = b->f->epochs.items[s->epochs_first + k];
            PyObject *pair = Py_BuildValue("(LL)", (long long)e.a, (long long)e.b);
            if (pair == NULL) Py_CLEAR(epochs);
            else PyList_SET_ITEM(epochs, k, pair);
        }
        PyObject *node = interned(b->fstr, &b->f->strings, s->node);
        PyObject *epoch = int_or_none(s->has_epoch, s->leader_epoch);
        PyObject *state = epochs && node && epoch
            ? Py_BuildValue("(OLLOO)", node, (long long)s->log_end_offset, (long long)s->high_watermark,
                            epoch, epochs)
            : NULL;
        Py_XDECREF(epoch);
        Py_XDECREF(epochs);
        if (state == NULL || PyList_Append(states, state) < 0) {
            Py_XDECREF(state);
            Py_DECREF(states);
            return NULL;
        }
        Py_DECREF(state);
    }
    return states;
}

static void release(PyObject **objects, size_t n) {
    if (objects == NULL) return;
    for (size_t i = 0; i < n; i++) Py_XDECREF(objects[i]);
    free(objects);
}

PyObject *build_partition(const BuildContext *ctx, const HistTable *history, Py_ssize_t h_index,
                          const FinalTable *final, Py_ssize_t f_index) {
    Build b;
    memset(&b, 0, sizeof b);
    b.h = history;
    b.f = final;
    if (history != NULL && h_index >= 0) b.hp = &history->partitions.items[h_index];
    if (final != NULL && f_index >= 0) b.fp = &final->partitions.items[f_index];
    size_t hstrings = history ? history->strings.len : 0;
    size_t fstrings = final ? final->strings.len : 0;
    size_t hrecords = b.hp ? b.hp->seen.len : 0;
    size_t frecords = b.fp ? b.fp->seen.len : 0;
    b.hstr = calloc(hstrings + 1, sizeof(PyObject *));
    b.fstr = calloc(fstrings + 1, sizeof(PyObject *));
    b.htup = calloc(hrecords + 1, sizeof(PyObject *));
    b.ftup = calloc(frecords + 1, sizeof(PyObject *));
    PyObject *result = NULL;
    if (!b.hstr || !b.fstr || !b.htup || !b.ftup) {
        PyErr_NoMemory();
        goto done;
    }
    /* The final read first: its records are the ones the polls share. */
    PyObject *reads = Py_None;
    Py_INCREF(reads);
    if (b.fp && b.fp->has_reads) {
        Py_DECREF(reads);
        reads = record_list(&b, b.fp->reads.items, b.fp->reads.len, final_record);
    }
    PyObject *sends = reads == NULL ? NULL : b.hp ? build_sends(ctx, &b) : PyList_New(0);
    PyObject *polls = sends == NULL ? NULL : b.hp ? build_polls(ctx, &b) : PyList_New(0);
    PyObject *replicas = polls == NULL ? NULL : build_replicas(&b);
    PyObject *states = replicas == NULL ? NULL : build_states(&b);
    if (states != NULL) result = PyTuple_Pack(5, sends, polls, reads, replicas, states);
    Py_XDECREF(reads);
    Py_XDECREF(sends);
    Py_XDECREF(polls);
    Py_XDECREF(replicas);
    Py_XDECREF(states);
done:
    release(b.hstr, hstrings);
    release(b.fstr, fstrings);
    release(b.htup, hrecords);
    release(b.ftup, frecords);
    return result;
}
