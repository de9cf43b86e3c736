/*
 * once.pml: the once that maps the statistics page, pli_counters_create
 * of lib/stats.c, checked with spin (model/check.sh).
 *
 * N threads make the first count of a process together.  create_state:
 *
 *     0  no page yet         1  being mapped
 *     2  being mapped, and a thread may sleep on the word
 *     3  published
 *
 * The mapper moves it 0 -> 1 by CAS, maps the page, publishes it (the
 * release store of pli_counters_v) and exchanges the state to 3, waking
 * every sleeper (FUTEX_WAKE, INT_MAX) if the exchange returned 2.  Every
 * other thread loops until it loads 3: seeing 1 it CASes 1 -> 2 and, if
 * that worked or it saw 2, sleeps with FUTEX_WAIT(2), which returns at
 * once if the word is no longer 2.  The futex is modelled as the kernel
 * gives it: the compare and the sleep are one step, a wake makes every
 * sleeper on the word runnable.  Spurious wakes are not modelled: the
 * loop reloads the word after any return, so they only add iterations.
 *
 * Properties (one safety run; spin also reports invalid end states):
 *   - one page: only one thread maps;
 *   - every thread returns with the page published;
 *   - no thread sleeps forever (an invalid end state).
 * Not modelled: fork (the child, its only thread, sets the state to 0,
 * or to 3 if the page was published, pli_stats_fork_child), and the
 * mapping's failure (the static page is published instead, the same
 * steps).
 *
 * Broken variants, each must be caught (model/check.sh):
 *   BROKEN=1  the mapper stores 3 and wakes only if a load before the
 *             store saw 2: a waiter that sets 2 in between sleeps on.
 *   BROKEN=2  a waiter sleeps on 1 without marking the word 2: the
 *             mapper's exchange sees 1 and wakes nobody.
 *   BROKEN=3  the old creation: every thread that loads no page maps
 *             one and publishes it by CAS, unmapping it if it lost.
 *   BROKEN=4  a waiter returns once the state is not 0, before the page
 *             is published.
 */

#ifndef N
#define N 3
#endif

byte state;      /* create_state */
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
	bool w;
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
	atomic {
		s = state;
		if
		:: state == 0 -> state = 1
		:: else -> skip
		fi
	}
	if
	:: s == 0 ->
		/* The mapper. */
		mapped++;
		kept++;
		published = true;
#if BROKEN == 1
		s = state;
		state = 3;
		if
		:: s == 2 -> futex_wake_all()
		:: else -> skip
		fi
#else
		atomic {
			s = state;
			state = 3
		}
		if
		:: s == 2 -> futex_wake_all()
		:: else -> skip
		fi
#endif
	:: else ->
		do
		:: s == 3 -> break
#if BROKEN == 4
		:: s != 3 -> break
#endif
		:: s != 3 ->
#if BROKEN == 2
			futex_wait(1, me);
#else
			/* if (s == 2 || CAS(&state, &s, 2)) wait(2) */
			atomic {
				if
				:: s == 2 -> w = true
				:: else ->
					if
					:: state == s -> state = 2; w = true
					:: else -> s = state; w = false
					fi
				fi
			}
			if
			:: w -> futex_wait(2, me)
			:: else -> skip
			fi;
#endif
			s = state
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
