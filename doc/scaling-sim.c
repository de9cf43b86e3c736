/* SPDX-License-Identifier: MIT */
/*
 * The arithmetic behind doc/scaling.md: no lock is taken and no thread is
 * started, so what it prints does not depend on the machine.
 *
 *   cc -O2 -o /tmp/scaling-sim doc/scaling-sim.c -lm && /tmp/scaling-sim
 *
 * 1. Table growth.  The table sizes, the number of growths and the
 *    memory that three growth rules reach as threads are added one at a
 *    time: this library's (lib/parkinglot.c: grow when the threads with a
 *    record exceed 3 per bucket, to the power of two at or above twice
 *    the buckets needed, 32 at least), Rust parking_lot_core's (grow when
 *    the buckets are fewer than 3 per thread, to the power of two at or
 *    above 3 per thread; the first table is made for 3 threads) and
 *    WebKit WTF's (grow when the slots are fewer than 3 per thread, to 6
 *    per thread; the first table has 3 slots).  The two references'
 *    rules are restated from their sources, cited in doc/scaling.md.
 *
 * 2. Bucket collisions.  With k addresses that have waiters at the same
 *    time and a table of n buckets: the share of those addresses whose
 *    bucket also holds another of them, and the most addresses found in
 *    one bucket.  First the uniform-hash formula, then the library's own
 *    hash (Fibonacci multiply, top bits) on address layouts that programs
 *    have: random heap addresses, arrays of one-byte mutexes, arrays of
 *    cache-line-padded locks, random members of a large array, and
 *    rwlocks, each of which uses two keys (its address and the next byte).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BUCKET_BYTES 64 /* one cache line, here and in parking_lot_core */

/* ---- 1. growth ---------------------------------------------------------- */

struct growth {
	size_t buckets;   /* table in use */
	unsigned growths; /* tables replaced so far */
	size_t retired;   /* buckets of the replaced tables, never freed */
};

static size_t
pow2_at_least(size_t x)
{
	size_t p = 1;
	while (p < x)
		p <<= 1;
	return p;
}

static void
add(struct growth *g, size_t newsize)
{
	g->retired += g->buckets;
	g->buckets = newsize;
	g->growths++;
}

/* lib/parkinglot.c: LOAD_FACTOR 3 threads per bucket, INITIAL_BITS 5. */
static void
grow_here(struct growth *g, size_t threads)
{
	if (threads <= 3 * g->buckets)
		return;
	size_t need = 2 * ((threads + 2) / 3);
	add(g, pow2_at_least(need < 32 ? 32 : need));
}

/* parking_lot_core: LOAD_FACTOR 3 buckets per thread. */
static void
grow_rust(struct growth *g, size_t threads)
{
	if (g->buckets >= 3 * threads)
		return;
	add(g, pow2_at_least(3 * threads));
}

/* WTF: maxLoadFactor 3 slots per thread, growthFactor 2. */
static void
grow_wtf(struct growth *g, size_t threads)
{
	if ((double)g->buckets / (double)threads >= 3.0)
		return;
	add(g, threads * 2 * 3);
}

static void
growth_table(void)
{
	static const size_t at[] = { 16, 64, 128, 256, 512, 1024, 4096 };
	struct growth here = { 32, 0, 0 }, rust = { 16, 0, 0 },
	              wtf = { 3, 0, 0 };
	size_t next = 0;

	printf("1. Table growth as threads get a record one at a time\n");
	printf("   (bytes: %d per bucket; WTF's slots are pointers to "
	       "buckets made on demand)\n\n",
	    BUCKET_BYTES);
	printf("%8s | %-28s | %-28s | %s\n", "threads", "libparkinglot",
	    "parking_lot_core", "WTF");
	printf("%8s | %7s %4s %7s %7s | %7s %4s %7s %7s | %7s %4s\n", "",
	    "buckets", "grew", "KiB now", "retired", "buckets", "grew",
	    "KiB now", "retired", "slots", "grew");
	for (size_t t = 1; t <= at[sizeof at / sizeof at[0] - 1]; t++) {
		grow_here(&here, t);
		grow_rust(&rust, t);
		grow_wtf(&wtf, t);
		if (t != at[next])
			continue;
		next++;
		printf("%8zu | %7zu %4u %7.1f %7.1f | %7zu %4u %7.1f %7.1f "
		       "| %7zu %4u\n",
		    t, here.buckets, here.growths,
		    here.buckets * BUCKET_BYTES / 1024.0,
		    here.retired * BUCKET_BYTES / 1024.0, rust.buckets,
		    rust.growths, rust.buckets * BUCKET_BYTES / 1024.0,
		    rust.retired * BUCKET_BYTES / 1024.0, wtf.buckets,
		    wtf.growths);
	}
	printf("\n");
}

/* ---- 2. collisions --------------------------------------------------------
 */

static uint64_t rng_state = 0x243F6A8885A308D3ull; /* fixed: same output */

static uint64_t
rng(void) /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The library's hash (lib/parkinglot.c, hash_addr). */
static size_t
bucket_of(uint64_t addr, unsigned bits)
{
	return (size_t)((addr * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

#define MAXKEYS 1024
#define MAXBUCKETS 4096

struct tally {
	double shared; /* keys whose bucket holds another key, summed */
	unsigned most; /* the most keys in one bucket, over all trials */
	unsigned trials;
};

static void
count(struct tally *t, const uint64_t *keys, size_t k, unsigned bits)
{
	static unsigned in[MAXBUCKETS];
	size_t n = (size_t)1 << bits, shared = 0;
	memset(in, 0, n * sizeof in[0]);
	for (size_t i = 0; i < k; i++)
		in[bucket_of(keys[i], bits)]++;
	for (size_t i = 0; i < k; i++) {
		unsigned c = in[bucket_of(keys[i], bits)];
		shared += c > 1;
		if (c > t->most)
			t->most = c;
	}
	t->shared += (double)shared / (double)k;
	t->trials++;
}

enum layout {
	HEAP,    /* random 16-byte-aligned addresses in 1 GiB */
	BYTES,   /* k consecutive one-byte mutexes */
	PADDED,  /* k consecutive locks, one per 64 bytes */
	SPARSE,  /* k random members of an array of 100000 one-byte locks */
	RWPAIRS, /* k/2 padded rwlocks, keys l and l + 1 each */
	NLAYOUT
};
static const char *const layout_name[NLAYOUT] = {
	"random heap",
	"byte array",
	"padded array",
	"100000-array",
	"rwlock pairs",
};

/* Each trial puts the layout at a new random base: where an array
 * starts changes which buckets its members fall in. */
#define TRIALS 200

/* SPARSE: the members drawn by the last trial, cleared by the next. */
static unsigned char taken[100000];
static uint64_t drawn[MAXKEYS];
static size_t ndrawn;

static void
fill(uint64_t *keys, size_t k, enum layout l)
{
	while (ndrawn)
		taken[drawn[--ndrawn]] = 0;
	uint64_t base = 0x7f0000000000ull + ((rng() & 0xfffffull) << 12);
	for (size_t i = 0; i < k; i++) {
		switch (l) {
		case HEAP:
			keys[i] = base + ((rng() & 0x3ffffffull) << 4);
			break;
		case BYTES:
			keys[i] = base + i;
			break;
		case PADDED:
			keys[i] = base + 64 * i;
			break;
		case SPARSE: {
			/* Distinct members: draw again on a repeat. */
			uint64_t m;
			do
				m = rng() % 100000;
			while (taken[m]);
			taken[m] = 1;
			drawn[ndrawn++] = m;
			keys[i] = base + m;
			break;
		}
		case RWPAIRS:
			keys[i] = base + 64 * (i / 2) + (i % 2);
			break;
		default:
			break;
		}
	}
}

static void
collision_table(void)
{
	static const unsigned bits_list[] = { 5, 7, 9, 10 };
	static const size_t k_list[] = { 2, 16, 64, 256 };
	static uint64_t keys[MAXKEYS];

	printf("2. Addresses with waiters that share their bucket with "
	       "another one\n");
	printf("   (share of the k addresses, mean over %d trials, each "
	       "at a random base;\n",
	    TRIALS);
	printf("   in brackets, the most addresses seen in one bucket)\n\n");
	printf("%7s %4s %9s", "buckets", "k", "uniform");
	for (int l = 0; l < NLAYOUT; l++)
		printf(" %17s", layout_name[l]);
	printf("\n");
	for (size_t b = 0; b < sizeof bits_list / sizeof bits_list[0]; b++) {
		unsigned bits = bits_list[b];
		double n = (double)((size_t)1 << bits);
		for (size_t ki = 0; ki < sizeof k_list / sizeof k_list[0];
		     ki++) {
			size_t k = k_list[ki];
			/* P(one of the others lands in my bucket). */
			double uni = 1.0 - pow(1.0 - 1.0 / n, (double)k - 1);
			printf("%7.0f %4zu %8.1f%%", n, k, 100 * uni);
			for (int l = 0; l < NLAYOUT; l++) {
				struct tally t = { 0, 0, 0 };
				for (int r = 0; r < TRIALS; r++) {
					fill(keys, k, (enum layout)l);
					count(&t, keys, k, bits);
				}
				printf(" %11.1f%% [%2u]",
				    100 * t.shared / t.trials, t.most);
			}
			printf("\n");
		}
	}
	printf("\n");
}

int
main(void)
{
	growth_table();
	collision_table();
	return 0;
}
