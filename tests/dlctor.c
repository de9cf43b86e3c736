/* SPDX-License-Identifier: MIT */
/*
 * tests/dlctor.so, for tests/test_export.c: a shared object whose
 * constructor calls export_dlctor_hook, a function of the program that
 * dlopens it (the suite is linked with -export-dynamic).  A constructor
 * runs with the dynamic loader's lock held, so the hook can take a lock
 * with that lock held, as a library's initializer may.
 */
void export_dlctor_hook(void);

__attribute__((constructor)) static void
dlctor(void)
{
	export_dlctor_hook();
}
