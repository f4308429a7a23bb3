/*
 * dates.h - the one date grammar and month table of the service: which
 * texts name a calendar date, month or year, and which days they cover.
 *
 * Forms (each family switched on by a flag, so every caller uses a subset
 * of this one grammar):
 *
 *   DATE_ISO        year first: YYYY-MM-DD, YYYY/MM/DD, YYYY.MM.DD (one or
 *                   two digits for month and day) and the months YYYY-MM,
 *                   YYYY/MM, YYYY.MM.
 *   DATE_DAY_FIRST  day first: DD/MM/YYYY, DD-MM-YYYY, DD.MM.YYYY.  When
 *                   only the month-first reading is a valid date (12/25/2009)
 *                   that reading is taken; when both are (03/04/2009) the
 *                   day comes first (3 April).
 *   DATE_NAMED      month names, full, three-letter or "Sept", any case:
 *                   "May 1, 2009", "May 1 2009", "May 2009", "1 May 2009",
 *                   "Jan. 2009".
 *   DATE_BARE_YEAR  a year alone: YYYY.
 *   DATE_WITH_TIME  a full ISO date may be followed by a time after 'T' or
 *                   ' ' (ignored): "2009-05-01 10:00:00", as databases print.
 *   DATE_NEED_DAY   only forms that name a day.
 *
 * Years run from 1 to 9999; days are checked against the month (leap years
 * included).  A date covers one day, a month its days, a year its days.
 * Day numbers count days since 1970-01-01 in the proleptic Gregorian
 * calendar.  Pure functions, thread-safe.
 */
#ifndef T2S_TEXT_DATES_H
#define T2S_TEXT_DATES_H

#include <stdbool.h>
#include <stddef.h>

enum date_form {
	DATE_ISO = 1 << 0,
	DATE_DAY_FIRST = 1 << 1,
	DATE_NAMED = 1 << 2,
	DATE_BARE_YEAR = 1 << 3,
	DATE_WITH_TIME = 1 << 4,
	DATE_NEED_DAY = 1 << 5,
};

/* The forms a question may use (question_spans and the range lookups agree on these). */
#define DATE_QUESTION_FORMS (DATE_ISO | DATE_DAY_FIRST | DATE_NAMED)

/* Days covered by a date, month or year: first and last day number, both included. */
struct date_range {
	double first_day, last_day;
};

/* True when s[0..len) is a date in one of the forms in the mask forms; *ret written only then. */
bool date_parse(const char *s, size_t len, unsigned forms, struct date_range *ret);

/*
 * The days of year y, month m (1-12, or 0 for the whole year), day d (1-31,
 * or 0 for the whole month); false when no such date exists (d without m,
 * February 30th, year 0).
 */
bool date_range_of(long y, long m, long d, struct date_range *ret);

/* 1-12 for a month name (full, three-letter, or "sept"; any case) in s[0..len), else 0. */
int date_month_from_name(const char *s, size_t len);

#endif
