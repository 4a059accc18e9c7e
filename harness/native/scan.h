/* A strict, conservative scanner of one JSON line.
 *
 * It reads what fencepost's own files hold (objects, arrays, ASCII strings with
 * the usual escapes, 64-bit integers, plain decimal numbers, true/false/null) and
 * answers SCAN_GIVE_UP for anything else: bytes >= 0x80, \u escapes beyond ASCII,
 * numbers with an exponent or more than 18 integer digits, nesting deeper than
 * SCAN_MAX_DEPTH. Giving up is always safe: the caller then leaves the whole file
 * to the Python readers, which say what is wrong (or read it as it is). */
#ifndef FENCEPOST_SCAN_H
#define FENCEPOST_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"

enum { SCAN_OK = 0, SCAN_GIVE_UP = 1 };
#define SCAN_MAX_DEPTH 64

typedef struct {
    const char *ptr;
    uint32_t len;
} Span;

typedef struct {
    const char *p;   /* next byte */
    const char *end; /* the line's '\n' (never read past) */
    Arena *arena;    /* where unescaped strings are kept */
} Cursor;

static inline void scan_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

/* Consume `ch` (after whitespace); 0 when it is not next. */
static inline int scan_take(Cursor *c, char ch) {
    scan_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

static inline int scan_peek(Cursor *c) {
    scan_ws(c);
    return c->p < c->end ? (unsigned char)*c->p : -1;
}

static inline int hex_digit(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* A string (the cursor at its opening quote, after whitespace) into `out`:
 * its bytes as they are when it holds no escape, else unescaped into the arena. */
static inline int scan_string(Cursor *c, Span *out) {
    scan_ws(c);
    if (c->p >= c->end || *c->p != '"') return SCAN_GIVE_UP;
    const char *start = ++c->p;
    const char *p = start;
    const char *end = c->end;
    while (p < end) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            out->ptr = start;
            out->len = (uint32_t)(p - start);
            c->p = p + 1;
            return SCAN_OK;
        }
        if (ch == '\\') break;
        if (ch < 0x20 || ch >= 0x80) return SCAN_GIVE_UP;
        p++;
    }
    if (p >= end) return SCAN_GIVE_UP;
    /* An escape: find the closing quote (an escaped one does not close), so
     * that only the string's own length is taken from the arena; then copy
     * what came before and unescape the rest. */
    const char *close = p;
    while (close < end && *close != '"') close += *close == '\\' ? 2 : 1;
    if (close >= end) return SCAN_GIVE_UP;
    char *into = arena_alloc(c->arena, (size_t)(close - start));
    if (into == NULL) return SCAN_GIVE_UP;
    size_t n = (size_t)(p - start);
    memcpy(into, start, n);
    while (p < end) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            out->ptr = into;
            out->len = (uint32_t)n;
            c->p = p + 1;
            return SCAN_OK;
        }
        if (ch < 0x20 || ch >= 0x80) return SCAN_GIVE_UP;
        if (ch != '\\') {
            into[n++] = (char)ch;
            p++;
            continue;
        }
        if (p + 1 >= end) return SCAN_GIVE_UP;
        char e = p[1];
        p += 2;
        switch (e) {
        case '"': into[n++] = '"'; break;
        case '\\': into[n++] = '\\'; break;
        case '/': into[n++] = '/'; break;
        case 'b': into[n++] = '\b'; break;
        case 'f': into[n++] = '\f'; break;
        case 'n': into[n++] = '\n'; break;
        case 'r': into[n++] = '\r'; break;
        case 't': into[n++] = '\t'; break;
        case 'u': {
            if (end - p < 4) return SCAN_GIVE_UP;
            int code = 0;
            for (int i = 0; i < 4; i++) {
                int d = hex_digit((unsigned char)p[i]);
                if (d < 0) return SCAN_GIVE_UP;
                code = code * 16 + d;
            }
            if (code >= 0x80) return SCAN_GIVE_UP; /* beyond ASCII: the Python readers' */
            into[n++] = (char)code;
            p += 4;
            break;
        }
        default:
            return SCAN_GIVE_UP;
        }
    }
    return SCAN_GIVE_UP;
}

/* A JSON integer that fits in 64 bits (no fraction, no exponent). */
static inline int scan_int64(Cursor *c, int64_t *out) {
    scan_ws(c);
    const char *p = c->p;
    const char *end = c->end;
    int negative = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9') return SCAN_GIVE_UP;
    if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9') return SCAN_GIVE_UP;
    uint64_t v = 0;
    int digits = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        if (++digits > 19) return SCAN_GIVE_UP;
        v = v * 10 + (uint64_t)(*p - '0');
        p++;
    }
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return SCAN_GIVE_UP;
    /* 19 digits stay below 2^64: no wrap before this test. */
    if (v > (uint64_t)INT64_MAX + (uint64_t)negative) return SCAN_GIVE_UP;
    *out = negative ? (int64_t)(0 - v) : (int64_t)v;
    c->p = p;
    return SCAN_OK;
}

/* The literal `word` (null, true, false). */
static inline int scan_literal(Cursor *c, const char *word, size_t n) {
    scan_ws(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return SCAN_GIVE_UP;
    c->p += n;
    return SCAN_OK;
}

/* Is the next value null? Consumes it if so. */
static inline int scan_null(Cursor *c) {
    if (scan_peek(c) == 'n') return scan_literal(c, "null", 4) == SCAN_OK;
    return 0;
}

static inline int span_is(Span s, const char *word) {
    size_t n = strlen(word);
    return s.len == n && memcmp(s.ptr, word, n) == 0;
}

int scan_skip(Cursor *c, int depth);
int scan_bool(Cursor *c, int *out);

/* Iterate the members of an object: call with *first = 1 after the '{';
 * returns 1 with the key in `key` and the cursor after the ':', 0 at the
 * closing '}', -1 on anything else. */
static inline int scan_member(Cursor *c, int *first, Span *key) {
    scan_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    if (!*first && !scan_take(c, ',')) return -1;
    *first = 0;
    scan_ws(c);
    if (c->p >= c->end || *c->p != '"') return -1;
    /* Keys with escapes are left to the Python readers. */
    const char *start = c->p + 1;
    const char *q = start;
    while (q < c->end && *q != '"') {
        unsigned char ch = (unsigned char)*q;
        if (ch == '\\' || ch < 0x20 || ch >= 0x80) return -1;
        q++;
    }
    if (q >= c->end) return -1;
    key->ptr = start;
    key->len = (uint32_t)(q - start);
    c->p = q + 1;
    return scan_take(c, ':') ? 1 : -1;
}

/* Iterate the elements of an array: *first = 1 after the '['; returns 1 when
 * an element follows (the cursor at it), 0 at the closing ']', -1 else. */
static inline int scan_element(Cursor *c, int *first) {
    scan_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return 0;
    }
    if (!*first && !scan_take(c, ',')) return -1;
    *first = 0;
    return 1;
}

#endif
