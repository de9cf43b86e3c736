/* SPDX-License-Identifier: MIT */
/*
 * The parking lot: a process-wide, address-hashed table of wait queues on
 * which any synchronization primitive can put threads to sleep.
 *
 * A thread parks on an address; other threads unpark the threads parked on
 * that address.  The address is only a key: the lot never reads or writes
 * the memory it names, so a primitive keeps its whole state in its own word
 * (one byte for pl_mutex_t) and calls the lot only when a thread must sleep
 * or be woken.  Waiters live in buckets, each with its own lock and one FIFO
 * queue per address; the table grows with the number of threads.
 *
 * Callbacks run while the bucket of the address is locked (except
 * before_sleep): they must be short, must not block and must not call into
 * the parking lot.  Whatever a callback reads or writes is therefore atomic
 * with respect to every other park and unpark on the same address, and that
 * is what lets a primitive close the race between "I saw the lock busy" and
 * "I am asleep".
 */
#ifndef PARKINGLOT_CORE_H
#define PARKINGLOT_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* clockid_t, also under -std=c11 */
#include <time.h>

#include <parkinglot/defs.h>

PL_BEGIN_DECLS

typedef enum {
	PL_PARK_UNPARKED,  /* woken by pl_unpark_*; token is theirs */
	PL_PARK_INVALID,   /* validate returned false: never slept */
	PL_PARK_TIMED_OUT, /* the deadline passed first */
	PL_PARK_CANCELLED  /* to pl_park_until's cancelled callback only:
	                      cancelled while queued (timed_out ran) */
} pl_park_status_t;

typedef struct {
	pl_park_status_t status;
	uintptr_t token; /* the unpark token, on PL_PARK_UNPARKED; else 0 */
} pl_park_result_t;

/* Unpark tokens with a meaning shared by the library's own primitives.
 * Their values, like those of pl_park_status_t, are ABI: the library's
 * slow paths and primitives built on the lot compile them in. */
#define PL_UNPARK_TOKEN_DEFAULT ((uintptr_t)0)
#define PL_UNPARK_TOKEN_HANDOFF ((uintptr_t)1) /* lock was handed to you */

/*
 * pl_park - put the calling thread to sleep on addr.
 *
 * Locks the bucket of addr, calls validate(ctx) (NULL counts as true), and
 * if it returns true appends the thread to addr's FIFO queue, unlocks the
 * bucket, calls before_sleep(ctx) and sleeps until a pl_unpark_* call
 * removes it from the queue or the deadline passes.
 *
 * deadline is absolute on CLOCK_MONOTONIC, NULL to wait forever.  When it
 * passes while the thread is still queued, timed_out(ctx, addr, was_last)
 * runs with the bucket locked; addr is the address the thread was queued on
 * at that moment (the requeue target if it was requeued) and was_last tells
 * whether no other thread is left queued there.  A deadline that is already
 * past still enqueues and then times out, so timed_out always runs.  A
 * malformed deadline (tv_nsec outside 0..999999999, negative tv_sec)
 * returns PL_PARK_INVALID with errno set to EINVAL, before validate.
 *
 * Signals never end the sleep early: the thread only returns when unparked,
 * timed out or invalid.  Returns the status and, when unparked, the token
 * chosen by the unparker.  park_token is visible to pl_unpark_filter and to
 * primitives reading the queue (a condition variable stores its mutex).
 *
 * Memory ordering: everything the unparker did before its pl_unpark_* call
 * happens before pl_park returns PL_PARK_UNPARKED; validate and the
 * unparker's callback are serialized by the bucket lock.
 *
 * The first park of a thread allocates its per-thread record (freed when
 * the thread exits); if that allocation fails the thread uses a slower
 * shared fallback and still parks correctly.
 */
PL_EXPORT pl_park_result_t pl_park(const void *addr,
    bool (*validate)(void *ctx), void (*before_sleep)(void *ctx),
    void (*timed_out)(void *ctx, const void *addr, bool was_last), void *ctx,
    uintptr_t park_token, const struct timespec *deadline);

/*
 * pl_park_until - pl_park with a choice of clock, and optionally a POSIX
 * thread cancellation point.
 *
 * clock is CLOCK_MONOTONIC or CLOCK_REALTIME; any other clock returns
 * PL_PARK_INVALID with errno EINVAL, before validate, as a malformed
 * deadline does.  A CLOCK_REALTIME deadline ends the park when that clock
 * passes it, also when the clock is set forward meanwhile.
 *
 * cancelled NULL: the park is not a cancellation point (pl_park is
 * pl_park_until with CLOCK_MONOTONIC and NULL).  Otherwise the sleep is a
 * cancellation point, as the wait of pthread_cond_wait is: if the thread
 * is cancelled (pthread_cancel, cancellation enabled, deferred or not)
 * before or while it sleeps, it first leaves the lot: still queued, it is
 * taken out of the queue as on a timeout, timed_out(ctx, addr, was_last)
 * running under the bucket lock; already dequeued by an unpark, it waits
 * for that unpark to finish.  Then cancelled(ctx, r) runs, with no lock
 * held and free to call into the lot: r.status is PL_PARK_CANCELLED if no
 * unpark reached the thread, or PL_PARK_UNPARKED with the unpark's token
 * (a wake the thread took and will not use: pass it on).  Then the
 * cancellation goes on: pl_park_until does not return, and the thread's
 * cleanup handlers run.  validate and before_sleep are not cancellation
 * points; a cancellation pending on entry acts once the thread is queued.
 * The cancelled park counts in pl_stats as a timeout.
 */
PL_EXPORT pl_park_result_t pl_park_until(const void *addr,
    bool (*validate)(void *ctx), void (*before_sleep)(void *ctx),
    void (*timed_out)(void *ctx, const void *addr, bool was_last), void *ctx,
    uintptr_t park_token, clockid_t clock, const struct timespec *deadline,
    void (*cancelled)(void *ctx, pl_park_result_t r));

typedef struct {
	size_t unparked; /* threads woken */
	size_t requeued; /* threads moved to another address */
	bool have_more;  /* threads are still parked on the address */
	bool be_fair;    /* the bucket's fairness timer expired: hand off */
} pl_unpark_result_t;

/*
 * pl_unpark_one - wake the thread that has waited longest on addr.
 *
 * callback (may be NULL) is called exactly once, with the bucket locked,
 * also when nobody was parked (then r.unparked == 0); it returns the token
 * that the woken thread's pl_park reports.  r.have_more says whether other
 * threads remain queued on addr; r.be_fair is set when a thread was found
 * and the bucket's fairness deadline had passed, in which case the deadline
 * moves to now plus a random fraction of the fairness interval.  The woken
 * thread is signalled only after the bucket lock is released.  Never blocks
 * other than on the bucket lock.
 */
PL_EXPORT pl_unpark_result_t pl_unpark_one(const void *addr,
    uintptr_t (*callback)(pl_unpark_result_t r, void *ctx), void *ctx);

/*
 * pl_unpark_all - wake every thread parked on addr, each with token.
 * Returns how many were woken.
 */
PL_EXPORT size_t pl_unpark_all(const void *addr, uintptr_t token);

typedef enum {
	PL_REQUEUE_ABORT,            /* move nothing, no callback */
	PL_REQUEUE_ONE_REQUEUE_REST, /* wake the oldest, move the rest */
	PL_REQUEUE_REQUEUE_ALL,      /* move all, wake none */
	PL_REQUEUE_ONE,              /* wake the oldest, move none */
	PL_REQUEUE_REQUEUE_ONE       /* move the oldest, wake none */
} pl_requeue_op_t;

/*
 * pl_unpark_requeue - wake and/or move threads from one address to another.
 *
 * Locks the buckets of from and to (in a fixed order; once if they share
 * one) and calls validate(ctx), which picks the operation.  Moved threads
 * keep their order and go behind those already queued on to; they are then
 * woken by an unpark of to, and their timed_out callback sees to.  Unless
 * the operation was PL_REQUEUE_ABORT, callback(op, r, ctx) then runs, still
 * with both buckets locked, and returns the token for the woken thread.
 * r.have_more refers to from.  Both callbacks may be NULL: validate NULL
 * means PL_REQUEUE_ONE_REQUEUE_REST.
 */
PL_EXPORT pl_unpark_result_t pl_unpark_requeue(const void *from, const void *to,
    pl_requeue_op_t (*validate)(void *ctx),
    uintptr_t (*callback)(pl_requeue_op_t op, pl_unpark_result_t r, void *ctx),
    void *ctx);

/* What pl_unpark_requeue_token's validate sees of from's queue. */
typedef struct {
	size_t queued;        /* threads parked on from */
	uintptr_t head_token; /* the oldest one's park token; 0 if none */
} pl_requeue_head_t;

/*
 * pl_unpark_requeue_token - pl_unpark_requeue for threads whose park token
 * says where they belong (a condition variable's waiters carry their
 * mutex's address).
 *
 * The same as pl_unpark_requeue, except that validate(head, ctx) also sees,
 * under both bucket locks, how many threads are parked on from and the park
 * token of the oldest, and that the operation it picks acts only on the
 * threads whose park token equals head->head_token: the oldest, and for
 * the operations on the rest (PL_REQUEUE_ONE_REQUEUE_REST,
 * PL_REQUEUE_REQUEUE_ALL) every later one with that token, in order.
 * Threads with another token stay on from, in order; r.have_more then
 * reports them.  So a caller that guessed `to` from a token read earlier
 * checks the guess where it cannot change: validate returns
 * PL_REQUEUE_ABORT when head->head_token is not what it guessed, and the
 * caller tries again with the token it saw.  validate is called also when
 * from has no thread (queued 0, head_token 0) and may not be NULL.
 */
PL_EXPORT pl_unpark_result_t pl_unpark_requeue_token(const void *from,
    const void *to,
    pl_requeue_op_t (*validate)(const pl_requeue_head_t *head, void *ctx),
    uintptr_t (*callback)(pl_requeue_op_t op, pl_unpark_result_t r, void *ctx),
    void *ctx);

typedef enum {
	PL_FILTER_UNPARK, /* wake this thread */
	PL_FILTER_SKIP,   /* leave it queued, look at the next */
	PL_FILTER_STOP    /* leave it and every later one queued */
} pl_filter_op_t;

/*
 * pl_unpark_filter - walk addr's queue oldest first, asking filter about
 * each thread's park token; wake those it picks (a NULL filter picks
 * every thread).  callback (may be NULL) then runs once, with the bucket
 * locked, and returns the token given to every woken thread.  Both
 * callbacks run with the bucket locked.
 */
PL_EXPORT pl_unpark_result_t pl_unpark_filter(const void *addr,
    pl_filter_op_t (*filter)(uintptr_t park_token, void *ctx),
    uintptr_t (*callback)(pl_unpark_result_t r, void *ctx), void *ctx);

/* The library's version, "MAJOR.MINOR.PATCH", as built. */
PL_EXPORT const char *pl_version(void);

PL_END_DECLS

#endif /* PARKINGLOT_CORE_H */
