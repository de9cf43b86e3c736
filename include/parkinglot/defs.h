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

#endif /* PARKINGLOT_DEFS_H */
