/* The daemon's log lines, on stderr: local time with milliseconds, the program and its pid. */
#include "lazyfs.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void lz_log(const char *fmt, ...)
{
    char stamp[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s.%03ld fencepost-lazyfs[%d]: %s\n", stamp, ts.tv_nsec / 1000000, (int)getpid(), line);
}
