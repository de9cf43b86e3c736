/* SPDX-License-Identifier: MIT */
/*
 * Definitions shared by every public header of libparkinglot: the export
 * macro, C/C++ linkage, and the few compiler helpers that the inline fast
 * paths use.  Nothing here allocates or has state.
 */
#ifndef PARKINGLOT_DEFS_H
#define PARKINGLOT_DEFS_H

#if defined(__cplusplus)
#define PL_BEGIN_DECLS extern "C" {
#define PL_END_DECLS }
#else
#define PL_BEGIN_DECLS
#define PL_END_DECLS
#endif

/* Every public function carries PL_EXPORT; the library is built with
 * -fvisibility=hidden and a version script, so nothing else escapes. */
#if defined(__GNUC__) || defined(__clang__)
#define PL_EXPORT __attribute__((visibility("default")))
#define PL_LIKELY(x) __builtin_expect(!!(x), 1)
#define PL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#error "libparkinglot needs GCC or Clang (the __atomic builtins)"
#endif

/*
 * ThreadSanitizer annotations.  Under TSan the lock and unlock calls tell
 * it which object is a lock (__tsan_mutex_*), so its reports name the
 * locks a thread held and it can check lock order; the atomics inside
 * already give it the happens-before edges.  The inline calls annotate
 * themselves, and the library annotates only the calls that are out of
 * line, so nothing is annotated twice.  TSan ignores the memory accesses
 * and synchronization between the start and the end of an annotated lock
 * operation; a slow path is more than the lock's own word (it parks, and
 * synchronizes with other threads' records in the parking lot), so it runs
 * "diverted", where TSan watches again.  Elsewhere they compile to
 * nothing.
 */
#if defined(__SANITIZE_THREAD__)
#define PL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PL_TSAN 1
#endif
#endif
#ifdef PL_TSAN
#include <sanitizer/tsan_interface.h>
#define PL_TSAN_READ __tsan_mutex_read_lock
#define PL_TSAN_TRY __tsan_mutex_try_lock
#define PL_TSAN_TRY_FAILED __tsan_mutex_try_lock_failed
#define PL_TSAN_PRE_LOCK(a, f) __tsan_mutex_pre_lock((void *)(a), (f))
#define PL_TSAN_POST_LOCK(a, f) __tsan_mutex_post_lock((void *)(a), (f), 0)
#define PL_TSAN_PRE_UNLOCK(a, f)                                               \
	((void)__tsan_mutex_pre_unlock((void *)(a), (f)))
#define PL_TSAN_POST_UNLOCK(a, f) __tsan_mutex_post_unlock((void *)(a), (f))
#define PL_TSAN_DIVERT(a) __tsan_mutex_pre_divert((void *)(a), 0)
#define PL_TSAN_UNDIVERT(a) __tsan_mutex_post_divert((void *)(a), 0)
#else
#define PL_TSAN_READ 0u
#define PL_TSAN_TRY 0u
#define PL_TSAN_TRY_FAILED 0u
#define PL_TSAN_PRE_LOCK(a, f) ((void)(a), (void)(f))
#define PL_TSAN_POST_LOCK(a, f) ((void)(a), (void)(f))
#define PL_TSAN_PRE_UNLOCK(a, f) ((void)(a), (void)(f))
#define PL_TSAN_POST_UNLOCK(a, f) ((void)(a), (void)(f))
#define PL_TSAN_DIVERT(a) ((void)(a))
#define PL_TSAN_UNDIVERT(a) ((void)(a))
#endif

/*
 * Checked mode (deadlock detection, <parkinglot/deadlock.h>).  A program
 * built with -DPL_CHECKED routes every lock and unlock of every primitive
 * through the out-of-line hooks below, called at the same spots as the
 * TSan annotations above, just outside them (TSan ignores what runs
 * between an annotated lock's start and end, and the detector
 * synchronizes with other threads).  Pre-lock, before a blocking attempt
 * (lock, timed lock, the retaking of a condition wait's mutex): records
 * the lock-order edges from every lock the thread holds, before it can
 * block, and adds the lock to the thread's held set, where it counts from
 * the attempt on.  Post-lock, only where pre-lock cannot know the outcome:
 * after a try that succeeded (PL_CHK_TRY: the lock joins the set, with no
 * edge) and after a blocking attempt that failed (PL_CHK_FAILED: it
 * leaves the set again); a lock that cannot fail makes no post-lock call,
 * and a try that failed none at all.  Pre-unlock, before the release: the
 * lock leaves the set.  So a lock and its unlock make two calls.  Each
 * hook is called only while the detector is on at run time
 * (pl__deadlock_on, the mode of pl_deadlock_get, nonzero only once the
 * detector's graph exists): with the detector off a checked build pays one
 * load and a predicted branch per hook, and no call, which would keep the
 * processor from overlapping the lock's cache miss with those of the
 * critical section.  Without PL_CHECKED the macros compile to nothing and
 * the inline fast paths are exactly those of an unchecked build.  The
 * hooks find the call site themselves (their return address, in the
 * function the inline lock was inlined into).
 */
#define PL_CHK_READ 1u   /* a read (shared) acquisition of a rwlock */
#define PL_CHK_TRY 2u    /* a trylock: cannot block, records no edge */
#define PL_CHK_FAILED 4u /* post-lock: a blocking attempt failed */
PL_BEGIN_DECLS
PL_EXPORT extern int pl__deadlock_on;
PL_EXPORT void pl__chk_pre_lock(const void *addr, unsigned flags);
PL_EXPORT void pl__chk_post_lock(const void *addr, unsigned flags);
PL_EXPORT void pl__chk_pre_unlock(const void *addr, unsigned flags);
PL_END_DECLS
#ifdef PL_CHECKED
#define PL__CHK_ON()                                                           \
	PL_UNLIKELY(__atomic_load_n(&pl__deadlock_on, __ATOMIC_RELAXED) != 0)
#define PL_CHK_PRE_LOCK(a, f)                                                  \
	(PL__CHK_ON() ? pl__chk_pre_lock((const void *)(a), (f)) : (void)0)
#define PL_CHK_POST_LOCK(a, f)                                                 \
	(PL__CHK_ON() ? pl__chk_post_lock((const void *)(a), (f)) : (void)0)
#define PL_CHK_PRE_UNLOCK(a, f)                                                \
	(PL__CHK_ON() ? pl__chk_pre_unlock((const void *)(a), (f)) : (void)0)
#else
#define PL_CHK_PRE_LOCK(a, f) ((void)(a), (void)(f))
#define PL_CHK_POST_LOCK(a, f) ((void)(a), (void)(f))
#define PL_CHK_PRE_UNLOCK(a, f) ((void)(a), (void)(f))
#endif

/* Run a slow path diverted (see above). */
#define PL__DIVERTED(a, call)                                                  \
	do {                                                                   \
		PL_TSAN_DIVERT(a);                                             \
		call;                                                          \
		PL_TSAN_UNDIVERT(a);                                           \
	} while (0)

#endif /* PARKINGLOT_DEFS_H */
