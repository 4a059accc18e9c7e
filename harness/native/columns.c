/* history.jsonl and final.jsonl as columns, for the Parquet copies `fencepost
 * analyze` makes (harness/analysis/parquet.py holds the rules and is the
 * reference): one list per column, one entry per line; a JSON value kept as
 * its text, as written in the line. Where a line is anything but plain (not
 * an object, a field of another type than its column's, anything the scanner
 * is not sure of) the whole file is left to the Python code: NULL, no
 * exception set. */
#include "columns.h"

#include "build.h"
#include "mapped.h"

typedef enum { COL_INT64, COL_INT32, COL_TEXT, COL_BOOL, COL_JSON, COL_PROCESS } ColumnKind;

typedef struct {
    const char *name;
    ColumnKind kind;
} Column;

static const Column HISTORY_COLUMNS[] = {
    {"index", COL_INT64}, {"time", COL_INT64}, {"process", COL_PROCESS}, {"type", COL_TEXT},
    {"f", COL_TEXT}, {"value", COL_JSON}, {"error", COL_TEXT},
};

static const Column FINAL_COLUMNS[] = {
    {"kind", COL_TEXT}, {"node", COL_TEXT}, {"topic", COL_TEXT}, {"partition", COL_INT32},
    {"offset", COL_INT64}, {"value", COL_TEXT}, {"leader_epoch", COL_INT32},
    {"log_end_offset", COL_INT64}, {"high_watermark", COL_INT64}, {"complete", COL_BOOL},
    {"epochs", COL_JSON},
};

#define MAX_COLUMNS 11

/* One field's value as its column holds it (a new reference; Py_None for
 * null), or NULL: not plain (no exception) or out of memory (exception). */
static PyObject *field(Cursor *c, ColumnKind kind) {
    Span s;
    int64_t n;
    int flag;
    if (kind == COL_JSON) {
        scan_ws(c);
        const char *start = c->p;
        if (scan_null(c)) Py_RETURN_NONE;
        if (scan_skip(c, 1)) return NULL;
        Span text = {start, (uint32_t)(c->p - start)};
        return span_str(text);
    }
    if (scan_null(c)) Py_RETURN_NONE;
    switch (kind) {
    case COL_INT64:
        return scan_int64(c, &n) ? NULL : PyLong_FromLongLong(n);
    case COL_INT32:
        if (scan_int64(c, &n) || n < INT32_MIN || n > INT32_MAX) return NULL;
        return PyLong_FromLongLong(n);
    case COL_TEXT:
        return scan_string(c, &s) ? NULL : span_str(s);
    case COL_BOOL:
        if (scan_bool(c, &flag)) return NULL;
        return PyBool_FromLong(flag);
    case COL_PROCESS: /* a client's number as its decimal text, or the string */
        if (scan_peek(c) == '"') return scan_string(c, &s) ? NULL : span_str(s);
        return scan_int64(c, &n) ? NULL : PyUnicode_FromFormat("%lld", (long long)n);
    default:
        return NULL;
    }
}

/* The values of one line into `row` (NULL where absent); 0 when plain. */
static int read_row(Cursor *c, const Column *columns, size_t count, PyObject **row) {
    for (size_t i = 0; i < count; i++) row[i] = NULL;
    if (!scan_take(c, '{')) return 1;
    int first = 1, more;
    Span key;
    while ((more = scan_member(c, &first, &key)) == 1) {
        size_t i = 0;
        while (i < count && !span_is(key, columns[i].name)) i++;
        if (i == count) {
            if (scan_skip(c, 1)) return 1;
            continue;
        }
        if (row[i] != NULL) return 1; /* given twice */
        if ((row[i] = field(c, columns[i].kind)) == NULL) return 1;
    }
    if (more != 0) return 1;
    scan_ws(c);
    return c->p != c->end;
}

static PyObject *read_columns(const char *path, const Column *columns, size_t count) {
    Mapped file;
    if (mapped_open(&file, path)) Py_RETURN_NONE; /* the Python code says why */
    Arena arena = {NULL};
    PyObject *lists[MAX_COLUMNS] = {NULL};
    PyObject *row[MAX_COLUMNS] = {NULL};
    PyObject *out = NULL;
    int plain = 1;
    for (size_t i = 0; i < count; i++)
        if ((lists[i] = PyList_New(0)) == NULL) goto done;
    const char *p = file.data;
    const char *end = p + file.size;
    while (p < end && plain) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) {
            plain = 0; /* a torn last line */
            break;
        }
        Cursor c = {p, nl, &arena};
        plain = !read_row(&c, columns, count, row);
        for (size_t i = 0; i < count; i++) {
            if (plain && PyList_Append(lists[i], row[i] ? row[i] : Py_None) < 0) goto done;
            Py_CLEAR(row[i]);
        }
        if (PyErr_Occurred()) goto done;
        p = nl + 1;
    }
    if (!plain) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    if ((out = PyDict_New()) == NULL) goto done;
    for (size_t i = 0; i < count; i++) {
        if (PyDict_SetItemString(out, columns[i].name, lists[i]) < 0) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    for (size_t i = 0; i < count; i++) {
        Py_XDECREF(lists[i]);
        Py_XDECREF(row[i]);
    }
    arena_free(&arena);
    mapped_close(&file);
    return out;
}

PyObject *history_columns(const char *path) {
    return read_columns(path, HISTORY_COLUMNS, sizeof HISTORY_COLUMNS / sizeof *HISTORY_COLUMNS);
}

PyObject *final_columns(const char *path) {
    return read_columns(path, FINAL_COLUMNS, sizeof FINAL_COLUMNS / sizeof *FINAL_COLUMNS);
}
