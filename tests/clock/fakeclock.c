/* Test tool: a wall clock moved by PAIMON_FAKE_CLOCK_OFFSET seconds, consistently for the clock and for file times.
 *
 * Every way a program reads the wall clock (clock_gettime on a realtime clock, gettimeofday, time) reports the moved
 * time; every file time stat reports is moved alike and times a program sets explicitly (utime*) are moved back, so
 * a file written a second ago reads as a second old on the moved clock, as on a real machine on that day. Monotonic
 * clocks are left alone: timeouts, sleeps and condition waits keep working (libfaketime, tried first, either breaks
 * Python's time.sleep or makes absolute monotonic waits never end, and does not move file times at all).
 * Used only by tests/clock/run-shifted (see there).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <utime.h>

static long offset(void) {
    static long cached = -1;
    if (cached == -1) {
        const char *s = getenv("PAIMON_FAKE_CLOCK_OFFSET");
        cached = s ? atol(s) : 0;
    }
    return cached;
}

static int is_wall_clock(clockid_t c) {
    return c == CLOCK_REALTIME || c == CLOCK_REALTIME_COARSE || c == CLOCK_TAI;
}

#define REAL(name) static __typeof__(&name) real_##name; if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name)

int clock_gettime(clockid_t c, struct timespec *ts) { REAL(clock_gettime);
    int r = real_clock_gettime(c, ts); if (r == 0 && is_wall_clock(c)) ts->tv_sec += offset(); return r; }
int gettimeofday(struct timeval *restrict tv, void *restrict tz) { REAL(gettimeofday);
    int r = real_gettimeofday(tv, tz); if (r == 0) tv->tv_sec += offset(); return r; }
time_t time(time_t *t) { REAL(time);
    time_t now = real_time(NULL) + offset(); if (t) *t = now; return now; }

static void shift_stat(struct stat *st) {
    long o = offset();
    st->st_atim.tv_sec += o; st->st_mtim.tv_sec += o; st->st_ctim.tv_sec += o;
}
static void shift_stat64(struct stat64 *st) {
    long o = offset();
    st->st_atim.tv_sec += o; st->st_mtim.tv_sec += o; st->st_ctim.tv_sec += o;
}

int stat(const char *p, struct stat *st) { REAL(stat);
    int r = real_stat(p, st); if (r == 0) shift_stat(st); return r; }
int lstat(const char *p, struct stat *st) { REAL(lstat);
    int r = real_lstat(p, st); if (r == 0) shift_stat(st); return r; }
int fstat(int fd, struct stat *st) { REAL(fstat);
    int r = real_fstat(fd, st); if (r == 0) shift_stat(st); return r; }
int fstatat(int d, const char *p, struct stat *st, int f) { REAL(fstatat);
    int r = real_fstatat(d, p, st, f); if (r == 0) shift_stat(st); return r; }
int stat64(const char *p, struct stat64 *st) { REAL(stat64);
    int r = real_stat64(p, st); if (r == 0) shift_stat64(st); return r; }
int lstat64(const char *p, struct stat64 *st) { REAL(lstat64);
    int r = real_lstat64(p, st); if (r == 0) shift_stat64(st); return r; }
int fstat64(int fd, struct stat64 *st) { REAL(fstat64);
    int r = real_fstat64(fd, st); if (r == 0) shift_stat64(st); return r; }
int fstatat64(int d, const char *p, struct stat64 *st, int f) {
    REAL(fstatat64);
    int r = real_fstatat64(d, p, st, f); if (r == 0) shift_stat64(st); return r; }
int statx(int d, const char *p, int f, unsigned int m, struct statx *st) {
    REAL(statx);
    int r = real_statx(d, p, f, m, st);
    if (r == 0) { long o = offset(); st->stx_atime.tv_sec += o; st->stx_mtime.tv_sec += o; st->stx_ctime.tv_sec += o;
                  st->stx_btime.tv_sec += o; }
    return r; }

static const struct timespec *unshift(const struct timespec in[2], struct timespec out[2]) {
    if (!in) return NULL;  /* "now": the kernel's own clock, already consistent with what stat reports + offset */
    for (int i = 0; i < 2; i++) {
        out[i] = in[i];
        if (in[i].tv_nsec != UTIME_NOW && in[i].tv_nsec != UTIME_OMIT) out[i].tv_sec -= offset();
    }
    return out;
}
int utimensat(int d, const char *p, const struct timespec t[2], int f) {
    REAL(utimensat);
    struct timespec out[2]; return real_utimensat(d, p, unshift(t, out), f); }
int futimens(int fd, const struct timespec t[2]) { REAL(futimens);
    struct timespec out[2]; return real_futimens(fd, unshift(t, out)); }
int utimes(const char *p, const struct timeval t[2]) { REAL(utimes);
    if (!t) return real_utimes(p, t);
    struct timeval out[2] = {t[0], t[1]}; out[0].tv_sec -= offset(); out[1].tv_sec -= offset();
    return real_utimes(p, out); }
int utime(const char *p, const struct utimbuf *t) { REAL(utime);
    if (!t) return real_utime(p, t);
    struct utimbuf out = {t->actime - offset(), t->modtime - offset()}; return real_utime(p, &out); }
