/* SPDX-License-Identifier: MIT */
/*
 * abi-encodings: prints, one "NAME VALUE" line each, what the public
 * headers compile into users' binaries that neither an ELF symbol nor a
 * DWARF type of the library shows: the bits of each lock word, the
 * unpark tokens, which states of a pl_rwlock_t let an arriving reader in,
 * the all-zero initializers, and the size, alignment and field offsets of
 * each lock type.  tests/abi-check.sh compiles it with the headers of the
 * tree and compares its output with abi/encodings.txt.  A program built
 * against older headers keeps the old values in its inline fast paths, so
 * any change here is an ABI change (doc/ABI.md); a new line alone is not.
 */
#include <parkinglot.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define VALUE(name) printf("%s %#jx\n", #name, (uintmax_t)(name))
#define LAYOUT(type)                                                           \
	printf("sizeof(%s) %zu\nalignof(%s) %zu\n", #type, sizeof(type),       \
	    #type, _Alignof(type))
#define OFFSET(type, field)                                                    \
	printf("offsetof(%s, %s) %zu\n", #type, #field, offsetof(type, field))

/* The initializers: all-zero bytes, as the headers promise (so that a
 * zeroed object is a valid one). */
static const pl_mutex_t mutex_init = PL_MUTEX_INITIALIZER;
static const pl_cond_t cond_init = PL_COND_INITIALIZER;
static const pl_once_t once_init = PL_ONCE_INIT;
static const pl_rwlock_t rwlock_init = PL_RWLOCK_INITIALIZER;
static const pl_rmutex_t rmutex_init = PL_RMUTEX_INITIALIZER;

static const char *
zero(const void *p, size_t size)
{
	static const unsigned char zeroes[64];
	return size <= sizeof zeroes && memcmp(p, zeroes, size) == 0
	    ? "all-zero"
	    : "NOT-ZERO";
}
#define INITIALIZER(name, object)                                              \
	printf("%s %s\n", #name, zero(&(object), sizeof(object)))

/* The states s of the six low bits (the flags and a reader) in which
 * PL_RWLOCK_READER_MAY_ENTER(s) holds, as a mask: bit s set if so. */
static uint64_t
reader_may_enter_mask(void)
{
	uint64_t mask = 0;
	for (uintptr_t s = 0; s < 64; s++)
		if (PL_RWLOCK_READER_MAY_ENTER(s))
			mask |= (uint64_t)1 << s;
	return mask;
}

int
main(void)
{
	VALUE(PL_MUTEX_LOCKED);
	VALUE(PL_MUTEX_PARKED);
	VALUE(PL_COND_WAITERS);
	VALUE(PL_ONCE_RUNNING);
	VALUE(PL_ONCE_DONE);
	VALUE(PL_ONCE_PARKED);
	VALUE(PL_ONCE_GEN);
	VALUE(PL_RWLOCK_WRITER);
	VALUE(PL_RWLOCK_WRITER_PARKED);
	VALUE(PL_RWLOCK_READER_PARKED);
	VALUE(PL_RWLOCK_WRITER_WAITING);
	VALUE(PL_RWLOCK_READER_WAITING);
	VALUE(PL_RWLOCK_ONE_READER);
	VALUE(PL_RWLOCK_READERS_MAX);
	printf("PL_RWLOCK_READER_MAY_ENTER(0..63) %#jx\n",
	    (uintmax_t)reader_may_enter_mask());
	VALUE(PL_UNPARK_TOKEN_DEFAULT);
	VALUE(PL_UNPARK_TOKEN_HANDOFF);

	INITIALIZER(PL_MUTEX_INITIALIZER, mutex_init);
	INITIALIZER(PL_COND_INITIALIZER, cond_init);
	INITIALIZER(PL_ONCE_INIT, once_init);
	INITIALIZER(PL_RWLOCK_INITIALIZER, rwlock_init);
	INITIALIZER(PL_RMUTEX_INITIALIZER, rmutex_init);

	LAYOUT(pl_mutex_t);
	LAYOUT(pl_cond_t);
	LAYOUT(pl_once_t);
	LAYOUT(pl_rwlock_t);
	LAYOUT(pl_rmutex_t);
	OFFSET(pl_rmutex_t, lock);
	OFFSET(pl_rmutex_t, count);
	OFFSET(pl_rmutex_t, owner);
	return 0;
}
