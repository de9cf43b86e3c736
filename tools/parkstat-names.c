/* SPDX-License-Identifier: MIT */
/*
 * parkstat's names for the addresses of its target: the locks of the
 * contended slots and the frames of the sampled stacks (parkstat.h).
 *
 * Addresses are named here, never in the target (lib/export.c says why):
 * from the target's maps, in the kernel's format (/proc/PID/maps while it
 * runs, else the lines its exit handler saved in the object, else the
 * last copy read while it ran), and the symbol tables of the mapped files
 * (.symtab where the file or its separate debug file has one, else
 * .dynsym), read with libdwfl, which also gives a frame its source file
 * and line where the file has debugging information.  A module is a file's
 * private mappings and the anonymous or shared mappings right after them (its
 * .bss, and whatever is mapped over it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "export.h"
#include "parkstat.h"

/* The paths come from the target: open nothing but a regular file, and
 * never block on one that is not. */
static int
find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	(void)mod;
	(void)userdata;
	(void)base;
	(void)elfp;
	int fd = open(modname, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	*file_name = strdup(modname);
	return fd;
}

static char *debuginfo_path;
static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

/* Use the maps text (len bytes) from now on, unless it is the same. */
void
namer_set(struct namer *nm, const char *text, size_t len)
{
	if (nm->maps && nm->len == len && memcmp(nm->maps, text, len) == 0)
		return;
	free(nm->maps);
	if (nm->dwfl)
		dwfl_end(nm->dwfl);
	nm->dwfl = NULL;
	nm->len = 0;
	nm->maps = malloc(len + 1);
	if (nm->maps == NULL)
		return;
	memcpy(nm->maps, text, len);
	nm->maps[len] = '\0';
	nm->len = len;
	nm->dwfl = dwfl_begin(&dwfl_callbacks);
	if (nm->dwfl == NULL)
		return;
	dwfl_report_begin(nm->dwfl);
	char cur[PATH_MAX] = ""; /* the module being gathered */
	uint64_t lo = 0, hi = 0;
	for (char *l = nm->maps, *next; *l; l = next) {
		char *nl = strchr(l, '\n');
		next = nl ? nl + 1 : l + strlen(l);
		if (nl)
			*nl = '\0';
		uint64_t start, end;
		bool private;
		const char *path = plx_maps_parse(l, &start, &end, &private);
		bool file = *path == '/' && private &&
		    strstr(path, " (deleted)") == NULL;
		if (cur[0] && start == hi &&
		    (file ? strcmp(path, cur) == 0
		          : *path == '\0' || (*path == '/' && !private))) {
			hi = end;
		} else {
			if (cur[0])
				dwfl_report_module(nm->dwfl, cur, lo, hi);
			cur[0] = '\0';
			if (file && strlen(path) < sizeof cur) {
				memcpy(cur, path, strlen(path) + 1);
				lo = start;
				hi = end;
			}
		}
		if (nl)
			*nl = '\n';
	}
	if (cur[0])
		dwfl_report_module(nm->dwfl, cur, lo, hi);
	dwfl_report_end(nm->dwfl, NULL, NULL);
}

/* /proc/PID/maps, whole; false if it cannot be read or is empty (the
 * process is gone, or a zombie). */
bool
namer_read(struct namer *nm, long pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/maps", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (buf == NULL)
			break;
		if (len == cap) {
			char *b = realloc(buf, cap *= 2);
			if (b == NULL) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	bool ok = buf && len > 0;
	if (ok)
		namer_set(nm, buf, len);
	free(buf);
	return ok;
}

/* The symbol that holds addr, as "name" or "name+0xN" (out is "" if
 * none), and the file mapped there (NULL if none). */
void
namer_name(const struct namer *nm, uint64_t addr, char *out, size_t outlen,
    const char **module)
{
	out[0] = '\0';
	*module = NULL;
	Dwfl_Module *m = nm->dwfl ? dwfl_addrmodule(nm->dwfl, addr) : NULL;
	if (m == NULL)
		return;
	*module = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name =
	    dwfl_module_addrinfo(m, addr, &off, &sym, NULL, NULL, NULL);
	/* Inside a sized symbol, or at a bare label, as dladdr would. */
	if (name == NULL || *name == '\0' ||
	    (sym.st_size ? off >= sym.st_size : off != 0))
		return;
	if (off)
		snprintf(out, outlen, "%s+0x%" PRIx64, name, (uint64_t)off);
	else
		snprintf(out, outlen, "%s", name);
}

/* Where at lies in code inlined into the function of its symbol: the
 * line of that function that the outermost inlined call is on, and the
 * name of the innermost function inlined (DWARF's inlined-subroutine
 * scopes).  False if at is in no inlined code, or there is no debugging
 * information to tell.  dwarf_getscopes gives the innermost inlined
 * scope, but past it goes on with the scopes of the inlined function's
 * own definition; the inlined scopes that contain it, where code inlined
 * into inlined code (GCC nests an inline lock's split-off blocks so),
 * are those that dwarf_getscopes_die finds around it. */
static bool
call_site(Dwfl_Module *m, Dwarf_Addr at, struct frame_name *f)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(m, at, &bias);
	Dwarf_Die *scopes = NULL, *around = NULL;
	int n = cu ? dwarf_getscopes(cu, at - bias, &scopes) : -1;
	int inner = -1, outer = -1;
	for (int i = 0; i < n && inner < 0; i++)
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine)
			inner = i;
	int k = inner >= 0 ? dwarf_getscopes_die(&scopes[inner], &around) : -1;
	for (int i = 0; i < k; i++)
		if (dwarf_tag(&around[i]) == DW_TAG_inlined_subroutine)
			outer = i;
	bool found = false;
	Dwarf_Attribute a;
	Dwarf_Word file, line;
	Dwarf_Files *files;
	size_t nfiles;
	if (outer >= 0 &&
	    dwarf_formudata(
	        dwarf_attr(&around[outer], DW_AT_call_file, &a), &file) == 0 &&
	    dwarf_formudata(
	        dwarf_attr(&around[outer], DW_AT_call_line, &a), &line) == 0 &&
	    dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && file < nfiles) {
		const char *src = dwarf_filesrc(files, file, NULL, NULL);
		if (src && line > 0) {
			f->src = src;
			f->line = (int)line;
			const char *in = dwarf_formstring(dwarf_attr_integrate(
			    &scopes[inner], DW_AT_name, &a));
			if (in)
				snprintf(
				    f->inlined, sizeof f->inlined, "%s", in);
			found = true;
		}
	}
	free(around);
	free(scopes);
	return found;
}

/* The frame whose return address is pc (the call is the byte before it;
 * pc itself for the innermost frame, innermost): its function as "name+0xN"
 * (or "" if none), the file mapped there (NULL if none), and the source
 * file and line of the call where the debugging information has them
 * (NULL and 0 if not). */
void
namer_frame(
    const struct namer *nm, uint64_t pc, bool innermost, struct frame_name *f)
{
	uint64_t at = innermost || pc == 0 ? pc : pc - 1;
	f->fn[0] = '\0';
	f->module = NULL;
	f->src = NULL;
	f->line = 0;
	f->inlined[0] = '\0';
	Dwfl_Module *m = nm->dwfl ? dwfl_addrmodule(nm->dwfl, at) : NULL;
	if (m == NULL)
		return;
	f->module =
	    dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name =
	    dwfl_module_addrinfo(m, at, &off, &sym, NULL, NULL, NULL);
	if (name && *name)
		snprintf(f->fn, sizeof f->fn, "%s+0x%" PRIx64, name,
		    (uint64_t)(off + (pc - at)));
	if (call_site(m, at, f))
		return;
	Dwfl_Line *line = dwfl_module_getsrc(m, at);
	int lineno = 0;
	const char *src =
	    line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (src && lineno > 0) {
		f->src = src;
		f->line = lineno;
	}
}
