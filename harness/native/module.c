/* harness._native: history.jsonl and final.jsonl read in C, with the GIL
 * released (so both files can be read at once by two threads), into tables
 * of plain C records; a partition's Python objects made from them on demand
 * (build). The Python side is harness/check/native_load.py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "build.h"
#include "columns.h"
#include "final.h"
#include "history.h"

typedef struct {
    PyObject_HEAD
    HistTable table;
} HistoryObject;

typedef struct {
    PyObject_HEAD
    FinalTable table;
} FinalObject;

static PyTypeObject HistoryType;
static PyTypeObject FinalType;

/* --- shared ------------------------------------------------------------------ */

static PyObject *key_list(const StrTab *strings, const void *partitions, size_t n, size_t stride,
                          size_t topic_at, size_t number_at) {
    PyObject *keys = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; keys != NULL && i < n; i++) {
        const char *p = (const char *)partitions + i * stride;
        uint32_t topic;
        int64_t number;
        memcpy(&topic, p + topic_at, sizeof topic);
        memcpy(&number, p + number_at, sizeof number);
        PyObject *name = span_str(strings->spans[topic]);
        PyObject *key = name ? Py_BuildValue("(NL)", name, (long long)number) : NULL;
        if (key == NULL) Py_CLEAR(keys);
        else PyList_SET_ITEM(keys, (Py_ssize_t)i, key);
    }
    return keys;
}

/* --- HistoryTable ------------------------------------------------------------ */

static void history_dealloc(HistoryObject *self) {
    history_free(&self->table);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *history_keys(HistoryObject *self, PyObject *unused) {
    return key_list(&self->table.strings, self->table.partitions.items, self->table.partitions.len,
                    sizeof(HistPartition), offsetof(HistPartition, topic), offsetof(HistPartition, number));
}

static PyObject *history_sizes(HistoryObject *self, PyObject *unused) {
    PyObject *sizes = PyList_New((Py_ssize_t)self->table.partitions.len);
    for (size_t i = 0; sizes != NULL && i < self->table.partitions.len; i++) {
        const HistPartition *p = &self->table.partitions.items[i];
        PyObject *pair = Py_BuildValue("(nn)", (Py_ssize_t)p->sends.len, (Py_ssize_t)p->polls.len);
        if (pair == NULL) Py_CLEAR(sizes);
        else PyList_SET_ITEM(sizes, (Py_ssize_t)i, pair);
    }
    return sizes;
}

static const char *const TYPE_STRINGS[] = {"invoke", "ok", "fail", "info"};
static const char *const RESET_FS[] = {"send", "poll", "assign", "subscribe", "crash"};

static PyObject *history_counts(HistoryObject *self, PyObject *unused) {
    const HistTable *t = &self->table;
    PyObject *by = PyList_New((Py_ssize_t)t->f_types.len);
    for (size_t i = 0; by != NULL && i < t->f_types.len; i++) {
        IntPair k = t->f_types.keys[i];
        PyObject *f = span_str(t->strings.spans[k.a]);
        PyObject *row = f ? Py_BuildValue("(NsL)", f, TYPE_STRINGS[k.b], (long long)t->f_type_counts.items[i]) : NULL;
        if (row == NULL) Py_CLEAR(by);
        else PyList_SET_ITEM(by, (Py_ssize_t)i, row);
    }
    if (by == NULL) return NULL;
    return Py_BuildValue("(LLN)", (long long)t->lines, (long long)t->nemesis, by);
}

static PyObject *history_resets(HistoryObject *self, PyObject *reset_type) {
    const HistTable *t = &self->table;
    PyObject *resets = PyList_New((Py_ssize_t)t->resets.len);
    for (size_t i = 0; resets != NULL && i < t->resets.len; i++) {
        const ResetRec *r = &t->resets.items[i];
        PyObject *reset = PyObject_CallFunction(reset_type, "LLLs", (long long)r->process, (long long)r->index,
                                                (long long)r->time, RESET_FS[r->f]);
        if (reset == NULL) Py_CLEAR(resets);
        else PyList_SET_ITEM(resets, (Py_ssize_t)i, reset);
    }
    return resets;
}

static PyMethodDef history_methods[] = {
    {"keys", (PyCFunction)history_keys, METH_NOARGS, "[(topic, partition)] in the table's order."},
    {"sizes", (PyCFunction)history_sizes, METH_NOARGS, "[(sends, polls)] of each partition."},
    {"counts", (PyCFunction)history_counts, METH_NOARGS, "(lines, nemesis ops, [(f, type, n)])."},
    {"resets", (PyCFunction)history_resets, METH_O, "resets(Reset) -> every reset, in invoke order."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject HistoryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "harness._native.HistoryTable",
    .tp_basicsize = sizeof(HistoryObject),
    .tp_dealloc = (destructor)history_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "history.jsonl as read by read_history.",
    .tp_methods = history_methods,
};

/* --- FinalTable -------------------------------------------------------------- */

static void final_dealloc(FinalObject *self) {
    final_free(&self->table);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *final_keys(FinalObject *self, PyObject *unused) {
    return key_list(&self->table.strings, self->table.partitions.items, self->table.partitions.len,
                    sizeof(FinalPartition), offsetof(FinalPartition, topic), offsetof(FinalPartition, number));
}

static PyObject *final_reads(FinalObject *self, PyObject *unused) {
    const FinalTable *t = &self->table;
    PyObject *out = PyList_New((Py_ssize_t)t->partitions.len);
    for (size_t i = 0; out != NULL && i < t->partitions.len; i++) {
        const FinalPartition *p = &t->partitions.items[i];
        PyObject *complete = p->complete < 0 ? Py_None : p->complete ? Py_True : Py_False;
        PyObject *row = Py_BuildValue("(OOn)", p->has_reads ? Py_True : Py_False, complete,
                                      (Py_ssize_t)p->reads.len);
        if (row == NULL) Py_CLEAR(out);
        else PyList_SET_ITEM(out, (Py_ssize_t)i, row);
    }
    return out;
}

static PyObject *final_lines(FinalObject *self, void *unused) {
    return PyLong_FromLongLong(self->table.lines);
}

static PyMethodDef final_methods[] = {
    {"keys", (PyCFunction)final_keys, METH_NOARGS, "[(topic, partition)] in the table's order."},
    {"reads", (PyCFunction)final_reads, METH_NOARGS,
     "[(has a final read, read-state complete: None/True/False, records read)] of each partition."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef final_getset[] = {
    {"lines", (getter)final_lines, NULL, "lines of final.jsonl", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FinalType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "harness._native.FinalTable",
    .tp_basicsize = sizeof(FinalObject),
    .tp_dealloc = (destructor)final_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "final.jsonl as read by read_final.",
    .tp_methods = final_methods,
    .tp_getset = final_getset,
};

/* --- module functions ---------------------------------------------------------- */

/* A table object of `type` read from the file at `arg` by `read` (without the
 * GIL): (table, None), or (None, why) where the reader gave up. The table
 * lies at `table_at` in the object; its `why` at `why_at` in the table. */
static PyObject *read_table(PyObject *arg, PyTypeObject *type, int (*read)(void *, const char *),
                            size_t table_at, size_t why_at) {
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(arg, &path)) return NULL;
    PyObject *self = _PyObject_New(type);
    if (self == NULL) {
        Py_DECREF(path);
        return NULL;
    }
    char *table = (char *)self + table_at;
    int gave_up;
    Py_BEGIN_ALLOW_THREADS
    gave_up = read(table, PyBytes_AS_STRING(path));
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (gave_up) {
        PyObject *out = Py_BuildValue("(Os)", Py_None, table + why_at);
        Py_DECREF(self);
        return out;
    }
    return Py_BuildValue("(NO)", self, Py_None);
}

static int read_history_table(void *table, const char *path) {
    return history_read(table, path);
}

static int read_final_table(void *table, const char *path) {
    return final_read(table, path);
}

static PyObject *read_history(PyObject *module, PyObject *arg) {
    return read_table(arg, &HistoryType, read_history_table, offsetof(HistoryObject, table),
                      offsetof(HistTable, why));
}

static PyObject *read_final(PyObject *module, PyObject *arg) {
    return read_table(arg, &FinalType, read_final_table, offsetof(FinalObject, table),
                      offsetof(FinalTable, why));
}

static PyObject *columns_of(PyObject *arg, PyObject *(*read)(const char *)) {
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(arg, &path)) return NULL;
    PyObject *out = read(PyBytes_AS_STRING(path));
    Py_DECREF(path);
    return out;
}

static PyObject *history_columns_of(PyObject *module, PyObject *arg) {
    return columns_of(arg, history_columns);
}

static PyObject *final_columns_of(PyObject *module, PyObject *arg) {
    return columns_of(arg, final_columns);
}

static PyObject *build(PyObject *module, PyObject *args) {
    PyObject *history, *final, *send_type, *poll_type;
    Py_ssize_t h_index, f_index;
    if (!PyArg_ParseTuple(args, "OnOnOO:build", &history, &h_index, &final, &f_index, &send_type, &poll_type))
        return NULL;
    const HistTable *h = NULL;
    const FinalTable *f = NULL;
    if (history != Py_None) {
        if (!PyObject_TypeCheck(history, &HistoryType)) return PyErr_Format(PyExc_TypeError, "not a HistoryTable");
        h = &((HistoryObject *)history)->table;
        if (h_index >= (Py_ssize_t)h->partitions.len) return PyErr_Format(PyExc_IndexError, "no such partition");
    }
    if (final != Py_None) {
        if (!PyObject_TypeCheck(final, &FinalType)) return PyErr_Format(PyExc_TypeError, "not a FinalTable");
        f = &((FinalObject *)final)->table;
        if (f_index >= (Py_ssize_t)f->partitions.len) return PyErr_Format(PyExc_IndexError, "no such partition");
    }
    BuildContext ctx = {
        PyDict_GetItemString(PyModule_GetDict(module), "_OK"),
        PyDict_GetItemString(PyModule_GetDict(module), "_FAIL"),
        PyDict_GetItemString(PyModule_GetDict(module), "_INFO"),
        send_type, poll_type,
    };
    if (!ctx.ok || !ctx.fail || !ctx.info) return PyErr_Format(PyExc_RuntimeError, "module state lost");
    return build_partition(&ctx, h, h_index, f, f_index);
}

static PyMethodDef module_methods[] = {
    {"read_history", read_history, METH_O,
     "read_history(path) -> (HistoryTable, None), or (None, why) where it leaves the file to the Python readers."},
    {"read_final", read_final, METH_O,
     "read_final(path) -> (FinalTable, None), or (None, why)."},
    {"history_columns", history_columns_of, METH_O,
     "history_columns(path) -> {column: [value per line]} for the Parquet copy, or None where "
     "a line is not plain (harness/analysis/parquet.py then reads the file)."},
    {"final_columns", final_columns_of, METH_O,
     "final_columns(path) -> {column: [value per line]}, or None."},
    {"build", build, METH_VARARGS,
     "build(history|None, h_index, final|None, f_index, Send, Poll) -> "
     "(sends, polls, final read|None, {node: records}, [(node, leo, hw, epoch, epochs)])."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "harness._native", "history.jsonl and final.jsonl read in C.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&HistoryType) < 0 || PyType_Ready(&FinalType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    /* The outcome strings every Send and Poll shares. */
    if (PyModule_AddObject(m, "_OK", PyUnicode_InternFromString("ok")) < 0
            || PyModule_AddObject(m, "_FAIL", PyUnicode_InternFromString("fail")) < 0
            || PyModule_AddObject(m, "_INFO", PyUnicode_InternFromString("info")) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
