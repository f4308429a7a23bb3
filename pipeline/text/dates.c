/*
 * dates.c - the date grammar and month table (see dates.h).
 *
 * Each form is a small recursive-descent reader over a bounded cursor; a
 * form either consumes the whole text (or, with DATE_WITH_TIME, a full date
 * followed by a time) or fails without side effects.
 */
#include "pipeline/text/dates.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

struct cursor {
	const char *p, *end;
};

static int peek(const struct cursor *c)
{
	return c->p < c->end ? (unsigned char)*c->p : '\0';
}

static bool at_end(const struct cursor *c)
{
	return c->p >= c->end;
}

/* Between min and max digits at the cursor as a number; false (cursor unmoved) when fewer than min. */
static bool read_digits(struct cursor *c, int min, int max, long *ret)
{
	const char *p = c->p;
	long v = 0;
	int n = 0;
	while (n < max && p < c->end && isdigit((unsigned char)*p)) {
		v = v * 10 + (*p - '0');
		p++;
		n++;
	}
	if (n < min)
		return false;
	c->p = p;
	*ret = v;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static double days_from_civil(long y, unsigned m, unsigned d)
{
	y -= m <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return (double)(era * 146097 + (long)doe - 719468);
}

static unsigned days_in_month(long y, unsigned m)
{
	static const unsigned dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : dm[m - 1];
}

bool date_range_of(long y, long m, long d, struct date_range *ret)
{
	if (y < 1 || y > 9999 || m < 0 || m > 12 || d < 0 || (m == 0 && d != 0))
		return false;
	if (m > 0 && d > (long)days_in_month(y, (unsigned)m))
		return false;
	unsigned last = d ? (unsigned)d : (m ? days_in_month(y, (unsigned)m) : 31);
	ret->first_day = days_from_civil(y, m ? (unsigned)m : 1, d ? (unsigned)d : 1);
	ret->last_day = days_from_civil(y, m ? (unsigned)m : 12, last);
	return true;
}

static const char *const month_names[] = {"january", "february", "march",     "april",   "may",      "june",
					  "july",    "august",   "september", "october", "november", "december"};

int date_month_from_name(const char *s, size_t len)
{
	if (len < 3)
		return 0;
	for (int m = 0; m < 12; m++) {
		size_t full = strlen(month_names[m]);
		if ((len == full || len == 3 || (m == 8 && len == 4)) && strncasecmp(s, month_names[m], len) == 0)
			return m + 1;
	}
	return 0;
}

/* What may follow a date: nothing, or with DATE_WITH_TIME and a day, a time after 'T' or ' '. */
static bool date_ends(const struct cursor *c, unsigned forms, long d)
{
	return at_end(c) || ((forms & DATE_WITH_TIME) && d > 0 && (peek(c) == 'T' || peek(c) == ' '));
}

/* YYYY, YYYY-MM, YYYY-MM-DD with '-', '/' or '.' (one separator throughout). */
static bool parse_year_first(struct cursor c, unsigned forms, struct date_range *ret)
{
	long y, m = 0, d = 0;
	if (!read_digits(&c, 4, 4, &y))
		return false;
	int sep = peek(&c);
	if (sep == '-' || sep == '/' || sep == '.') {
		c.p++;
		if (!read_digits(&c, 1, 2, &m) || m < 1)
			return false;
		if (peek(&c) == sep) {
			c.p++;
			if (!read_digits(&c, 1, 2, &d) || d < 1)
				return false;
		}
	}
	if (m == 0 ? !(forms & DATE_BARE_YEAR) : !(forms & DATE_ISO))
		return false;
	if (!date_ends(&c, forms, d))
		return false;
	return date_range_of(y, m, d, ret);
}

/* DD/MM/YYYY, DD-MM-YYYY, DD.MM.YYYY; MM/DD/YYYY when only that reading is a date. */
static bool parse_day_first(struct cursor c, struct date_range *ret)
{
	long a, b, y;
	if (!read_digits(&c, 1, 2, &a))
		return false;
	int sep = peek(&c);
	if (sep != '-' && sep != '/' && sep != '.')
		return false;
	c.p++;
	if (!read_digits(&c, 1, 2, &b) || peek(&c) != sep)
		return false;
	c.p++;
	if (!read_digits(&c, 4, 4, &y) || !at_end(&c) || a < 1 || b < 1)
		return false;
	return date_range_of(y, b, a, ret) || date_range_of(y, a, b, ret);
}

/* A month name at the cursor, optionally abbreviated with a dot; 0 (cursor unmoved) when none. */
static int read_month_name(struct cursor *c)
{
	const char *w = c->p;
	while (c->p < c->end && isalpha((unsigned char)*c->p))
		c->p++;
	int month = date_month_from_name(w, (size_t)(c->p - w));
	if (!month) {
		c->p = w;
		return 0;
	}
	if (peek(c) == '.')
		c->p++;
	return month;
}

/* "May 1, 2009", "May 1 2009", "May 2009", "1 May 2009". */
static bool parse_named(struct cursor c, unsigned forms, struct date_range *ret)
{
	long d = 0, y;
	if (isdigit(peek(&c))) {
		if (!read_digits(&c, 1, 2, &d) || peek(&c) != ' ')
			return false;
		c.p++;
	}
	int month = read_month_name(&c);
	if (!month || peek(&c) != ' ')
		return false;
	c.p++;
	/* a day after the month: one or two digits, not the start of the year */
	if (d == 0 && c.end - c.p >= 3 && isdigit((unsigned char)c.p[0]) &&
	    (!isdigit((unsigned char)c.p[1]) || !isdigit((unsigned char)c.p[2]))) {
		if (!read_digits(&c, 1, 2, &d))
			return false;
		if (peek(&c) == ',')
			c.p++;
		if (peek(&c) != ' ')
			return false;
		c.p++;
	}
	if (!read_digits(&c, 4, 4, &y) || !at_end(&c))
		return false;
	if ((forms & DATE_NEED_DAY) && d == 0)
		return false;
	return date_range_of(y, month, d, ret);
}

bool date_parse(const char *s, size_t len, unsigned forms, struct date_range *ret)
{
	struct cursor c = {s, s + len};
	struct date_range r;
	bool ok = false;
	if (forms & (DATE_ISO | DATE_BARE_YEAR))
		ok = parse_year_first(c, forms, &r) && (!(forms & DATE_NEED_DAY) || r.first_day == r.last_day);
	if (!ok && (forms & DATE_DAY_FIRST))
		ok = parse_day_first(c, &r);
	if (!ok && (forms & DATE_NAMED))
		ok = parse_named(c, forms, &r);
	if (ok)
		*ret = r;
	return ok;
}
