/*
 * once.pml: the once of lib/futex.h (pli_once_claim, pli_once_done,
 * pli_once_wait), as the statistics page's creation uses it
 * (pli_counters_create, lib/stats.c; the tuning's refinement is the same
 * once), checked with spin (model/check.sh).
 *
 * N threads make the first count of a process together.  The word:
 *
 *     0  NONE     1  RUNNING (the page being mapped)     2  DONE
 *
 * The thread whose CAS moves it from NONE maps the page, publishes it
 * (the release store of pli_counters_v), stores DONE and wakes every
 * sleeper (FUTEX_WAKE, INT_MAX).  Every other thread loads the word and,
 * until it is DONE, sleeps with FUTEX_WAIT on the value it loaded, which
 * returns at once if the word has changed.  The futex is modelled as the
 * kernel gives it: the compare and the sleep are one step, a wake makes
 * every sleeper on the word runnable.  Spurious wakes are not modelled:
 * the loop reloads the word after any return, so they only add
 * iterations.
 *
 * Properties (one safety run; spin also reports invalid end states):
 *   - one page: only one thread maps;
 *   - every thread returns with the page published;
 *   - no thread sleeps forever (an invalid end state).
 * Not modelled: fork (the child, its only thread, moves RUNNING back to
 * NONE, pli_once_forked), and the mapping's failure (the static page is
 * published instead, the same steps).
 *
 * Broken variants, each must be caught (model/check.sh):
 *   BROKEN=1  the mapper stores DONE and wakes nobody.
 *   BROKEN=2  the mapper wakes before it stores DONE: a thread that
 *             sleeps in between, on RUNNING, sleeps on.
 *   BROKEN=3  the old creation: every thread that loads no page maps
 *             one and publishes it by CAS, unmapping it if it lost.
 *   BROKEN=4  a waiter returns once the word is not NONE, before the
 *             page is published.
 */

#ifndef N
#define N 3
#endif

#define NONE 0
#define RUNNING 1
#define DONE 2

byte state;      /* the once's word */
bool published;  /* pli_counters_v != NULL */
byte mapped;     /* pages mapped (the old code unmapped the losers') */
byte kept;       /* pages mapped and not unmapped again */
bool sleeping[N];
byte done;

inline futex_wait(val, me)
{
	atomic {
		if
		:: state == val -> sleeping[me] = true
		:: else -> skip
		fi
	}
	!sleeping[me]
}

inline futex_wake_all()
{
	atomic {
		byte i;
		for (i : 0 .. N - 1) {
			sleeping[i] = false
		}
	}
}

proctype thread(byte me)
{
	byte s;
#if BROKEN == 3
	/* The old creation: map if no page is published yet. */
	if
	:: !published ->
		mapped++;
		kept++;
		atomic {
			if
			:: !published -> published = true
			:: else -> kept-- /* lost the CAS: unmap */
			fi
		}
	:: else -> skip
	fi;
#else
	/* pli_once_claim */
	atomic {
		s = state;
		if
		:: state == NONE -> state = RUNNING
		:: else -> skip
		fi
	}
	if
	:: s == NONE ->
		/* The mapper, then pli_once_done. */
		mapped++;
		kept++;
		published = true;
#if BROKEN == 1
		state = DONE
#elif BROKEN == 2
		futex_wake_all();
		state = DONE
#else
		state = DONE;
		futex_wake_all()
#endif
	:: else ->
		/* pli_once_wait */
		do
		:: s = state;
			if
			:: s == DONE -> break
#if BROKEN == 4
			:: s != DONE -> break
#endif
			:: s != DONE -> futex_wait(s, me)
			fi
		od
	fi;
#endif
	assert(published);
	done++
}

init {
	byte i;
	atomic {
		for (i : 0 .. N - 1) {
			run thread(i)
		}
	}
	(done == N);
	assert(kept == 1);
	assert(mapped == 1)
}
