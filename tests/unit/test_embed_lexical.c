/*
 * test_embed_lexical.c - properties of the built-in lexical embedder:
 * identifier splitting, stop words, stemming, unit-length vectors, ranking of
 * column documents for a question, IDF weighting, the sparse form, the
 * identity string and concurrent use of a fitted model.
 */
#include "pipeline/text/embed_lexical.h"
#include "tests/unit/tap.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DIM EMBED_LEXICAL_DEFAULT_DIM

/* Words of text joined by single spaces into out (for compact comparisons). */
static const char *words_joined(const char *text, unsigned flags, char *out, size_t cap)
{
	char **w;
	size_t n, used = 0;

	out[0] = '\0';
	if (embed_lexical_words(text, flags, &w, &n) != 0)
		return "(nomem)";
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(w[i]);
		if (used + len + 2 > cap)
			break;
		if (i)
			out[used++] = ' ';
		memcpy(out + used, w[i], len);
		used += len;
		out[used] = '\0';
	}
	free(w);
	return out;
}

static void test_tokeniser(void)
{
	char buf[512];

	TAP_STR_EQ(words_joined("HouseholdIncome", 0, buf, sizeof(buf)), "household income",
		   "splits_pascal_case");
	TAP_STR_EQ(words_joined("householdIncome", 0, buf, sizeof(buf)), "household income",
		   "splits_camel_case");
	TAP_STR_EQ(words_joined("XMLParser", 0, buf, sizeof(buf)), "xml parser",
		   "splits_acronym_before_capitalised_word");
	TAP_STR_EQ(words_joined("parseHTTPResponse", 0, buf, sizeof(buf)), "parse http response",
		   "splits_acronym_inside_camel_case");
	TAP_STR_EQ(words_joined("userIDs", EMBED_WORDS_NO_STEM, buf, sizeof(buf)), "user ids",
		   "keeps_plural_s_of_acronym");
	TAP_STR_EQ(words_joined("address2", 0, buf, sizeof(buf)), "address 2",
		   "separates_digits_from_letters");
	TAP_STR_EQ(words_joined("2ndPlace", 0, buf, sizeof(buf)), "2 nd place",
		   "separates_leading_digits");
	TAP_STR_EQ(words_joined("first_name", 0, buf, sizeof(buf)), "first name",
		   "splits_snake_case");
	TAP_STR_EQ(words_joined("  Hello,world!(x-y)  ", 0, buf, sizeof(buf)), "hello world x y",
		   "splits_on_punctuation_and_lower_cases");
	TAP_STR_EQ(words_joined("how many singers are from France?", 0, buf, sizeof(buf)),
		   "singer france", "drops_stop_words");
	TAP_STR_EQ(words_joined("how many singers", EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM,
				buf, sizeof(buf)),
		   "how many singers", "keeps_stop_words_and_forms_on_request");
	TAP_STR_EQ(words_joined("countries cities singers names", 0, buf, sizeof(buf)),
		   "country city singer name", "stems_plurals_to_dictionary_forms");
	TAP_STR_EQ(words_joined("addresses boxes status class analysis", 0, buf, sizeof(buf)),
		   "address box status class analysis", "stems_es_plurals_and_keeps_ss_us_is");
	TAP_STR_EQ(words_joined("rated shipping created listed agreed", 0, buf, sizeof(buf)),
		   "rate ship create list agree", "stems_ed_and_ing");
	TAP_STR_EQ(words_joined("string thing", 0, buf, sizeof(buf)), "string thing",
		   "does_not_stem_ing_without_vowel_in_stem");
	TAP_STR_EQ(words_joined("monthly family supply", 0, buf, sizeof(buf)),
		   "month family supply", "stems_ly_adverbs_only");
	TAP_STR_EQ(words_joined("movie movies", 0, buf, sizeof(buf)), "movy movy",
		   "movie_and_movies_meet");
	TAP_STR_EQ(words_joined("Café_naïveValue Straße2 ÉtatCivil", 0, buf, sizeof(buf)),
		   "café naïve value straße 2 État civil", "keeps_utf8_bytes_inside_words");
	TAP_STR_EQ(words_joined("CaféPrice", 0, buf, sizeof(buf)), "caféprice",
		   "utf8_byte_does_not_start_camel_boundary");

	char longw[200];
	memset(longw, 'q', 150);
	longw[150] = '\0';
	char **w;
	size_t n = 99;
	TAP_OK(embed_lexical_words(longw, 0, &w, &n) == 0 && n == 1 && strlen(w[0]) == 64,
	       "cuts_overlong_word_to_64_bytes");
	if (n == 1)
		free(w);

	n = 99;
	TAP_OK(embed_lexical_words("  ,;  ", 0, &w, &n) == 0 && n == 0 && w[0] == NULL,
	       "text_without_words_gives_empty_list");
	free(w);
	n = 99;
	TAP_OK(embed_lexical_words(NULL, 0, &w, &n) == 0 && n == 0 && w[0] == NULL,
	       "null_text_gives_empty_list");
	free(w);
}

static const char *const corpus[] = {
	"singer singer id integer primary key",
	"singer name text values Joe Sharp, Timbaland, Justin Brown",
	"singer country text values France, Netherlands, United States",
	"singer age integer values 52, 32, 29",
	"stadium stadium id integer primary key",
	"stadium name text values Stark's Park, Somerset Park",
	"stadium capacity integer values 4125, 10104, 52500",
	"concert concert name text values Auditions, Super bootcamp",
	"concert stadium id text foreign key stadium",
	"employee household income real",
	"employee first name text values Anna, Bruno",
};
#define N_CORPUS (sizeof(corpus) / sizeof(corpus[0]))

static double norm2(const float *v)
{
	double s = 0.0;

	for (size_t i = 0; i < DIM; i++)
		s += (double)v[i] * v[i];
	return sqrt(s);
}

static float cos_text(const struct embed_lexical *m, const char *a, const char *b)
{
	float va[DIM], vb[DIM];

	if (embed_lexical_vector(m, a, va) || embed_lexical_vector(m, b, vb))
		return -2.0f;
	return embed_cosine(va, vb, DIM);
}

static void test_vectors(struct embed_lexical *m)
{
	float v[DIM], w[DIM];
	bool all_unit = true;

	for (size_t i = 0; i < N_CORPUS; i++) {
		if (embed_lexical_vector(m, corpus[i], v) != 0 || fabs(norm2(v) - 1.0) > 1e-5)
			all_unit = false;
	}
	TAP_OK(all_unit, "document_vectors_are_unit_length");

	TAP_SETUP(embed_lexical_vector(m, "how many singers are from France", v));
	TAP_OK(fabs(norm2(v) - 1.0) < 1e-5, "question_vector_is_unit_length");

	TAP_OK(embed_lexical_vector(m, "", v) == 0 && norm2(v) == 0.0, "empty_text_gives_zero_vector");
	TAP_OK(embed_lexical_vector(m, "the of and", v) == 0 && norm2(v) == 0.0,
	       "stop_words_only_give_zero_vector");
	TAP_OK(embed_cosine(v, v, DIM) == 0.0f, "cosine_with_zero_vector_is_zero");

	TAP_SETUP(embed_lexical_vector(m, corpus[2], v));
	TAP_SETUP(embed_lexical_vector(m, corpus[2], w));
	TAP_OK(memcmp(v, w, sizeof(v)) == 0, "same_text_gives_same_vector");
	TAP_OK(fabsf(embed_cosine(v, w, DIM) - 1.0f) < 1e-5f, "identical_texts_have_cosine_one");

	float good = cos_text(m, "how many singers are from France",
			      "singer country text values France, Netherlands");
	float bad = cos_text(m, "how many singers are from France", "stadium capacity integer");
	TAP_OK(good > bad + 0.1f, "question_ranks_matching_column_above_unrelated");

	/* Rank the whole corpus: the country column must come first. */
	float q[DIM], d[DIM], best = -2.0f;
	size_t best_i = 99;
	TAP_SETUP(embed_lexical_vector(m, "how many singers are from France", q));
	for (size_t i = 0; i < N_CORPUS; i++) {
		TAP_SETUP(embed_lexical_vector(m, corpus[i], d));
		float c = embed_cosine(q, d, DIM);
		if (c > best) {
			best = c;
			best_i = i;
		}
	}
	TAP_INT_EQ(best_i, 2, "question_ranks_country_column_first_in_corpus");

	TAP_OK(cos_text(m, "countries", "country") > 0.99f, "plural_matches_singular");
	TAP_OK(cos_text(m, "Cities", "city") > 0.99f, "plural_ies_matches_singular_y");
	TAP_OK(cos_text(m, "HouseholdIncome", "household income") > 0.99f,
	       "camel_case_identifier_matches_spaced_words");
	float camel = cos_text(m, "what is the household income of each employee",
			       "employee HouseholdIncome real");
	float other = cos_text(m, "what is the household income of each employee",
			       "employee first name text");
	TAP_OK(camel > other, "camel_case_column_ranks_above_sibling_column");
	TAP_OK(cos_text(m, "nationality", "nation") > 0.1f &&
		       cos_text(m, "nationality", "capacity") < cos_text(m, "nationality", "nation"),
	       "trigrams_give_partial_credit_to_related_words");
	TAP_OK(cos_text(m, "singer age", "age singer") < 0.999f &&
		       cos_text(m, "singer age", "age singer") > 0.7f,
	       "bigrams_make_word_order_matter_a_little");
}

static void test_idf(void)
{
	static const char *const docs[] = {
		"name zebra", "name lion", "name tiger", "name horse", "name eagle",
	};
	struct embed_lexical m;
	struct t2s_error err;

	TAP_SETUP(embed_lexical_init(&m, DIM));
	TAP_OK(embed_lexical_fit(&m, docs, 5, &err) == 0, "fit_succeeds");
	float common = embed_lexical_word_idf(&m, "name");
	float rare = embed_lexical_word_idf(&m, "zebra");
	float unseen = embed_lexical_word_idf(&m, "giraffe");
	TAP_OK(fabsf(common - 1.0f) < 1e-6f, "word_in_every_doc_has_idf_one");
	TAP_OK(fabsf(rare - (float)(log(6.0 / 2.0) + 1.0)) < 1e-6f, "word_in_one_doc_has_smoothed_idf");
	TAP_OK(fabsf(unseen - (float)(log(6.0) + 1.0)) < 1e-6f, "unseen_word_has_max_idf");
	TAP_OK(embed_lexical_word_idf(&m, "Names") == common, "word_idf_normalises_its_argument");
	TAP_OK(embed_lexical_word_idf(&m, "the") == 0.0f, "word_idf_of_stop_word_is_zero");

	/* In "name zebra", zebra must carry more of the vector than name. */
	float nz = cos_text(&m, "name zebra", "name");
	float zz = cos_text(&m, "name zebra", "zebra");
	TAP_OK(zz > nz + 0.1f, "rare_word_contributes_more_than_common_word");

	struct embed_lexical flat;
	TAP_SETUP(embed_lexical_init(&flat, DIM));
	float nz_flat = cos_text(&flat, "name zebra", "name");
	TAP_OK(nz < nz_flat, "fitting_lowers_weight_of_ubiquitous_word");
	TAP_OK(embed_lexical_word_idf(&flat, "zebra") == 1.0f, "unfitted_model_has_idf_one");
	embed_lexical_release(&flat);
	embed_lexical_release(&m);
}

static void test_identity(void)
{
	static const char *const a[] = {"alpha beta", "gamma"};
	static const char *const b_[] = {"gamma", "alpha beta"};
	static const char *const c[] = {"alpha beta", "delta"};
	struct embed_lexical m1, m2, m3, m4;

	TAP_SETUP(embed_lexical_init(&m1, 0));
	TAP_STR_EQ(embed_lexical_id(&m1), "lexical-v1-d1024", "unfitted_identity_names_dimension");
	TAP_SETUP(embed_lexical_init(&m4, 256));
	TAP_STR_EQ(embed_lexical_id(&m4), "lexical-v1-d256", "identity_follows_dimension");
	TAP_INT_EQ(embed_lexical_init(&m4, EMBED_LEXICAL_MAX_DIM + 1), -T2S_ERR_INVALID,
		   "rejects_oversized_dimension");
	TAP_SETUP(embed_lexical_init(&m2, 0));
	TAP_SETUP(embed_lexical_init(&m3, 0));
	TAP_SETUP(embed_lexical_fit(&m1, a, 2, NULL));
	TAP_SETUP(embed_lexical_fit(&m2, b_, 2, NULL));
	TAP_SETUP(embed_lexical_fit(&m3, c, 2, NULL));
	TAP_OK(strncmp(embed_lexical_id(&m1), "lexical-v1-d1024-f", 18) == 0 &&
		       strlen(embed_lexical_id(&m1)) == 18 + 16,
	       "fitted_identity_carries_fingerprint");
	TAP_STR_EQ(embed_lexical_id(&m1), embed_lexical_id(&m2),
		   "identity_does_not_depend_on_document_order");
	TAP_OK(strcmp(embed_lexical_id(&m1), embed_lexical_id(&m3)) != 0,
	       "identity_changes_with_corpus");
	embed_lexical_release(&m1);
	TAP_STR_EQ(embed_lexical_id(&m1), "lexical-v1-d1024", "release_forgets_fit");
	embed_lexical_release(&m2);
	embed_lexical_release(&m3);
	embed_lexical_release(&m4);
	embed_lexical_release(NULL);
}

static void test_sparse(const struct embed_lexical *m)
{
	float dense[DIM], q[DIM];
	struct embed_sparse s;
	bool same = true;
	size_t nz = 0;

	TAP_SETUP(embed_lexical_vector(m, corpus[2], dense));
	TAP_OK(embed_lexical_sparse(m, corpus[2], &s) == 0, "sparse_succeeds");
	for (size_t i = 0; i < DIM; i++)
		nz += dense[i] != 0.0f;
	for (size_t i = 0; i < s.nnz; i++) {
		if (dense[s.idx[i]] != s.val[i] || (i && s.idx[i] <= s.idx[i - 1]))
			same = false;
	}
	TAP_OK(same && s.nnz == nz, "sparse_equals_dense_bit_for_bit");
	TAP_SETUP(embed_lexical_vector(m, "how many singers are from France", q));
	TAP_OK(fabsf(embed_sparse_dot(&s, q) - embed_cosine(q, dense, DIM)) < 1e-6f,
	       "sparse_dot_equals_dense_cosine");
	embed_sparse_release(&s);
	TAP_OK(embed_lexical_sparse(m, "", &s) == 0 && s.nnz == 0 && s.idx == NULL,
	       "sparse_of_empty_text_is_empty");
	embed_sparse_release(&s);
	embed_sparse_release(NULL);
}

struct thread_job {
	const struct embed_lexical *m;
	float *out;  /* N_CORPUS * DIM */
	int rounds;
};

static void *embed_all(void *arg)
{
	struct thread_job *j = arg;

	for (int r = 0; r < j->rounds; r++)
		for (size_t i = 0; i < N_CORPUS; i++)
			TAP_SETUP(embed_lexical_vector(j->m, corpus[i], j->out + i * DIM));
	return NULL;
}

static void test_threads(const struct embed_lexical *m)
{
	float *seq = malloc(N_CORPUS * DIM * sizeof(float));
	float *par[4];
	pthread_t t[4];
	struct thread_job jobs[4];
	bool same = true;

	for (size_t i = 0; i < N_CORPUS; i++)
		TAP_SETUP(embed_lexical_vector(m, corpus[i], seq + i * DIM));
	for (int k = 0; k < 4; k++) {
		par[k] = calloc(N_CORPUS * DIM, sizeof(float));
		jobs[k] = (struct thread_job){m, par[k], 50};
		pthread_create(&t[k], NULL, embed_all, &jobs[k]);
	}
	for (int k = 0; k < 4; k++) {
		pthread_join(t[k], NULL);
		if (memcmp(seq, par[k], N_CORPUS * DIM * sizeof(float)) != 0)
			same = false;
		free(par[k]);
	}
	free(seq);
	TAP_OK(same, "four_threads_embed_identically_to_sequential");
}

int main(void)
{
	struct embed_lexical m;
	struct t2s_error err;

	test_tokeniser();
	TAP_INT_EQ(embed_lexical_init(&m, DIM), 0, "init_succeeds");
	TAP_INT_EQ(embed_lexical_fit(&m, corpus, N_CORPUS, &err), 0, "fit_on_column_documents");
	TAP_INT_EQ(m.n_docs, N_CORPUS, "fit_records_document_count");
	test_vectors(&m);
	test_idf();
	test_identity();
	test_sparse(&m);
	test_threads(&m);
	embed_lexical_release(&m);
	return tap_done();
}
