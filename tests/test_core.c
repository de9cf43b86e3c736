/* SPDX-License-Identifier: MIT */
/*
 * Tests of the parking lot core (core.h): park, the unpark family,
 * requeue, filter, fairness reporting, table growth, colliding addresses,
 * fork and thread exit.
 *
 * Whether a thread is parked is never guessed from elapsed time: the tests
 * count the threads queued on an address with pl_unpark_filter (a filter
 * that skips everybody) and poll that count with a hard timeout.
 */
#include "testutil.h"

TU_CRITERION_MAIN_SERIAL()

TestSuite(core, .timeout = 30);

/* ------------------------------------------------------------------ */
/* Parkers (testutil.h): what they were woken with.                     */

static void
assert_unparked_with(const struct parker *p, uintptr_t token, const char *who)
{
	cr_assert(p->res.status == PL_PARK_UNPARKED,
	    "%s: status %d, expected PL_PARK_UNPARKED", who,
	    (int)p->res.status);
	cr_assert(p->res.token == token, "%s: token %#lx, expected %#lx", who,
	    (unsigned long)p->res.token, (unsigned long)token);
	cr_assert(p->calls.timed_out == 0, "%s: timed_out was called", who);
}

/* Join the n parkers, each of which must have been woken with the token
 * token0 + i * step (the i-th of them). */
static void
join_unparked(struct parker *ps, size_t n, uintptr_t token0, uintptr_t step,
    const char *who)
{
	for (size_t i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof name, "%s %zu", who, i);
		parker_join(&ps[i]);
		assert_unparked_with(&ps[i], token0 + i * step, name);
	}
}

/* An unpark callback that records its calls and returns a chosen token. */
struct cbrec {
	unsigned calls;
	pl_unpark_result_t r;
	uintptr_t token;
};

static uintptr_t
cbrec_cb(pl_unpark_result_t r, void *ctx)
{
	struct cbrec *c = ctx;
	c->calls++;
	c->r = r;
	return c->token;
}

/* ------------------------------------------------------------------ */
/* 1. validate returning false                                         */

Test(core, validate_false_returns_invalid_without_sleeping, .timeout = 30)
{
	static char addr;
	struct park_calls c = { .validate_ret = false };
	/* A deadline keeps the test bounded should the thread sleep anyway;
	 * then the status would be PL_PARK_TIMED_OUT and the test fail. */
	struct timespec dl = tu_deadline_in(5 * TU_SEC);
	int64_t t0 = tu_now_ns();
	pl_park_result_t r = pl_park(&addr, calls_validate, calls_before_sleep,
	    calls_timed_out, &c, 42, &dl);
	int64_t took = tu_now_ns() - t0;

	cr_assert(r.status == PL_PARK_INVALID, "status %d", (int)r.status);
	cr_assert(r.token == 0, "token %#lx", (unsigned long)r.token);
	cr_assert(c.validate == 1, "validate called %u times", c.validate);
	cr_assert(c.ctx_seen == &c, "validate got the wrong ctx");
	cr_assert(c.before_sleep == 0, "before_sleep called");
	cr_assert(c.timed_out == 0, "timed_out called");
	cr_assert(took < 1 * TU_SEC, "pl_park took %lld ns", (long long)took);
	cr_assert(count_parked(&addr) == 0, "a thread stayed queued");

	/* The same with no deadline at all: must not sleep either. */
	memset(&c, 0, sizeof(c));
	r = pl_park(&addr, calls_validate, calls_before_sleep, calls_timed_out,
	    &c, 42, NULL);
	cr_assert(r.status == PL_PARK_INVALID && r.token == 0);
	cr_assert(c.validate == 1 && c.before_sleep == 0 && c.timed_out == 0);
}

/* ------------------------------------------------------------------ */
/* 2. deadlines                                                        */

Test(core, past_and_near_deadlines_time_out_alone, .timeout = 30)
{
	static char addr;
	const struct timespec zero = { 0, 0 };
	const struct timespec deadlines[] = {
		zero,                        /* long past */
		tu_deadline_in(-10 * TU_MS), /* just past */
		tu_deadline_in(20 * TU_MS),  /* near future */
	};
	for (size_t i = 0; i < sizeof(deadlines) / sizeof(deadlines[0]); i++) {
		struct timespec dl = deadlines[i];
		struct park_calls c = { .validate_ret = true };
		pl_park_result_t r = pl_park(&addr, calls_validate,
		    calls_before_sleep, calls_timed_out, &c, 7, &dl);
		int64_t after = tu_now_ns();

		cr_assert(r.status == PL_PARK_TIMED_OUT, "[%zu] status %d", i,
		    (int)r.status);
		cr_assert(r.token == 0, "[%zu] token %#lx", i,
		    (unsigned long)r.token);
		cr_assert(c.validate == 1, "[%zu] validate called %u times", i,
		    c.validate);
		cr_assert(c.before_sleep == 1,
		    "[%zu] before_sleep called %u times", i, c.before_sleep);
		cr_assert(c.timed_out == 1, "[%zu] timed_out called %u times",
		    i, c.timed_out);
		cr_assert(c.timed_out_addr == &addr, "[%zu] timed_out addr %p",
		    i, c.timed_out_addr);
		cr_assert(
		    c.was_last, "[%zu] was_last false with nobody else", i);
		cr_assert(after >= tu_ts_to_ns(&dl),
		    "[%zu] returned %lld ns before its deadline", i,
		    (long long)(tu_ts_to_ns(&dl) - after));
		cr_assert(
		    count_parked(&addr) == 0, "[%zu] left in the queue", i);
	}
}

Test(core, timeouts_report_was_last, .timeout = 30)
{
	static char addr;
	/* B parks first with the later deadline, then A (this thread) parks
	 * with a deadline that is nearly due: A times out while B is still
	 * queued (was_last false), then B times out alone (was_last true). */
	struct parker b;
	parker_start_timed(&b, &addr, 2, 1 * TU_SEC);
	ASSERT_PARKED(&addr, 1);

	struct park_calls a = { .validate_ret = true };
	struct timespec adl = tu_deadline_in(10 * TU_MS);
	pl_park_result_t r =
	    pl_park(&addr, calls_validate, NULL, calls_timed_out, &a, 1, &adl);
	int64_t a_after = tu_now_ns();
	cr_assert(r.status == PL_PARK_TIMED_OUT, "A: status %d", (int)r.status);
	cr_assert(
	    a.timed_out == 1, "A: timed_out called %u times", a.timed_out);
	cr_assert(a.timed_out_addr == &addr);
	cr_assert(a_after >= tu_ts_to_ns(&adl), "A returned before deadline");
	cr_assert(!parker_done(&b),
	    "B timed out before A: the machine is far too slow for this test");
	cr_assert(!a.was_last, "A: was_last true while B was still parked");
	cr_assert(count_parked(&addr) == 1);

	parker_join(&b);
	cr_assert(b.res.status == PL_PARK_TIMED_OUT, "B: status %d",
	    (int)b.res.status);
	cr_assert(b.res.token == 0);
	cr_assert(b.calls.timed_out == 1, "B: timed_out called %u times",
	    b.calls.timed_out);
	cr_assert(b.calls.timed_out_addr == &addr);
	cr_assert(b.calls.was_last, "B: was_last false although alone");
	cr_assert(b.returned_ns >= tu_ts_to_ns(&b.deadline),
	    "B returned %lld ns before its deadline",
	    (long long)(tu_ts_to_ns(&b.deadline) - b.returned_ns));
	cr_assert(count_parked(&addr) == 0);
}

/* ------------------------------------------------------------------ */
/* 3. malformed deadlines                                              */

Test(core, malformed_deadline_is_einval, .timeout = 30)
{
	static char addr;
	const struct timespec bad[] = {
		{ 0, 1000000000L },
		{ 1, 1000000000L },
		{ 0, -1 },
		{ -1, 0 },
		{ -1, 500 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct park_calls c = { .validate_ret = true };
		errno = 0;
		pl_park_result_t r = pl_park(&addr, calls_validate,
		    calls_before_sleep, calls_timed_out, &c, 0, &bad[i]);
		int e = errno;
		cr_assert(r.status == PL_PARK_INVALID, "[%zu] status %d", i,
		    (int)r.status);
		cr_assert(r.token == 0);
		cr_assert(e == EINVAL, "[%zu] errno %d, expected EINVAL", i, e);
		cr_assert(c.validate == 0, "[%zu] validate was called", i);
		cr_assert(c.before_sleep == 0 && c.timed_out == 0,
		    "[%zu] a callback was called", i);
		cr_assert(count_parked(&addr) == 0);
	}
}

/* ------------------------------------------------------------------ */
/* 4. FIFO order of pl_unpark_one                                      */

Test(core, unpark_one_is_fifo, .timeout = 30)
{
	enum { N = 8 };
	static char addr;
	struct parker ps[N];
	park_queue(ps, N, &addr, 0x100);

	for (size_t k = 0; k < N; k++) {
		struct cbrec cb = { .token = 1000 + k };
		pl_unpark_result_t r = pl_unpark_one(&addr, cbrec_cb, &cb);
		bool more = k < N - 1;
		cr_assert(cb.calls == 1, "[%zu] callback called %u times", k,
		    cb.calls);
		cr_assert(cb.r.unparked == 1, "[%zu] callback saw unparked %zu",
		    k, cb.r.unparked);
		cr_assert(cb.r.have_more == more, "[%zu] callback have_more %d",
		    k, cb.r.have_more);
		cr_assert(r.unparked == 1 && r.requeued == 0,
		    "[%zu] result unparked %zu requeued %zu", k, r.unparked,
		    r.requeued);
		cr_assert(r.have_more == more, "[%zu] result have_more %d", k,
		    r.have_more);
	}
	join_unparked(ps, N, 1000, 1, "parker");

	/* Nobody left: the callback still runs exactly once. */
	struct cbrec cb = { .token = 5 };
	pl_unpark_result_t r = pl_unpark_one(&addr, cbrec_cb, &cb);
	cr_assert(cb.calls == 1, "callback called %u times on an empty queue",
	    cb.calls);
	cr_assert(cb.r.unparked == 0 && !cb.r.have_more,
	    "empty queue: callback saw unparked %zu have_more %d",
	    cb.r.unparked, cb.r.have_more);
	cr_assert(r.unparked == 0 && !r.have_more && r.requeued == 0);
	cr_assert(!r.be_fair, "be_fair reported with nobody parked");
	/* NULL callback is allowed. */
	r = pl_unpark_one(&addr, NULL, NULL);
	cr_assert(r.unparked == 0 && !r.have_more);
}

/* ------------------------------------------------------------------ */
/* 5. park tokens are visible to pl_unpark_filter                      */

Test(core, park_tokens_visible_in_fifo_order, .timeout = 30)
{
	enum { N = 5 };
	static char addr;
	const uintptr_t tokens[N] = { 0xdead, 7, UINTPTR_MAX, 0, 0x5555 };
	struct parker ps[N];
	for (size_t i = 0; i < N; i++)
		parker_setup(&ps[i], &addr, tokens[i]);
	park_in_order(ps, N, 0);

	uintptr_t seen[N + 4];
	size_t n = parked_tokens(&addr, seen, N + 4);
	cr_assert(n == N, "filter saw %zu threads", n);
	for (size_t i = 0; i < N; i++)
		cr_assert(seen[i] == tokens[i],
		    "position %zu: token %#lx, "
		    "expected %#lx",
		    i, (unsigned long)seen[i], (unsigned long)tokens[i]);

	/* Looking did not disturb anybody. */
	for (size_t i = 0; i < N; i++)
		cr_assert(!parker_done(&ps[i]));

	cr_assert(pl_unpark_all(&addr, 3) == N);
	join_unparked(ps, N, 3, 0, "parker");
}

/* ------------------------------------------------------------------ */
/* 6. pl_unpark_all                                                    */

Test(core, unpark_all_wakes_everyone, .timeout = 30)
{
	enum { N = 5 };
	static char addr, other;
	struct parker ps[N], bystander;
	parker_setup(&bystander, &other, 99);
	parker_start(&bystander);
	ASSERT_PARKED(&other, 1);
	park_queue(ps, N, &addr, 0);

	size_t n = pl_unpark_all(&addr, 0xabc);
	cr_assert(n == N, "pl_unpark_all returned %zu", n);
	join_unparked(ps, N, 0xabc, 0, "parker");
	cr_assert(pl_unpark_all(&addr, 0xabc) == 0,
	    "pl_unpark_all on an empty address is not 0");
	cr_assert(count_parked(&addr) == 0);

	/* The thread on another address was not touched. */
	cr_assert(!parker_done(&bystander));
	cr_assert(count_parked(&other) == 1);
	cr_assert(pl_unpark_all(&other, 4) == 1);
	parker_join(&bystander);
	assert_unparked_with(&bystander, 4, "bystander");
}

/* ------------------------------------------------------------------ */
/* 7. requeue                                                          */

struct rq {
	pl_requeue_op_t op;
	unsigned validate_calls, callback_calls;
	pl_requeue_op_t cb_op;
	pl_unpark_result_t cb_r;
	uintptr_t token;
};

static pl_requeue_op_t
rq_validate(void *ctx)
{
	struct rq *q = ctx;
	q->validate_calls++;
	return q->op;
}

static uintptr_t
rq_callback(pl_requeue_op_t op, pl_unpark_result_t r, void *ctx)
{
	struct rq *q = ctx;
	q->callback_calls++;
	q->cb_op = op;
	q->cb_r = r;
	return q->token;
}

/* pl_unpark_requeue from `from` to `to`, with q's validate and callback. */
static pl_unpark_result_t
requeue(const void *from, const void *to, struct rq *q)
{
	return pl_unpark_requeue(from, to, rq_validate, rq_callback, q);
}

static void
assert_result(pl_unpark_result_t r, size_t unparked, size_t requeued,
    bool have_more, const char *what)
{
	cr_assert(r.unparked == unparked, "%s: unparked %zu, expected %zu",
	    what, r.unparked, unparked);
	cr_assert(r.requeued == requeued, "%s: requeued %zu, expected %zu",
	    what, r.requeued, requeued);
	cr_assert(r.have_more == have_more, "%s: have_more %d, expected %d",
	    what, r.have_more, have_more);
}

/* Check the park tokens queued on addr, oldest first. */
static void
assert_queue(
    const void *addr, const uintptr_t *expect, size_t n, const char *what)
{
	uintptr_t seen[64];
	size_t got = parked_tokens(addr, seen, 64);
	cr_assert(got == n, "%s: %zu queued, expected %zu", what, got, n);
	for (size_t i = 0; i < n; i++)
		cr_assert(seen[i] == expect[i],
		    "%s: position %zu has token %#lx, expected %#lx", what, i,
		    (unsigned long)seen[i], (unsigned long)expect[i]);
}

/* None of the n parkers has returned from its park. */
static void
assert_still_parked(struct parker *ps, size_t n, const char *who)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(!parker_done(&ps[i]), "%s %zu returned", who, i);
}

/* Wake everybody on addr one at a time; the k-th wake gives token base+k. */
static void
unpark_sequentially(const void *addr, size_t n, uintptr_t base)
{
	for (size_t k = 0; k < n; k++) {
		struct cbrec cb = { .token = base + k };
		pl_unpark_result_t r = pl_unpark_one(addr, cbrec_cb, &cb);
		cr_assert(r.unparked == 1, "wake %zu found nobody", k);
		cr_assert(r.have_more == (k + 1 < n), "wake %zu: have_more %d",
		    k, r.have_more);
	}
}

Test(core, requeue_abort_moves_nothing, .timeout = 30)
{
	enum { N = 3 };
	static char from, to;
	struct parker ps[N];
	park_queue(ps, N, &from, 10);

	struct rq q = { .op = PL_REQUEUE_ABORT, .token = 77 };
	pl_unpark_result_t r = requeue(&from, &to, &q);
	cr_assert(q.validate_calls == 1, "validate called %u times",
	    q.validate_calls);
	cr_assert(q.callback_calls == 0, "callback called on ABORT");
	assert_result(r, 0, 0, false, "ABORT");
	cr_assert(!r.be_fair);
	const uintptr_t expect[N] = { 10, 11, 12 };
	assert_queue(&from, expect, N, "from after ABORT");
	assert_queue(&to, NULL, 0, "to after ABORT");
	assert_still_parked(ps, N, "parker");

	unpark_sequentially(&from, N, 500);
	join_unparked(ps, N, 500, 1, "parker");
}

Test(core, requeue_one_requeue_rest, .timeout = 30)
{
	/* Two already on `to`, four on `from`: the oldest of `from` is woken,
	 * the other three go behind the two, in their order. */
	static char from, to;
	struct parker on_to[2], on_from[4];
	park_queue(on_to, 2, &to, 0x20);
	park_queue(on_from, 4, &from, 0x10);

	struct rq q = { .op = PL_REQUEUE_ONE_REQUEUE_REST, .token = 0x77 };
	pl_unpark_result_t r = requeue(&from, &to, &q);
	cr_assert(q.validate_calls == 1 && q.callback_calls == 1,
	    "validate %u, callback %u calls", q.validate_calls,
	    q.callback_calls);
	cr_assert(q.cb_op == PL_REQUEUE_ONE_REQUEUE_REST, "callback op %d",
	    (int)q.cb_op);
	assert_result(q.cb_r, 1, 3, false, "callback's view");
	assert_result(r, 1, 3, false, "ONE_REQUEUE_REST");

	parker_join(&on_from[0]);
	assert_unparked_with(&on_from[0], 0x77, "oldest of from");

	assert_queue(&from, NULL, 0, "from");
	const uintptr_t expect[5] = { 0x20, 0x21, 0x11, 0x12, 0x13 };
	assert_queue(&to, expect, 5, "to");

	unpark_sequentially(&to, 5, 900);
	join_unparked(on_to, 2, 900, 1, "to");
	join_unparked(&on_from[1], 3, 902, 1, "requeued");
}

/*
 * One thread parked on `to`, then three on `from`; a pl_unpark_requeue
 * with op moves `requeued` of the three (the oldest first) behind the one
 * and wakes nobody.  Then the wakes on `to` hand out wake_to, wake_to + 1,
 * ... in queue order, and one pl_unpark_all gives those left on `from`
 * wake_from.
 */
struct rq_behind {
	pl_requeue_op_t op;
	uintptr_t token;     /* what the callback returns */
	uintptr_t on_to;     /* the park token of the one on to */
	uintptr_t on_from;   /* that of the oldest on from (then + 1, + 2) */
	size_t requeued;     /* the result, and the callback's view */
	bool have_more;      /* likewise */
	uintptr_t wake_to;   /* the first token of the wakes on to */
	uintptr_t wake_from; /* the token of those left on from */
	const char *what;
};

static void
requeue_behind_one(const struct rq_behind *c)
{
	static char from, to;
	struct parker on_to, on_from[3];
	park_queue(&on_to, 1, &to, c->on_to);
	park_queue(on_from, 3, &from, c->on_from);

	struct rq q = { .op = c->op, .token = c->token };
	pl_unpark_result_t r = requeue(&from, &to, &q);
	cr_assert(q.callback_calls == 1 && q.cb_op == c->op,
	    "callback called %u times, op %d", q.callback_calls, (int)q.cb_op);
	assert_result(q.cb_r, 0, c->requeued, c->have_more, "callback's view");
	assert_result(r, 0, c->requeued, c->have_more, c->what);
	assert_still_parked(on_from, 3, "parker on from");
	/* to: its own, then the moved ones in their order; from: the rest. */
	size_t left = 3 - c->requeued;
	uintptr_t on_to_now[4] = { c->on_to }, on_from_now[3];
	for (size_t i = 0; i < c->requeued; i++)
		on_to_now[1 + i] = c->on_from + i;
	for (size_t i = 0; i < left; i++)
		on_from_now[i] = c->on_from + c->requeued + i;
	assert_queue(&from, on_from_now, left, "from");
	assert_queue(&to, on_to_now, 1 + c->requeued, "to");

	unpark_sequentially(&to, 1 + c->requeued, c->wake_to);
	join_unparked(&on_to, 1, c->wake_to, 0, "to");
	join_unparked(on_from, c->requeued, c->wake_to + 1, 1, "requeued");
	if (left > 0) {
		cr_assert(pl_unpark_all(&from, c->wake_from) == left);
		join_unparked(&on_from[c->requeued], left, c->wake_from, 0,
		    "left on from");
	}
}

static const struct rq_behind requeue_all_case = { PL_REQUEUE_REQUEUE_ALL, 0x55,
	0x30, 0x40, 3, false, 300, 0, "REQUEUE_ALL" };
static const struct rq_behind requeue_one_case = { PL_REQUEUE_REQUEUE_ONE, 0x99,
	0x70, 0x80, 1, true, 40, 8, "REQUEUE_ONE" };

Test(core, requeue_all, .timeout = 30)
{
	requeue_behind_one(&requeue_all_case);
}

Test(core, requeue_requeue_one_moves_oldest, .timeout = 30)
{
	requeue_behind_one(&requeue_one_case);
}

Test(core, requeue_one_wakes_oldest_moves_none, .timeout = 30)
{
	static char from, to;
	struct parker ps[3];
	park_queue(ps, 3, &from, 0x60);

	struct rq q = { .op = PL_REQUEUE_ONE, .token = 0x66 };
	pl_unpark_result_t r = requeue(&from, &to, &q);
	cr_assert(q.callback_calls == 1 && q.cb_op == PL_REQUEUE_ONE);
	assert_result(q.cb_r, 1, 0, true, "callback's view");
	assert_result(r, 1, 0, true, "ONE with more");
	parker_join(&ps[0]);
	assert_unparked_with(&ps[0], 0x66, "oldest");
	const uintptr_t rest[2] = { 0x61, 0x62 };
	assert_queue(&from, rest, 2, "from");
	assert_queue(&to, NULL, 0, "to");

	/* Down to the last one: have_more false. */
	q = (struct rq){ .op = PL_REQUEUE_ONE, .token = 0x67 };
	r = requeue(&from, &to, &q);
	assert_result(r, 1, 0, true, "ONE, second");
	q = (struct rq){ .op = PL_REQUEUE_ONE, .token = 0x68 };
	r = requeue(&from, &to, &q);
	assert_result(q.cb_r, 1, 0, false, "callback's view of the last");
	assert_result(r, 1, 0, false, "ONE, last");
	join_unparked(&ps[1], 2, 0x67, 1, "second and third");

	/* Nobody left: callback still runs, nothing happens. */
	q = (struct rq){ .op = PL_REQUEUE_ONE, .token = 0x69 };
	r = requeue(&from, &to, &q);
	assert_result(r, 0, 0, false, "ONE on empty");
}

/* pl_unpark_requeue_token: validate sees the head, and the operation acts
 * on the threads with the head's token only. */
struct rqt {
	pl_requeue_op_t op;
	unsigned validate_calls;
	pl_requeue_head_t seen;
	const void *from, *to;
	struct parker ps[5]; /* queued on from, unless q is for an empty one */
};

static pl_requeue_op_t
rqt_validate(const pl_requeue_head_t *h, void *ctx)
{
	struct rqt *q = ctx;
	q->validate_calls++;
	q->seen = *h;
	return q->op;
}

/* Requeue by token from q's from to its to with op; the result must be
 * unparked, requeued and have_more (what says which call it was). */
static void
requeue_token(struct rqt *q, pl_requeue_op_t op, size_t unparked,
    size_t requeued, bool have_more, const char *what)
{
	q->op = op;
	pl_unpark_result_t r =
	    pl_unpark_requeue_token(q->from, q->to, rqt_validate, NULL, q);
	assert_result(r, unparked, requeued, have_more, what);
}

/* Two addresses, from and to, with nobody queued yet. */
static void
rqt_init(struct rqt *q)
{
	static char from, to;
	memset(q, 0, sizeof *q);
	q->from = &from;
	q->to = &to;
}

/* Queue five parkers on from, with the tokens A B A C A (oldest first). */
static void
rqt_queue(struct rqt *q)
{
	static const uintptr_t tok[5] = { 0xa, 0xb, 0xa, 0xc, 0xa };
	rqt_init(q);
	for (size_t i = 0; i < 5; i++)
		parker_setup(&q->ps[i], q->from, tok[i]);
	park_in_order(q->ps, 5, 0);
}

/* The tokens left on from and moved to to must be left[] and moved[];
 * then wake those on from (tokens 100, 101, ...), those on to (200, 201,
 * ...), and join every parker not joined yet. */
static void
rqt_finish(struct rqt *q, const uintptr_t *left, size_t n_left,
    const uintptr_t *moved, size_t n_moved)
{
	assert_queue(q->from, left, n_left, "from");
	assert_queue(q->to, moved, n_moved, "to");
	unpark_sequentially(q->from, n_left, 100);
	unpark_sequentially(q->to, n_moved, 200);
	for (size_t i = 0; i < 5; i++)
		parker_join(&q->ps[i]);
}

Test(core, requeue_token_empty_queue_shows_nothing, .timeout = 30)
{
	struct rqt q;
	rqt_init(&q);
	requeue_token(&q, PL_REQUEUE_REQUEUE_ALL, 0, 0, false, "empty");
	cr_assert(q.validate_calls == 1);
	cr_assert(q.seen.queued == 0 && q.seen.head_token == 0,
	    "validate saw %zu queued, head token %#lx", q.seen.queued,
	    (unsigned long)q.seen.head_token);
}

Test(core, requeue_token_all_moves_the_heads_token_only, .timeout = 30)
{
	/* Who was woken with which token at the end, A's having moved. */
	static const struct {
		size_t i;
		uintptr_t token;
		const char *who;
	} woken[5] = {
		{ 1, 100, "B stayed first on from" },
		{ 3, 101, "C stayed second on from" },
		{ 0, 200, "first A" },
		{ 2, 201, "second A" },
		{ 4, 202, "third A" },
	};
	static const uintptr_t left[2] = { 0xb, 0xc };
	static const uintptr_t moved[3] = { 0xa, 0xa, 0xa };
	struct rqt q;
	rqt_queue(&q);
	requeue_token(
	    &q, PL_REQUEUE_REQUEUE_ALL, 0, 3, true, "REQUEUE_ALL by token");
	cr_assert(q.seen.queued == 5 && q.seen.head_token == 0xa,
	    "validate saw %zu queued, head token %#lx", q.seen.queued,
	    (unsigned long)q.seen.head_token);
	rqt_finish(&q, left, 2, moved, 3);
	for (size_t k = 0; k < 5; k++)
		assert_unparked_with(
		    &q.ps[woken[k].i], woken[k].token, woken[k].who);
}

Test(core, requeue_token_one_requeue_rest_wakes_head, .timeout = 30)
{
	static const uintptr_t left[2] = { 0xb, 0xc }, moved[2] = { 0xa, 0xa };
	struct rqt q;
	rqt_queue(&q);
	requeue_token(&q, PL_REQUEUE_ONE_REQUEUE_REST, 1, 2, true,
	    "ONE_REQUEUE_REST by token");
	parker_join(&q.ps[0]);
	assert_unparked_with(&q.ps[0], PL_UNPARK_TOKEN_DEFAULT, "head");
	rqt_finish(&q, left, 2, moved, 2);
	assert_unparked_with(&q.ps[2], 200, "second A");
	assert_unparked_with(&q.ps[4], 201, "third A");
}

Test(core, requeue_token_abort_and_single_ops, .timeout = 30)
{
	static const uintptr_t left[3] = { 0xa, 0xc, 0xa }, moved[1] = { 0xa };
	struct rqt q;
	rqt_queue(&q);
	requeue_token(&q, PL_REQUEUE_ABORT, 0, 0, false, "ABORT");
	requeue_token(&q, PL_REQUEUE_REQUEUE_ONE, 0, 1, true, "REQUEUE_ONE");
	/* Now B heads from: the next one acts on B. */
	requeue_token(&q, PL_REQUEUE_ONE, 1, 0, true, "ONE");
	cr_assert(q.seen.queued == 4 && q.seen.head_token == 0xb);
	parker_join(&q.ps[1]);
	rqt_finish(&q, left, 3, moved, 1);
	assert_unparked_with(&q.ps[0], 200, "moved A");
}

Test(core, requeue_null_validate_is_one_requeue_rest, .timeout = 30)
{
	static char from, to;
	struct parker ps[3];
	park_queue(ps, 3, &from, 0x90);
	pl_unpark_result_t r = pl_unpark_requeue(&from, &to, NULL, NULL, NULL);
	assert_result(r, 1, 2, false, "NULL validate");
	parker_join(&ps[0]);
	cr_assert(ps[0].res.status == PL_PARK_UNPARKED);
	const uintptr_t expect[2] = { 0x91, 0x92 };
	assert_queue(&to, expect, 2, "to");
	cr_assert(pl_unpark_all(&to, 1) == 2);
	parker_join(&ps[1]);
	parker_join(&ps[2]);
}

Test(core, requeued_thread_times_out_on_target, .timeout = 30)
{
	static char from, to;
	struct parker p;
	parker_start_timed(&p, &from, 0xa0, 1 * TU_SEC);
	ASSERT_PARKED(&from, 1);

	struct rq q = { .op = PL_REQUEUE_REQUEUE_ALL };
	pl_unpark_result_t r = requeue(&from, &to, &q);
	cr_assert(r.requeued == 1,
	    "requeued %zu: did the thread time out within a second?",
	    r.requeued);
	cr_assert(count_parked(&to) == 1 && count_parked(&from) == 0);

	parker_join(&p);
	cr_assert(
	    p.res.status == PL_PARK_TIMED_OUT, "status %d", (int)p.res.status);
	cr_assert(p.calls.timed_out == 1);
	cr_assert(p.calls.timed_out_addr == &to,
	    "timed_out saw %p, expected the target %p (from is %p)",
	    p.calls.timed_out_addr, (void *)&to, (void *)&from);
	cr_assert(p.calls.was_last);
	cr_assert(p.returned_ns >= tu_ts_to_ns(&p.deadline));
	cr_assert(count_parked(&to) == 0);
}

/* ------------------------------------------------------------------ */
/* 8. pl_unpark_filter with SKIP and STOP                              */

/* The filter's and the callback's ctx (pl_unpark_filter passes one to
 * both): cb comes first, so that a pointer to a filt is also one to it. */
struct filt {
	struct cbrec cb; /* the callback, which wakes with token 0x77 */
	unsigned filter_calls;
	uintptr_t seen[16];
};

/* Wake odd tokens, skip even ones, stop at token 5. */
static pl_filter_op_t
odd_until_five(uintptr_t tok, void *ctx)
{
	struct filt *f = ctx;
	if (f->filter_calls < 16)
		f->seen[f->filter_calls] = tok;
	f->filter_calls++;
	if (tok == 5)
		return PL_FILTER_STOP;
	return (tok & 1) ? PL_FILTER_UNPARK : PL_FILTER_SKIP;
}

/* pl_unpark_filter with odd_until_five, and f's callback. */
static pl_unpark_result_t
filter_odd_until_five(const void *addr, struct filt *f)
{
	*f = (struct filt){ .cb = { .token = 0x77 } };
	return pl_unpark_filter(addr, odd_until_five, cbrec_cb, f);
}

Test(core, unpark_filter_skip_and_stop, .timeout = 30)
{
	enum { N = 6 };
	static char addr;
	struct parker ps[N];
	park_queue(ps, N, &addr, 1); /* park tokens 1..6 */

	struct filt f;
	pl_unpark_result_t r = filter_odd_until_five(&addr, &f);
	cr_assert(f.filter_calls == 5,
	    "filter called %u times, expected 5 "
	    "(tokens 1..5, stop at 5)",
	    f.filter_calls);
	for (unsigned i = 0; i < 5; i++)
		cr_assert(f.seen[i] == i + 1, "filter call %u saw token %lu", i,
		    (unsigned long)f.seen[i]);
	cr_assert(f.cb.calls == 1, "callback called %u times", f.cb.calls);
	assert_result(f.cb.r, 2, 0, true, "callback's view");
	assert_result(r, 2, 0, true, "filter");

	for (size_t i = 0; i <= 2; i += 2) { /* tokens 1 and 3 */
		parker_join(&ps[i]);
		assert_unparked_with(&ps[i], 0x77, "odd token");
	}
	const uintptr_t rest[4] = { 2, 4, 5, 6 };
	assert_queue(&addr, rest, 4, "after filter");
	for (size_t i = 0; i < N; i++)
		if (i != 0 && i != 2)
			cr_assert(
			    !parker_done(&ps[i]), "token %zu woke", i + 1);

	unpark_sequentially(&addr, 4, 600);
	const size_t order[4] = { 1, 3, 4, 5 };
	for (size_t k = 0; k < 4; k++) {
		parker_join(&ps[order[k]]);
		assert_unparked_with(&ps[order[k]], 600 + k, "remaining");
	}

	/* On an empty address the callback still runs once. */
	r = filter_odd_until_five(&addr, &f);
	cr_assert(f.filter_calls == 0 && f.cb.calls == 1);
	assert_result(r, 0, 0, false, "filter on empty");
}

/* ------------------------------------------------------------------ */
/* 9. be_fair                                                          */

Test(core, be_fair_follows_the_fairness_interval, .timeout = 30)
{
	static char addr;
	struct pl_tuning saved, t;
	pl_tuning_get(&saved);

	/* Interval 0: every unpark that finds a thread must hand off. */
	t = tu_tuning_fair_interval(&saved, 0);
	cr_assert(t.fair_interval_us == 0, "tuning did not take 0");
	cr_assert(t.spin_limit == saved.spin_limit &&
	    t.yield_limit == saved.yield_limit);

	struct parker ps[3];
	park_queue(ps, 3, &addr, 0);
	for (size_t k = 0; k < 3; k++) {
		struct cbrec cb = { .token = k };
		pl_unpark_result_t r = pl_unpark_one(&addr, cbrec_cb, &cb);
		cr_assert(r.unparked == 1);
		cr_assert(cb.r.be_fair,
		    "[%zu] callback saw be_fair false with "
		    "a zero fairness interval",
		    k);
		cr_assert(
		    r.be_fair, "[%zu] be_fair false with a zero interval", k);
	}
	join_unparked(ps, 3, 0, 1, "parker");
	struct cbrec cb = { 0 };
	pl_unpark_result_t r = pl_unpark_one(&addr, cbrec_cb, &cb);
	cr_assert(!r.be_fair && !cb.r.be_fair,
	    "be_fair reported although nobody was parked");

	/* Interval 10 s: the bucket's deadline expired under the 0 interval,
	 * so the first unpark hands off and moves it up to 10 s ahead; the
	 * second, right after, must not. */
	t = tu_tuning_fair_interval(&saved, 10 * 1000 * 1000);
	cr_assert(t.fair_interval_us == 10 * 1000 * 1000);
	struct parker qs[2];
	park_queue(qs, 2, &addr, 0);
	struct cbrec c1 = { .token = 1 }, c2 = { .token = 2 };
	pl_unpark_result_t r1 = pl_unpark_one(&addr, cbrec_cb, &c1);
	pl_unpark_result_t r2 = pl_unpark_one(&addr, cbrec_cb, &c2);
	cr_assert(r1.unparked == 1 && r2.unparked == 1);
	cr_assert(r1.be_fair && c1.r.be_fair,
	    "first unpark after an expired deadline: be_fair false");
	cr_assert(!r2.be_fair && !c2.r.be_fair,
	    "second quick unpark with a 10 s interval: be_fair true "
	    "(the deadline did not move forward)");
	join_unparked(qs, 2, 1, 1, "parker");

	pl_tuning_set(&saved);
	pl_tuning_get(&t);
	cr_assert(t.spin_limit == saved.spin_limit &&
	        t.yield_limit == saved.yield_limit &&
	        t.fair_interval_us == saved.fair_interval_us,
	    "tuning not restored");
}

/* A queue deeper than the lot's fairness depth (128 waiters) shares the
 * interval: an expiry moves the deadline at most interval x 128 / len
 * ahead (lib/parkinglot.c, fair_due).  With 256 waiters and a 200 ms
 * interval it moves at most 110 ms ahead while the queue stays above 232,
 * so an unpark 120 ms after the one before always finds it expired.  With
 * the whole interval each would, by chance, 3 times in 5: all 23 in a
 * row, about once in 100,000 runs.  The waits are what is tested: no
 * thread is waited for. */
Test(core, deep_queue_shares_the_fairness_interval, .timeout = 60)
{
	enum { N = 256, ROUNDS = 24 };
	static char addr;
	static struct parker ps[N];
	struct pl_tuning saved, t;
	pl_tuning_get(&saved);
	t = tu_tuning_fair_interval(&saved, 200 * 1000);
	cr_assert(t.fair_interval_us == 200 * 1000);

	park_queue(ps, N, &addr, 0);
	unsigned fair = 0;
	for (unsigned k = 0; k < ROUNDS; k++) {
		struct cbrec cb = { .token = k };
		pl_unpark_result_t r = pl_unpark_one(&addr, cbrec_cb, &cb);
		cr_assert(r.unparked == 1 && r.have_more);
		cr_assert(r.be_fair == cb.r.be_fair);
		/* The first expiry sets the deadline; each after it counts. */
		if (k > 0)
			fair += r.be_fair;
		const struct timespec pause = { 0, 120 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	cr_assert(fair == ROUNDS - 1,
	    "%u of %u unparks, each 120 ms after the one before, found the "
	    "timer of a queue of %d expired; the deadline moved further "
	    "than 200 ms x 128 / len",
	    fair, ROUNDS - 1, N);

	join_unparked(ps, ROUNDS, 0, 1, "woken");
	cr_assert(pl_unpark_all(&addr, 0x5a) == N - ROUNDS);
	join_unparked(ps + ROUNDS, N - ROUNDS, 0x5a, 0, "the rest");
	pl_tuning_set(&saved);
}

/* ------------------------------------------------------------------ */
/* 10. table growth with threads parked                                */

/* Create this thread's per-thread record (and the table) by parking
 * with a deadline long past. */
static bool
warm_up_park(void)
{
	static char warm;
	const struct timespec zero = { 0, 0 };
	return pl_park(&warm, NULL, NULL, NULL, NULL, 0, &zero).status ==
	    PL_PARK_TIMED_OUT;
}

Test(core, table_grows_under_256_parked_threads, .timeout = 60)
{
	enum { N = 256 };
	static uintptr_t slots[N];
	static struct parker ps[N];

	cr_assert(warm_up_park());
	size_t buckets_before = pli_lot_buckets();
	size_t live_before = pli_lot_live_threads();
	cr_assert(buckets_before > 0);
	cr_assert(live_before >= 1, "this thread parked but is not counted");

	for (size_t i = 0; i < N; i++) {
		parker_setup(&ps[i], &slots[i], i);
		parker_start(&ps[i]);
	}
	for (size_t i = 0; i < N; i++)
		ASSERT_PARKED(&slots[i], 1);

	size_t live = pli_lot_live_threads();
	size_t buckets = pli_lot_buckets();
	cr_assert(live == live_before + N, "live threads %zu, expected %zu",
	    live, live_before + N);
	cr_assert(buckets > buckets_before,
	    "table did not grow: %zu buckets before and after %d threads",
	    buckets, N);
	cr_assert(buckets * 3 >= live,
	    "%zu buckets for %zu threads: more than 3 per bucket", buckets,
	    live);
	/* Every thread is still where it parked, each alone. */
	for (size_t i = 0; i < N; i++) {
		uintptr_t tok = 0;
		size_t n = parked_tokens(&slots[i], &tok, 1);
		cr_assert(n == 1 && tok == i, "slot %zu: %zu parked, token %lu",
		    i, n, (unsigned long)tok);
	}

	for (size_t i = 0; i < N; i++) {
		struct cbrec cb = { .token = 5000 + i };
		pl_unpark_result_t r = pl_unpark_one(&slots[i], cbrec_cb, &cb);
		cr_assert(r.unparked == 1 && !r.have_more,
		    "slot %zu: unparked %zu have_more %d", i, r.unparked,
		    r.have_more);
	}
	join_unparked(ps, N, 5000, 1, "slot parker");
	cr_assert(pli_lot_live_threads() == live_before,
	    "live threads %zu after joining, expected %zu",
	    pli_lot_live_threads(), live_before);
}

/* ------------------------------------------------------------------ */
/* 11. colliding addresses do not disturb each other                   */

struct warm_group {
	int go;        /* atomic: set once the addresses are published */
	size_t warmed; /* atomic: threads that made their record */
};

struct warm_parker {
	struct parker p;
	struct warm_group *g;
};

/* Make the per-thread record first, so that the table no longer grows;
 * then wait for the address and park. */
static void *
warm_then_park_main(void *arg)
{
	struct warm_parker *w = arg;
	bool ok = warm_up_park();
	__atomic_fetch_add(&w->g->warmed, 1, __ATOMIC_ACQ_REL);
	if (!ok || !tu_wait_int_eq(&w->g->go, 1, TU_WAIT_NS)) {
		w->p.res.status = (pl_park_status_t)-1;
		__atomic_store_n(&w->p.done, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	return parker_main(&w->p);
}

static void
warm_start(struct warm_parker *w, struct warm_group *g, uintptr_t token)
{
	parker_setup(&w->p, NULL, token);
	w->g = g;
	w->p.thread = tu_spawn(warm_then_park_main, w);
}

static uintptr_t candidates[16384];

/* An address other than avoid in the same bucket as target. */
static const void *
find_colliding(const void *target, const void *avoid)
{
	size_t b = pli_lot_bucket_of(target);
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]);
	     i++) {
		const void *c = &candidates[i];
		if (c != target && c != avoid && pli_lot_bucket_of(c) == b)
			return c;
	}
	return NULL;
}

Test(core, colliding_address_wakes_only_its_own, .timeout = 30)
{
	enum { NA = 32 };
	static uintptr_t a_word;
	static struct warm_parker on_a[NA], on_b;
	struct warm_group ga = { 0 }, gb = { 0 };

	cr_assert(warm_up_park());
	for (size_t i = 0; i < NA; i++)
		warm_start(&on_a[i], &ga, i);
	warm_start(&on_b, &gb, 0xb);
	cr_assert(tu_wait_size_ge(&ga.warmed, NA, TU_WAIT_NS));
	cr_assert(tu_wait_size_ge(&gb.warmed, 1, TU_WAIT_NS));

	/* Every thread has its record: the table is final. */
	size_t buckets = pli_lot_buckets();
	const void *a = &a_word;
	const void *b = find_colliding(a, NULL);
	cr_assert(b != NULL, "no address collides with A among %zu",
	    sizeof(candidates) / sizeof(candidates[0]));

	for (size_t i = 0; i < NA; i++)
		on_a[i].p.addr = a;
	on_b.p.addr = b;
	__atomic_store_n(&ga.go, 1, __ATOMIC_RELEASE);
	ASSERT_PARKED(a, NA);
	__atomic_store_n(&gb.go, 1, __ATOMIC_RELEASE);
	ASSERT_PARKED(b, 1);

	cr_assert(pli_lot_buckets() == buckets, "the table grew meanwhile");
	cr_assert(pli_lot_bucket_of(a) == pli_lot_bucket_of(b),
	    "A and B no longer share a bucket");

	struct cbrec cb = { .token = 0xbeef };
	pl_unpark_result_t r = pl_unpark_one(b, cbrec_cb, &cb);
	cr_assert(cb.calls == 1);
	assert_result(cb.r, 1, 0, false, "callback's view of B");
	assert_result(r, 1, 0, false, "unpark B");
	parker_join(&on_b.p);
	assert_unparked_with(&on_b.p, 0xbeef, "B's thread");

	cr_assert(count_parked(a) == NA, "A has %zu parked, expected %d",
	    count_parked(a), NA);
	for (size_t i = 0; i < NA; i++)
		cr_assert(!parker_done(&on_a[i].p), "A's thread %zu woke", i);
	cr_assert(count_parked(b) == 0);

	/* And the other way round: waking one of A leaves B's queue empty
	 * and reports A's remaining threads. */
	memset(&cb, 0, sizeof(cb));
	cb.token = 0xa0;
	r = pl_unpark_one(a, cbrec_cb, &cb);
	assert_result(r, 1, 0, true, "unpark one of A");
	cr_assert(count_parked(a) == NA - 1);
	cr_assert(pl_unpark_all(a, 0xa1) == NA - 1);
	/* A's threads parked in no particular order: exactly one of them
	 * got the first token. */
	size_t first = 0;
	for (size_t i = 0; i < NA; i++) {
		parker_join(&on_a[i].p);
		cr_assert(on_a[i].p.res.status == PL_PARK_UNPARKED);
		if (on_a[i].p.res.token == 0xa0)
			first++;
		else
			assert_unparked_with(&on_a[i].p, 0xa1, "A's thread");
	}
	cr_assert(
	    first == 1, "%zu threads got the single unpark's token", first);
}

/* ------------------------------------------------------------------ */
/* 12. fork with threads parked                                        */

static pl_mutex_t fork_mutex = PL_MUTEX_INITIALIZER;
static long fork_counter;

#ifndef __SANITIZE_THREAD__ /* only started where TSan is not in use */
static void *
fork_child_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 50000; i++) {
		pl_mutex_lock(&fork_mutex);
		fork_counter++;
		pl_mutex_unlock(&fork_mutex);
	}
	return NULL;
}
#endif

/* Runs in the child; returns its exit status (0: all good). */
static int
fork_child(const void *x)
{
	tu_child_watchdog(20);

	if (pl_unpark_all(x, 1) != 0)
		return 10;
	if (count_parked(x) != 0)
		return 11;

	struct park_calls c = { .validate_ret = true };
	struct timespec dl = tu_deadline_in(20 * TU_MS);
	pl_park_result_t r =
	    pl_park(x, calls_validate, NULL, calls_timed_out, &c, 0, &dl);
	if (r.status != PL_PARK_TIMED_OUT)
		return 12;
	if (c.timed_out != 1 || !c.was_last || c.timed_out_addr != x)
		return 13;
	if (!tu_reached(&dl))
		return 14;

	if (pl_mutex_is_locked(&fork_mutex))
		return 15;
#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer cannot start threads in the child of a process
	 * that had several ("dup thread with used id"), so under TSan the
	 * child checks the mutex from its one thread; the normal and ASan
	 * builds run the contended check below. */
	pl_mutex_lock(&fork_mutex);
	if (pl_mutex_trylock(&fork_mutex))
		return 16;
	pl_mutex_unlock(&fork_mutex);
	fork_counter = 100000;
#else
	pl_mutex_lock(&fork_mutex);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (tu_spawn_raw(&t[i], fork_child_worker, NULL) != 0)
			return 16;
	/* Both new threads must queue behind the lock this thread holds. */
	if (!wait_parked(&fork_mutex, 2, TU_WAIT_NS))
		return 17;
	pl_mutex_unlock(&fork_mutex);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
#endif
	if (fork_counter != 100000)
		return 18;
	if (__atomic_load_n(&fork_mutex.state, __ATOMIC_RELAXED) != 0)
		return 19;
	if (count_parked(&fork_mutex) != 0)
		return 20;
	return 0;
}

Test(core, fork_with_parked_threads, .timeout = 60)
{
	enum { N = 4 };
	static char x;
	struct parker ps[N];

	/* The mutex has been used (contended paths initialised) but is free
	 * at the fork. */
	pl_mutex_lock(&fork_mutex);
	pl_mutex_unlock(&fork_mutex);

	park_queue(ps, N, &x, 0);

	fflush(NULL);
	pid_t pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(fork_child(&x));

	int status = 0;
	bool exited = tu_waitpid_bounded(pid, &status, 30 * TU_SEC);
	cr_assert(exited, "the child hung (killed after 30 s)");
	cr_assert(!WIFSIGNALED(status), "the child died of signal %d%s",
	    WIFSIGNALED(status) ? WTERMSIG(status) : 0,
	    WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
	        ? " (watchdog: it hung)"
	        : "");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "the child failed check %d (see fork_child)", WEXITSTATUS(status));

	/* The parent's threads are untouched by all that. */
	cr_assert(count_parked(&x) == N);
	cr_assert(pl_unpark_all(&x, 0x4) == N);
	join_unparked(ps, N, 0x4, 0, "parent's parker");
	cr_assert(fork_counter == 0);
}

/* ------------------------------------------------------------------ */
/* 13. per-thread records are released at thread exit and reused     */

Test(core, thread_exit_frees_per_thread_record, .timeout = 30)
{
	enum { N = 8 };
	static char addr;
	/* Any lazy initialisation by this thread happens before `before`. */
	(void)count_parked(&addr);
	size_t before = pli_lot_live_threads();
	size_t spare0 = pli_lot_spare_records(), records0 = 0;

	for (int round = 0; round < 3; round++) {
		struct parker ps[N];
		for (size_t i = 0; i < N; i++) {
			parker_setup(&ps[i], &addr, i);
			parker_start(&ps[i]);
		}
		ASSERT_PARKED(&addr, N);
		size_t during = pli_lot_live_threads();
		cr_assert(during == before + N,
		    "round %d: %zu live threads with %d parked, expected %zu",
		    round, during, N, before + N);
		cr_assert(pl_unpark_all(&addr, 0) == N);
		for (size_t i = 0; i < N; i++)
			parker_join(&ps[i]);
		/* pthread_join returns after the thread's key destructors. */
		size_t after = pli_lot_live_threads();
		cr_assert(after == before,
		    "round %d: %zu live threads after join, expected %zu",
		    round, after, before);
		/* Their records wait for the next threads, which take them
		 * before allocating: every record allocated is either held
		 * by a live thread or spare, the first round's threads
		 * allocated at most the blocks they needed, and the later
		 * rounds allocated none. */
		size_t spare = pli_lot_spare_records();
		size_t records = pli_lot_records();
		cr_assert(spare + after == records,
		    "round %d: %zu spare + %zu live records, %zu allocated",
		    round, spare, after, records);
		cr_assert(spare >= N, "round %d: %zu spare records, %d exited",
		    round, spare, N);
		if (round == 0)
			records0 = records;
		cr_assert(records == records0,
		    "round %d: %zu records allocated, %zu after round 0", round,
		    records, records0);
		cr_assert(records0 < spare0 + before + N + PLI_RECORD_BLOCK,
		    "%zu records allocated for %zu + %d threads, %zu spare "
		    "before",
		    records0, before, N, spare0);
	}

	/* Threads whose only park timed out are freed as well. */
	struct parker t;
	parker_start_timed(&t, &addr, 0, 0);
	parker_join(&t);
	cr_assert(t.res.status == PL_PARK_TIMED_OUT);
	cr_assert(pli_lot_live_threads() == before);
}

/* ------------------------------------------------------------------ */
/* 14. before_sleep may call into the lot                              */

struct bs_ctx {
	const void *other;
	unsigned seq, validate_at, before_sleep_at;
	struct cbrec cb; /* the callback of the unpark in before_sleep */
};

static bool
bs_validate(void *ctx)
{
	struct parker *p = ctx;
	struct bs_ctx *b = (struct bs_ctx *)(uintptr_t)p->park_token;
	b->validate_at = ++b->seq;
	return true;
}

static void
bs_unpark_other(void *ctx)
{
	struct parker *p = ctx;
	struct bs_ctx *b = (struct bs_ctx *)(uintptr_t)p->park_token;
	b->before_sleep_at = ++b->seq;
	/* Would deadlock if the bucket (shared with `other`) were locked. */
	pl_unpark_one(b->other, cbrec_cb, &b->cb);
}

static void
bs_unpark_self(void *ctx)
{
	struct bs_ctx *b = ctx;
	b->before_sleep_at = ++b->seq;
	pl_unpark_one(b->other, cbrec_cb, &b->cb);
}

Test(core, before_sleep_may_unpark, .timeout = 30)
{
	static char x;
	struct warm_group g1 = { 0 }, g2 = { 0 };
	static struct warm_parker p1, p2;
	struct bs_ctx b = { .cb = { .token = 42 } };

	cr_assert(warm_up_park());
	warm_start(&p1, &g1, 0x1);
	/* p2's park token carries its context (the parker is the ctx). */
	warm_start(&p2, &g2, (uintptr_t)&b);
	p2.p.validate = bs_validate;
	p2.p.before_sleep = bs_unpark_other;
	cr_assert(tu_wait_size_ge(&g1.warmed, 1, TU_WAIT_NS));
	cr_assert(tu_wait_size_ge(&g2.warmed, 1, TU_WAIT_NS));

	/* Y shares X's bucket, so a before_sleep run with the bucket locked
	 * would deadlock on it. */
	size_t buckets = pli_lot_buckets();
	const void *y = find_colliding(&x, NULL);
	cr_assert(y != NULL);
	b.other = y;
	p1.p.addr = y;
	p2.p.addr = &x;
	__atomic_store_n(&g1.go, 1, __ATOMIC_RELEASE);
	ASSERT_PARKED(y, 1);
	__atomic_store_n(&g2.go, 1, __ATOMIC_RELEASE);

	/* p2's before_sleep wakes p1. */
	parker_join(&p1.p);
	assert_unparked_with(&p1.p, 42, "thread on Y");
	ASSERT_PARKED(&x, 1);
	cr_assert(pli_lot_buckets() == buckets);
	cr_assert(pli_lot_bucket_of(&x) == pli_lot_bucket_of(y));
	cr_assert(b.cb.calls == 1 && b.cb.r.unparked == 1 && !b.cb.r.have_more);
	cr_assert(b.validate_at == 1 && b.before_sleep_at == 2,
	    "validate ran %u-th, before_sleep %u-th", b.validate_at,
	    b.before_sleep_at);

	struct cbrec cb = { .token = 7 };
	pl_unpark_result_t r = pl_unpark_one(&x, cbrec_cb, &cb);
	cr_assert(r.unparked == 1 && !r.have_more);
	parker_join(&p2.p);
	assert_unparked_with(&p2.p, 7, "thread on X");

	/* before_sleep may even wake the very thread about to sleep (the
	 * same race as any unpark between enqueue and sleep): pl_park must
	 * then return at once with that token. */
	static char z;
	struct bs_ctx s = { .other = &z, .cb = { .token = 99 } };
	struct timespec dl = tu_deadline_in(5 * TU_SEC);
	pl_park_result_t pr =
	    pl_park(&z, NULL, bs_unpark_self, NULL, &s, 0, &dl);
	cr_assert(s.cb.calls == 1 && s.cb.r.unparked == 1,
	    "before_sleep did not find its own thread queued");
	cr_assert(pr.status == PL_PARK_UNPARKED && pr.token == 99,
	    "self-unpark from before_sleep lost: status %d token %lu",
	    (int)pr.status, (unsigned long)pr.token);
	cr_assert(count_parked(&z) == 0);
}

/* ------------------------------------------------------------------ */
/* Allocation failure: parking still works without a per-thread record. */

static bool
fail_every_allocation(size_t size)
{
	(void)size;
	return true;
}

Test(core, park_works_when_allocation_fails, .timeout = 30)
{
	enum { N = 4 };
	static char addr;
	(void)count_parked(&addr);
	size_t live0 = pli_lot_live_threads();
	pli_alloc_fail_hook = fail_every_allocation; /* before the threads */

	struct parker ps[N];
	park_queue(ps, N, &addr, 0x10);
	cr_assert(pli_lot_live_threads() == live0,
	    "%zu live threads although no record could be allocated",
	    pli_lot_live_threads());
	const uintptr_t expect[N] = { 0x10, 0x11, 0x12, 0x13 };
	assert_queue(&addr, expect, N, "fallback waiters");
	unpark_sequentially(&addr, N, 70);
	join_unparked(ps, N, 70, 1, "fallback waiter");

	/* A timed park without a record times out correctly too. */
	struct parker t;
	parker_start_timed(&t, &addr, 0, 10 * TU_MS);
	parker_join(&t);
	cr_assert(t.res.status == PL_PARK_TIMED_OUT && t.calls.timed_out == 1 &&
	    t.calls.was_last);
	cr_assert(t.returned_ns >= tu_ts_to_ns(&t.deadline));

	pli_alloc_fail_hook = NULL;
	cr_assert(pli_lot_live_threads() == live0);
}
