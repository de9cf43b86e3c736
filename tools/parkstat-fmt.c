/* SPDX-License-Identifier: MIT */
/* parkstat's formatting of figures, names and JSON strings (parkstat.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "parkstat.h"

/* "1.23 ms": three significant digits or so. */
const char *
fmt_ns(char *buf, size_t len, double ns)
{
	static const char *const unit[] = { "ns", "us", "ms", "s" };
	unsigned u = 0;
	while (u < 3 && ns >= 1000) {
		ns /= 1000;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f %s", ns, unit[u]);
	else
		snprintf(buf, len,
		    ns < 10        ? "%.2f %s"
		        : ns < 100 ? "%.1f %s"
		                   : "%.0f %s",
		    ns, unit[u]);
	return buf;
}

const char *
fmt_bytes(char *buf, size_t len, uint64_t b)
{
	if (b < 10240)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else if (b < 10 * 1048576ull)
		snprintf(buf, len, "%.1f KiB", (double)b / 1024);
	else
		snprintf(buf, len, "%.1f MiB", (double)b / 1048576);
	return buf;
}

const char *
fmt_us(char *buf, size_t len, double us)
{
	return fmt_ns(buf, len, us * 1000);
}

const char *
basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* A JSON string: escapes, and invalid UTF-8 as U+FFFD, so the output is
 * valid whatever bytes a path or symbol holds. */
void
json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', out);
	while (*p) {
		unsigned char ch = *p;
		if (ch == '"' || ch == '\\') {
			fprintf(out, "\\%c", ch);
			p++;
		} else if (ch < 0x20 || ch == 0x7f) {
			fprintf(out, "\\u%04x", ch);
			p++;
		} else if (ch < 0x80) {
			fputc(ch, out);
			p++;
		} else {
			/* Length and validity of a UTF-8 sequence: 0xc2 to
			 * 0xf4 begin one (0x80 to 0xc1 and 0xf5 to 0xff
			 * never do); a continuation byte missing (the NUL
			 * at the end included), an overlong form, a
			 * surrogate or more than U+10FFFF makes it
			 * invalid, and its first byte U+FFFD. */
			int n = ch >= 0xf0 && ch <= 0xf4 ? 4
			    : ch >= 0xe0 && ch < 0xf0    ? 3
			    : ch >= 0xc2 && ch < 0xe0    ? 2
			                                 : 0;
			bool ok = n > 0;
			for (int i = 1; ok && i < n; i++)
				ok = (p[i] & 0xc0) == 0x80;
			if (ok && n == 3)
				ok = !(ch == 0xe0 && p[1] < 0xa0) &&
				    !(ch == 0xed && p[1] >= 0xa0);
			if (ok && n == 4)
				ok = !(ch == 0xf0 && p[1] < 0x90) &&
				    !(ch == 0xf4 && p[1] >= 0x90);
			if (ok) {
				fwrite(p, 1, (size_t)n, out);
				p += n;
			} else {
				fputs("\\ufffd", out);
				p++;
			}
		}
	}
	fputc('"', out);
}

void
json_str_or_null(FILE *out, const char *s)
{
	if (s && *s)
		json_str(out, s);
	else
		fputs("null", out);
}
