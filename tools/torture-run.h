/* SPDX-License-Identifier: MIT */
/*
 * The run of tools/torture, as its three files share it: tools/torture.c
 * (options, main and the harness: running, churn, the monitor and its
 * stall detector, reports and the final checks), tools/torture-workers.c
 * (the operation of each primitive's workers, their objects' locks, and
 * the conformance pass) and tools/torture-run.c (what both use: the
 * options, the reports of violations, the published waits).  The
 * options, the objects of a run and the slots of its workers, with the
 * hooks through which tests/conform.h reports failures and waits.
 */
#ifndef PL_TORTURE_RUN_H
#define PL_TORTURE_RUN_H

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <parkinglot.h>

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

/* tests/conform.h reports through these: conform_failed in
 * tools/torture-workers.c, the others in tools/torture.c.  me is the
 * slot of the worker running on this thread (NULL on any other). */
struct slot;
extern __thread struct slot *me;
void conform_failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void noted(const char *what);
void wait_begin(struct slot *s, const char *what, uint64_t due,
    const uintptr_t *watch, uintptr_t val);
void wait_end(struct slot *s);
#define CONFORM_FAIL(...) conform_failed(__VA_ARGS__)
#define CONFORM_NOTED(what) noted(what)
#define CONFORM_WAIT_UNTIMED(what) CONFORM_WAIT_TIMED(what, 0)
#define CONFORM_WAIT_TIMED(what, dl)                                           \
	(me ? wait_begin(me, what, dl, NULL, 0) : (void)0)
#define CONFORM_WAIT_END() (me ? wait_end(me) : (void)0)
#include "conform.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define FADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define FSUB(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELAXED)
#define RND(s) conform_rnd(&(s)->rng)
#define now_ns conform_now_ns
#define sleep_ns conform_sleep_ns
#define NS CF_SEC
#define UNBOUNDED UINT64_MAX /* the due end of a wait for an event */

enum { P_MUTEX, P_RMUTEX, P_COND, P_RWLOCK, P_ONCE, P_BITLOCK, P_PARK, NPRIM };
#define P_OTHER NPRIM /* fork, churn, shutdown: violations of the harness */
#define ENABLED(p) (opt.prims & (1u << (p)))
#define MAXTHREADS 32
#define NLOCKS 4

struct options {
	double seconds, interval;
	int threads;
	unsigned prims; /* bit mask of enabled primitives */
	bool busted, fork;
	uint64_t seed, stall_ns;
};
extern struct options opt;

/* ---- the shared state of a run ------------------------------------------ */

/* One worker position.  Threads come and go (churn); the slot stays. */
struct slot {
	struct run *run;
	int prim, index;
	pthread_t tid;
	bool started;   /* a thread was started and not yet joined */
	bool abandoned; /* it did not stop: never joined, never reused */
	unsigned incarnation;
	int stop, exited; /* atomic: asked to stop; has left its loop */
	uint64_t rng;
	/* The current wait, for the monitor: wseq is odd while waiting; the
	 * fields are written before it turns odd, and read between two equal
	 * odd readings of it.  Once *watch != watch_val (if watch is set),
	 * the wait must end within the stall bound. */
	uint64_t wseq, wstart, wlimit;
	const uintptr_t *watch;
	uintptr_t watch_val;
	const char *what;
	uint64_t m_seq, m_trig; /* the monitor's own */
	bool m_reported;
	uint64_t max_over;   /* atomic: the longest a wait lasted past due */
	uint64_t ops;        /* atomic: completed operations */
	uint64_t cs[NLOCKS]; /* completed critical sections, per object */
	uintptr_t xorw;      /* bitlock: every mask xored into the word */
	unsigned char xorb;  /* and into the byte */
} __attribute__((aligned(64)));

/* Locks for conform_acquire and conform_op, with their checks. */
struct lockset {
	struct conform_lock lk[NLOCKS];
	struct conform_check ck[NLOCKS] __attribute__((aligned(64)));
};

#define QCAP 8
struct item {
	uint32_t prod;
	uint64_t seq;
};

struct cond_obj {
	pl_mutex_t m;
	pl_cond_t not_empty, not_full, epoch_cv;
	struct conform_lock mlk;
	struct conform_check ck; /* the holder of m */
	unsigned head, count;    /* under m, as all that follows */
	struct item q[QCAP];
	uint64_t next_seq[MAXTHREADS]; /* per producer slot */
	uint64_t expect[MAXTHREADS];   /* the next seq consumers expect */
	uint64_t produced, consumed, since_flip;
	bool bcast_phase;
	uintptr_t epoch; /* atomic: the monitor watches it */
} __attribute__((aligned(64)));

struct rw_obj {
	pl_rwlock_t l;
	int readers, writers; /* atomic */
	uint64_t data[4];     /* plain: a record the writers keep equal */
} __attribute__((aligned(64)));

#define ONCE_RING 64
struct once_ent {
	pl_once_t o;
	struct run *run;
	unsigned runs, done, calls, users; /* atomic */
	uint64_t gen;                      /* atomic: the round it serves */
	uint64_t payload;                  /* plain: written by fn */
} __attribute__((aligned(64)));

/* Bit locks: two in a word, two in a byte; the other bits are flipped. */
#define WA_L ((uintptr_t)1)
#define WA_P ((uintptr_t)2)
#define WB_L ((uintptr_t)1 << (sizeof(uintptr_t) * CHAR_BIT - 2))
#define WB_P ((uintptr_t)1 << 7)
#define W_FLIP (~(WA_L | WA_P | WB_L | WB_P))
#define BC_L ((unsigned char)0x04)
#define BC_P ((unsigned char)0x40)
#define BD_L ((unsigned char)0x01)
#define BD_P ((unsigned char)0x10)
#define B_FLIP ((unsigned char)~(BC_L | BC_P | BD_L | BD_P))

/* Raw parking: a gate (round << 2 | CLOSED | SET) and a semaphore. */
#define GATE_SET ((uintptr_t)1)
#define GATE_CLOSED ((uintptr_t)2)
#define GATE_ROUND ((uintptr_t)4)
#define TOKEN_CLOSED UINTPTR_MAX
#define SEM_WAITERS ((uintptr_t)1)
#define SEM_UNIT ((uintptr_t)2)
#define SEM_K 2
#define TOKEN_UNIT ((uintptr_t)7)

struct park_obj {
	uintptr_t gate;
	uint64_t reported; /* atomic: waiters of the open round that returned */
	uintptr_t sem;
	int sem_inside;
	uint64_t sem_value; /* atomic */
	struct conform_check ck;
} __attribute__((aligned(64)));

struct run {
	bool is_child;
	int nthreads, once_k;
	int stop, stop_monitor; /* atomic */
	uint64_t start_ns, churns, child_ops;
	uint64_t violations[NPRIM + 1]; /* atomic */
	struct slot slots[NPRIM][MAXTHREADS];
	pl_mutex_t mtx[2];
	unsigned char busted[2]; /* the --busted locks */
	pl_rmutex_t rmtx[2];
	uintptr_t word, init_word;
	unsigned char byte, init_byte;
	struct lockset ls[NPRIM]; /* mutex, rmutex, bitlock; rwlock writers */
	struct lockset rd;        /* rwlock readers */
	struct cond_obj cond;
	struct rw_obj rw[2];
	struct once_ent ring[ONCE_RING];
	uint64_t once_cur, once_claim; /* atomic: the current round, and the
	                                  round that may be advanced next */
	struct park_obj park;
};

/* The parent's objects (tools/torture.c). */
extern struct run parent_run;

/* ---- tools/torture.c: reports and waits --------------------------------- */

/* A violation of primitive prim (or P_OTHER) in run r: counted, and the
 * first ten of each primitive shown. */
void vviolation(struct run *r, int prim, const char *fmt, va_list ap);
void violation(struct run *r, int prim, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define VIOL(s, ...) violation((s)->run, (s)->prim, __VA_ARGS__)
uint64_t total_violations(struct run *r);
/* The primitives' names, and "torture" for the harness itself. */
extern const char *const prim_name[NPRIM + 1];

/* Whether the worker of s has been asked to stop, or its whole run. */
static inline bool
stopping(struct slot *s)
{
	return LOAD(&s->stop) || LOAD(&s->run->stop);
}

/* ---- tools/torture-workers.c -------------------------------------------- */

/* One random operation of each primitive's workers. */
extern void (*const prim_op[NPRIM])(struct slot *);
/* The objects of a run, its locks' tables among them, once r->is_child
 * is set. */
void run_objects_init(struct run *r);
/* The bodies of tests/conform.h on locks of their own (first, before the
 * workers start). */
void conformance_pass(void);
/* Wake every waiter of r's condition variables. */
void cond_kick(struct run *r);
/* Check that item it is the next one due from its producer. */
void cond_check_item(struct run *r, struct cond_obj *c, struct item it);
/* Check that a pl_once_t that was called ran fn exactly once. */
void once_check(struct run *r, const struct once_ent *e, const char *when);

#endif
