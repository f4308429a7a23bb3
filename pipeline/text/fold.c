/*
 * fold.c - case folding and normalisation (see fold.h).
 */
#include "pipeline/text/fold.h"

#include "common/utf8.h"

uint32_t fold_next_cp(const char *s, size_t len, size_t *i)
{
	const unsigned char *p = (const unsigned char *)s + *i;
	size_t left = len - *i;
	uint32_t c = p[0];
	size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
	if (n == 0 || n > left || !utf8_valid((const char *)p, n)) {
		*i += 1;
		return c < 0x80 ? c : 0xFFFD;
	}
	*i += n;
	if (n == 1)
		return c;
	c &= 0x3F >> (n - 1);
	for (size_t k = 1; k < n; k++)
		c = (c << 6) | (p[k] & 0x3F);
	return c;
}

uint32_t fold_cp(uint32_t c)
{
	if (c < 0x80)
		return c >= 'A' && c <= 'Z' ? c + 32 : c;
	if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
		return c + 32;
	if (c >= 0x100 && c <= 0x17F) {
		if (c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F)
			return c;
		if (c == 0x178)
			return 0xFF;
		if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
			return (c & 1) ? c + 1 : c;
		return (c & 1) ? c : c + 1;
	}
	if (c >= 0x391 && c <= 0x3AB && c != 0x3A2)
		return c + 32;
	if (c >= 0x410 && c <= 0x42F)
		return c + 32;
	if (c >= 0x400 && c <= 0x40F)
		return c + 80;
	return c;
}

static bool is_space_cp(uint32_t c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xA0 || (c >= 0x2000 && c <= 0x200A) || c == 0x3000;
}

void fold_text(const char *s, size_t len, struct folded *f)
{
	bool pending_space = false;
	f->n = 0;
	for (size_t i = 0; i < len && f->n < FOLD_MAX;) {
		uint32_t c = fold_next_cp(s, len, &i);
		if (is_space_cp(c)) {
			pending_space = f->n > 0;
			continue;
		}
		if (pending_space && f->n < FOLD_MAX - 1)
			f->cp[f->n++] = ' ';
		pending_space = false;
		f->cp[f->n++] = fold_cp(c);
	}
}

bool fold_equal_but_case(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i = 0, j = 0;
	while (i < alen && j < blen)
		if (fold_cp(fold_next_cp(a, alen, &i)) != fold_cp(fold_next_cp(b, blen, &j)))
			return false;
	return i == alen && j == blen;
}
