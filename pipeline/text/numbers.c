/*
 * numbers.c - the number grammar (see numbers.h).
 */
#include "pipeline/text/numbers.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NUMBER_MAX_LEN 63 /* longer text is no number anyone writes */

/* Copy the integer part of *p into buf at *n, dropping well-placed thousands commas; false on a misplaced one. */
static bool integer_part(const char **p, char *buf, size_t *n)
{
	int group = -1; /* digits since the last comma, -1 before any comma */
	int lead = 0;   /* digits before the first comma */
	for (;; (*p)++) {
		if (isdigit((unsigned char)**p)) {
			buf[(*n)++] = **p;
			if (group >= 0)
				group++;
			else
				lead++;
		} else if (**p == ',' && (group == 3 || (group < 0 && lead >= 1 && lead <= 3))) {
			group = 0;
		} else {
			break;
		}
	}
	return group < 0 || group == 3;
}

bool number_parse(const char *s, size_t len, double *ret)
{
	char text[NUMBER_MAX_LEN + 1], buf[NUMBER_MAX_LEN + 1];
	if (len == 0 || len > NUMBER_MAX_LEN)
		return false;
	memcpy(text, s, len);
	text[len] = '\0';
	const char *p = text;
	size_t n = 0;
	if (*p == '+' || *p == '-')
		buf[n++] = *p++;
	if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
		return false;
	if (!integer_part(&p, buf, &n))
		return false;
	while (isdigit((unsigned char)*p) || *p == '.' || *p == 'e' || *p == 'E' ||
	       ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E')))
		buf[n++] = *p++;
	if (*p)
		return false;
	buf[n] = '\0';
	char *end;
	double v = strtod(buf, &end);
	if (*end || !isfinite(v))
		return false;
	*ret = v;
	return true;
}

/* ---- numbers written in words ---------------------------------------------- */

static const char *const SMALL[] = {"zero",    "one",     "two",       "three",    "four",
				    "five",    "six",     "seven",     "eight",    "nine",
				    "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
				    "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
static const char *const TENS[] = {"twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};

/* The length of the letters at s (a word), lower-case compared with w; 0 when s does not spell w there. */
static size_t word_is(const char *s, const char *w)
{
	size_t n = strlen(w);
	return strncasecmp(s, w, n) == 0 && !isalnum((unsigned char)s[n]) ? n : 0;
}

/* A word of SMALL or TENS at s: its value into *v and its length, or 0. */
static size_t unit_word(const char *s, double *v)
{
	size_t n;
	for (size_t i = 0; i < sizeof(TENS) / sizeof(TENS[0]); i++)
		if ((n = word_is(s, TENS[i]))) {
			*v = 20 + 10 * (double)i;
			return n;
		}
	for (size_t i = 0; i < sizeof(SMALL) / sizeof(SMALL[0]); i++)
		if ((n = word_is(s, SMALL[i]))) {
			*v = (double)i;
			return n;
		}
	return 0;
}

size_t number_words_parse(const char *s, double *ret)
{
	double total = 0, group = 0;
	int last = 0; /* the last word read: 0 none, 1 a unit or teen, 2 tens, 3 hundred, 4 thousand or million */
	size_t used = 0, words = 0;
	const char *p = s;
	for (;;) {
		double v;
		size_t n;
		if ((n = unit_word(p, &v))) {
			if (last == 1 || (last == 2 && v >= 10))
				break; /* "five six", "twenty thirty": the next is another number */
			group += v;
			last = v >= 20 ? 2 : 1;
		} else if (last && last <= 2 && (n = word_is(p, "hundred"))) {
			group *= 100;
			last = 3;
		} else if (last && last <= 3 && ((n = word_is(p, "thousand")) || (n = word_is(p, "million")))) {
			total += group * (tolower((unsigned char)*p) == 't' ? 1e3 : 1e6);
			group = 0;
			last = 4;
		} else {
			break;
		}
		words++;
		p += n;
		used = (size_t)(p - s);
		/* "twenty-one", "three hundred and five", "two thousand five" */
		const char *q = p;
		size_t a;
		if (*q == '-' || *q == ' ')
			q++;
		if (*p == ' ' && (a = word_is(q, "and")) && q[a] == ' ')
			q += a + 1;
		if (q == p)
			break;
		p = q;
	}
	if (!words || (words == 1 && group == 1 && used == 3))
		return 0; /* "one" alone is a pronoun as often as a number ("which one") */
	*ret = total + group;
	return used;
}
