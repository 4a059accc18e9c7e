/* history.jsonl and final.jsonl as Python lists of column values, for the
 * Parquet copies of `fencepost analyze` (harness/analysis/parquet.py). */
#ifndef FENCEPOST_COLUMNS_H
#define FENCEPOST_COLUMNS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* {column: [value per line]}, Py_None where a line is not plain (the caller
 * then reads the file itself), NULL with an exception on failure. */
PyObject *history_columns(const char *path);
PyObject *final_columns(const char *path);

#endif
