#include "scan.h"

/* A number as JSON writes it, at most 18 integer digits and no exponent. */
static int skip_number(Cursor *c) {
    const char *p = c->p;
    const char *end = c->end;
    if (p < end && *p == '-') p++;
    if (p >= end || *p < '0' || *p > '9') return SCAN_GIVE_UP;
    if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9') return SCAN_GIVE_UP;
    int digits = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        p++;
        digits++;
    }
    if (digits > 18) return SCAN_GIVE_UP;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') return SCAN_GIVE_UP;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) return SCAN_GIVE_UP;
    c->p = p;
    return SCAN_OK;
}

/* Skip one value of any kind, checking that it is well-formed. */
int scan_skip(Cursor *c, int depth) {
    if (depth > SCAN_MAX_DEPTH) return SCAN_GIVE_UP;
    int ch = scan_peek(c);
    Span ignored;
    int first = 1;
    int more;
    switch (ch) {
    case '"':
        return scan_string(c, &ignored);
    case '{':
        c->p++;
        while ((more = scan_member(c, &first, &ignored)) == 1)
            if (scan_skip(c, depth + 1) != SCAN_OK) return SCAN_GIVE_UP;
        return more == 0 ? SCAN_OK : SCAN_GIVE_UP;
    case '[':
        c->p++;
        while ((more = scan_element(c, &first)) == 1)
            if (scan_skip(c, depth + 1) != SCAN_OK) return SCAN_GIVE_UP;
        return more == 0 ? SCAN_OK : SCAN_GIVE_UP;
    case 'n':
        return scan_literal(c, "null", 4);
    case 't':
        return scan_literal(c, "true", 4);
    case 'f':
        return scan_literal(c, "false", 5);
    default:
        return skip_number(c);
    }
}

int scan_bool(Cursor *c, int *out) {
    int ch = scan_peek(c);
    if (ch == 't' && scan_literal(c, "true", 4) == SCAN_OK) {
        *out = 1;
        return SCAN_OK;
    }
    if (ch == 'f' && scan_literal(c, "false", 5) == SCAN_OK) {
        *out = 0;
        return SCAN_OK;
    }
    return SCAN_GIVE_UP;
}
