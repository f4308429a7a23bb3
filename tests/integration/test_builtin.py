#!/usr/bin/env python3
"""test_builtin.py - the built-in generator (pipeline/builtin/, issue 17) through /query and
/generate, on SQLite, PostgreSQL and MariaDB, with fixtures written here.

- without a generate model, each shape it reads is answered (generator "builtin", a confidence
  in [0, 1]) with the rows of a hand-written expected result: counts, lists filtered by a stored
  value, comparisons and ranges, aggregates (and chains of them), superlatives, per-group counts,
  ordering, DISTINCT, the most common value, a join through a foreign key; the joined table's rows
  counted per row (most, at least N, "and the number of"), through a foreign key or a bridge
  table; per-value counts of a listed column; "not" and "either ... or" values; set operations
  of two clauses sharing the question's head ("both X and Y" INTERSECT, "X but not Y" EXCEPT,
  "X or Y" UNION, OR over one table); three tables through a bridge; WordNet readings (a verb between joined tables, "never <verb> any", "the
  oldest");
- on a second database, the readings of schema names and English: numbers as words, "N or more",
  "the 2 oldest", abbreviated columns (stu_fname, stu_dob, emp_fname, gname), synonyms alone,
  "full name" / "given name" / "family name", a bare direction, "live in", "number of bedrooms"
  (bedroom_count), "average number of floors", "amount of outstanding", a unit left unsaid,
  "X that is most common", a synonym for one word of a column, "birthplace", numbers kept as text
  (SQLite), "how many different <table>", sex words, "more than 20 credits", "at each", titles,
  "all information about", a table named by its own column; refusals of a relative clause's
  column and a listed table;
- questions it cannot read are refused: 422 builtin-refused without Retry-After (retrying cannot
  help), naming its reason (the problem's builtin member); questions asking to delete or change
  data are refused and nothing changes (checksums before and after);
- options.generator: "model" without a model is 422 generation-unavailable, "builtin" with a model never calls it,
  "auto" with a working model answers from the model (generator "model"), any other value 400;
- with a stub model that fails (HTTP 500), hangs past its timeout, or whose breaker is open, the
  built-in answers in its place and the answer's fallbacks say so; a refusal keeps the model's
  error; a request whose own time budget ran out stays a 504;
- /readyz says builtin_only without a model; /metrics counts answers by generator.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-builtin-")
QUIET = {"level": "warn", "access": False}

# "unitPrice": a mixed-case name PostgreSQL must see quoted.
SCHEMA = """
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, full_name TEXT, city TEXT, country TEXT, age INTEGER);
CREATE TABLE products (product_id INTEGER PRIMARY KEY, name TEXT, category TEXT, "unitPrice" REAL);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(customer_id),
                     status TEXT, amount REAL);
CREATE TABLE order_items (order_id INTEGER REFERENCES orders(order_id),
                          product_id INTEGER REFERENCES products(product_id), quantity INTEGER);
CREATE TABLE staff (staff_id INTEGER PRIMARY KEY, full_name TEXT, phone TEXT);
CREATE TABLE course (course_id INTEGER PRIMARY KEY, title TEXT);
CREATE TABLE roles (role_code TEXT PRIMARY KEY, role_description TEXT);
CREATE TABLE tutors (tutor_id INTEGER PRIMARY KEY, login_name TEXT, family_name TEXT);
"""
ROWS = {
    "customers": [(1, "Ada Moreau", "Lyon", "France", 34), (2, "Bram de Vries", "Utrecht", "Netherlands", 41),
                  (3, "Chen Wei", "Shanghai", "China", 29), (4, "Dolores Ruiz", "Sevilla", "Spain", 52),
                  (5, "Elise Martin", "Paris", "France", 23)],
    "products": [(1, "Espresso beans", "coffee", 24.5), (2, "Filter papers", "accessories", 3.9),
                 (3, "Burr grinder", "equipment", 189.0), (4, "Green tea", "tea", 12.0),
                 (5, "Milk frother", "equipment", 45.0)],
    "orders": [(101, 1, "shipped", 49.0), (102, 2, "pending", 189.0), (103, 4, "shipped", 12.0),
               (104, 4, "cancelled", 45.0), (105, 5, "delivered", 3.9)],
    "order_items": [(101, 1, 2), (101, 2, 1), (102, 3, 1), (103, 4, 3), (104, 5, 1), (105, 2, 4)],
    "staff": [(1, "Lea Roux", "555-0300"), (2, "Omar Haddad", "555-0301")],
    "course": [(1, "Barista basics"), (2, "Latte art")],
    "roles": [("ED", "Editor"), ("PR", "Proof reader")],
    "tutors": [(1, "amoss", "Moss"), (2, "kvega", "Vega")],
}
SQLITE_PATH = fixtures.write_sqlite(os.path.join(TMP, "shop.sqlite"), SCHEMA, ROWS)

# (name, question, expected rows, order matters)
SHAPES = [
    ("count", "How many customers are there?", [[5]], False),
    # WordNet's synonym of curriculum is "course of study", whose head is the table's name
    ("a_compound_synonyms_head_before_of", "How many curricula are there?", [[2]], False),
    ("count_with_stored_value", "How many customers are from France?", [[2]], False),
    ("list_with_stored_value", "What are the full names of customers from France?",
     [["Ada Moreau"], ["Elise Martin"]], False),
    ("comparison", "List the names of products whose unit price is greater than 20.",
     [["Espresso beans"], ["Burr grinder"], ["Milk frother"]], False),
    ("range", "Show the names of products with unit price between 10 and 30.",
     [["Espresso beans"], ["Green tea"]], False),
    ("aggregate", "What is the average age of customers?", [[35.8]], False),
    ("a_synonym_of_phone_and_number", "What is the telephone number of the staff member Omar Haddad?",
     [["555-0301"]], False),
    ("members_after_a_tables_name", "How many staff members are there?", [[2]], False),
    # a WordNet collocation whose synonym of two words is a column's name: a last name is a family name
    ("a_collocations_synonym_of_two_words", "What are the login names and last names of all tutors?",
     [["amoss", "Moss"], ["kvega", "Vega"]], False),
    ("count_per_row_of_the_table_after_each", "How many orders does each customer have?",
     [["Ada Moreau", 1], ["Bram de Vries", 1], ["Dolores Ruiz", 2], ["Elise Martin", 1]], False),
    ("aggregate_chain", "What is the maximum and minimum unit price of products?", [[189.0, 3.9]], False),
    ("superlative", "What is the name of the product with the highest unit price?", [["Burr grinder"]], False),
    ("group_count", "How many customers are there in each country?",
     [["China", 1], ["France", 2], ["Netherlands", 1], ["Spain", 1]], False),
    ("ordering", "List the full names of customers ordered by age in descending order.",
     [["Dolores Ruiz"], ["Bram de Vries"], ["Ada Moreau"], ["Chen Wei"], ["Elise Martin"]], True),
    ("distinct", "Show the distinct categories of products.",
     [["coffee"], ["accessories"], ["equipment"], ["tea"]], False),
    ("most_common", "What is the most common category of products?", [["equipment"]], False),
    ("join_through_foreign_key", "What are the statuses of orders of customers from Spain?",
     [["shipped"], ["cancelled"]], False),
    # the joined table's rows counted per row of the main table, through a foreign key or a bridge table
    ("most_rows_of_the_joined_table", "What is the full name of the customer with the most orders?",
     [["Dolores Ruiz"]], False),
    ("having_rows_of_the_joined_table", "Show the full names of customers with at least 2 orders.",
     [["Dolores Ruiz"]], False),
    ("count_per_row_of_the_main_table", "Show the full names of customers and the number of orders.",
     [["Ada Moreau", 1], ["Bram de Vries", 1], ["Dolores Ruiz", 2], ["Elise Martin", 1]], False),
    ("count_per_row_restated_for_each", "Show the full names of customers and the number of orders for each customer.",
     [["Ada Moreau", 1], ["Bram de Vries", 1], ["Dolores Ruiz", 2], ["Elise Martin", 1]], False),
    ("most_rows_through_a_bridge", "What is the name of the product with the most orders?", [["Filter papers"]], False),
    ("count_per_listed_column", "Show the countries and the number of customers.",
     [["China", 1], ["France", 2], ["Netherlands", 1], ["Spain", 1]], False),
    ("value_negated", "What are the full names of customers whose country is not France?",
     [["Bram de Vries"], ["Chen Wei"], ["Dolores Ruiz"]], False),
    ("two_values_or", "How many customers are from either France or Spain?", [[3]], False),
    ("three_tables_through_a_bridge", "What are the names of products in orders with status shipped?",
     [["Espresso beans"], ["Filter papers"], ["Green tea"]], False),
    # WordNet: a verb between the joined tables, "never <verb> any <table>", a superlative adjective
    ("verb_between_the_joined_tables", "What is the full name of the customer who placed the most orders?",
     [["Dolores Ruiz"]], False),
    # a preposition between the main table's name and the joined table's
    ("preposition_between_the_joined_tables", "What are the statuses of orders by customers from Spain?",
     [["shipped"], ["cancelled"]], False),
    ("never_verb_any_table", "How many customers never placed any orders?", [[1]], False),
    ("superlative_adjective", "What is the full name of the oldest customer?", [["Dolores Ruiz"]], False),
    # "years old" after a number compared with an age
    ("years_old_after_an_age", "What are the full names of customers over 40 years old?",
     [["Bram de Vries"], ["Dolores Ruiz"]], False),
    # a participle before the column it is a form of ("describing" description; "statement" said for it)
    ("a_participle_of_the_column_it_qualifies", "What is the describing statement of role code ED?", [["Editor"]],
     False),
]
# Set operations read as two clauses sharing the question's head (builtin_compound.c):
# (name, question, expected rows, shape, what the SQL says)
COMPOUND = [
    ("intersect_both_ranges_of_one_column",
     "Show the countries that have both customers with age above 30 and customers with age below 30.",
     [["France"]], "intersect", "INTERSECT"),
    ("intersect_two_values_over_a_join",
     "What are the full names of customers with orders of status both shipped and cancelled?",
     [["Dolores Ruiz"]], "intersect", "INTERSECT"),
    ("except_but_not",
     "What are the names of products in orders with status shipped but not in orders with status delivered?",
     [["Espresso beans"], ["Green tea"]], "except", "EXCEPT"),
    ("union_over_one_table_is_or",
     "What are the full names of customers from Spain or with age below 25?",
     [["Dolores Ruiz"], ["Elise Martin"]], "union", " OR "),
    ("union_over_a_join",
     "What are the full names of customers with orders of status pending or with age below 25?",
     [["Bram de Vries"], ["Elise Martin"]], "union", "UNION"),
]
REFUSED = [
    ("refuses_negation", "Which customers have never ordered anything?"),
    ("refuses_a_table_listed_after_and_all", "What are the statuses of all orders and all customers?"),
    ("refuses_unknown_words", "Which products taste best with breakfast?"),
    ("refuses_a_verb_of_a_condition_of_its_own", "Which customers contain the most orders?"),
    ("refuses_a_total_over_a_repeating_join", "What is the total age of customers of orders with status shipped?"),
    # compounds it is unsure of: "but" without a negation, clauses showing different columns
    ("refuses_but_without_a_negation", "What are the full names of customers from France but with age above 30?"),
    ("refuses_clauses_showing_different_columns",
     "What are the full names of customers from France and the names of products in category tea?"),
    ("refuses_or_between_clauses_showing_different_columns",
     "What are the full names of customers from Spain or the cities of customers with age below 25?"),
]
# A second database for the readings of schema names and English the first one does not have:
# abbreviated columns (stu_fname, stu_dob, emp_ prefix, gname), counts of things (bedroom_count),
# units (budget_million), numbers kept as text, a sex column, a title naming a table's rows.
CAMPUS_SCHEMA = """
CREATE TABLE student (stu_id INTEGER PRIMARY KEY, stu_fname TEXT, stu_lname TEXT, stu_dob TEXT, sex TEXT,
                      city TEXT, age INTEGER, credits INTEGER, phone_number TEXT, birth_place TEXT,
                      on_scholarship TEXT, role TEXT);
CREATE TABLE employee (emp_id INTEGER PRIMARY KEY, emp_fname TEXT, emp_lname TEXT, emp_dob DATE, phone TEXT);
CREATE TABLE department (dept_id INTEGER PRIMARY KEY, dname TEXT, head INTEGER REFERENCES employee(emp_id));
CREATE TABLE course (course_id INTEGER PRIMARY KEY, cname TEXT, instructor INTEGER REFERENCES employee(emp_id),
                     dept_id INTEGER REFERENCES department(dept_id));
CREATE TABLE person (person_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT);
CREATE TABLE movie (movie_id INTEGER PRIMARY KEY, title TEXT, year TEXT, budget_million REAL);
CREATE TABLE video_games (game_id INTEGER PRIMARY KEY, gname TEXT, gtype TEXT);
CREATE TABLE apartments (apt_id INTEGER PRIMARY KEY, bedroom_count INTEGER, floors INTEGER, amount_outstanding REAL,
                         rent TEXT);
CREATE TABLE clubs (club_id INTEGER PRIMARY KEY, club TEXT, town TEXT, founded_year INTEGER);
CREATE TABLE ref_club_types (club_type_code TEXT PRIMARY KEY, club_type_description TEXT);
CREATE TABLE club_members (member_id INTEGER PRIMARY KEY, stu_id INTEGER REFERENCES student(stu_id),
                           club_id INTEGER REFERENCES clubs(club_id));
CREATE TABLE grapes (grape TEXT PRIMARY KEY, color TEXT);
CREATE TABLE wines (wine_id INTEGER PRIMARY KEY, grape TEXT REFERENCES grapes(grape), price REAL, drink TEXT);
CREATE TABLE student_awards (award_id INTEGER PRIMARY KEY, stu_id INTEGER REFERENCES student(stu_id), prize TEXT);
CREATE TABLE projects (project_id INTEGER PRIMARY KEY, project_details TEXT);
CREATE TABLE lessons (lesson_id INTEGER PRIMARY KEY, stu_id INTEGER REFERENCES student(stu_id), lesson_date TEXT);
CREATE TABLE climber (climber_id INTEGER PRIMARY KEY, name TEXT, points INTEGER, rank INTEGER);
CREATE TABLE program (program_id INTEGER PRIMARY KEY, name TEXT, origin TEXT, owner TEXT);
CREATE TABLE broadcast (broadcast_id INTEGER PRIMARY KEY, program_id INTEGER REFERENCES program(program_id),
                        time_of_day TEXT);
CREATE TABLE program_notes (note_id INTEGER PRIMARY KEY, program_id INTEGER REFERENCES program(program_id),
                            note TEXT);
CREATE TABLE stations (station_id INTEGER PRIMARY KEY, name TEXT, lat REAL);
CREATE TABLE agents (agent_id INTEGER PRIMARY KEY, agent_name TEXT, agent_salary INTEGER, city_code TEXT);
CREATE TABLE screenings (screening_id INTEGER PRIMARY KEY, movie_id INTEGER REFERENCES movie(movie_id));
CREATE TABLE products (product_id INTEGER PRIMARY KEY, product_name TEXT, product_size TEXT);
CREATE TABLE apartment_bookings (booking_id INTEGER PRIMARY KEY, apt_id INTEGER REFERENCES apartments(apt_id),
                                 booking_start_date TEXT, booking_status TEXT);
CREATE TABLE users (user_id INTEGER PRIMARY KEY, user_login INTEGER);
CREATE TABLE offices (office_id INTEGER PRIMARY KEY, town TEXT, zip_code TEXT);
CREATE TABLE dorms (dorm_id INTEGER PRIMARY KEY, dorm_name TEXT, student_capacity INTEGER);
CREATE TABLE reviews (review_id INTEGER PRIMARY KEY, rating INTEGER);
CREATE TABLE bouts (bout_id INTEGER PRIMARY KEY, match_rating INTEGER);
CREATE TABLE eliminations (elimination_id INTEGER PRIMARY KEY, team TEXT, move TEXT);
CREATE TABLE festivals (festival_id INTEGER PRIMARY KEY, chair_name TEXT, end_day TEXT);
CREATE TABLE entrepreneurs (entrepreneur_id INTEGER PRIMARY KEY, investor TEXT, company TEXT, money_requested REAL);
CREATE TABLE county_public_safety (county_id INTEGER PRIMARY KEY, name TEXT, population INTEGER,
                                   police_officers INTEGER, case_burden INTEGER);
CREATE TABLE home_fixtures (fixture_id INTEGER PRIMARY KEY, fixture_venue TEXT);
CREATE TABLE patrols (patrol_id INTEGER PRIMARY KEY, sector TEXT, patrols INTEGER);
CREATE TABLE stadiums (stadium_id INTEGER PRIMARY KEY, stadium_name TEXT, num_of_gates INTEGER, total_seats INTEGER,
                       revenue_millions_usd REAL, stadium_home TEXT, home_region TEXT);
CREATE TABLE guests (guest_id INTEGER PRIMARY KEY, guest_name TEXT, signup_date DATE);
CREATE TABLE stays (stay_id INTEGER PRIMARY KEY, guest_id INTEGER REFERENCES guests(guest_id), checkin_date DATE);
CREATE TABLE studies_records (record_id INTEGER PRIMARY KEY, stu_id INTEGER REFERENCES student(stu_id), hours INTEGER);
"""
CAMPUS_ROWS = {
    "student": [(1, "Ada", "Moreau", "2001-03-04", "F", "Lyon", 24, 30, "555-0101", "Paris", "Y", "Pupil"),
                (2, "Bram", "Vries", "2003-07-19", "M", "Utrecht", 22, 12, "555-0102", "Delft", "N", "Tutor"),
                (3, "Chen", "Wei", "1999-11-30", "M", "Lyon", 26, 45, "555-0103", "Shanghai", "Y", "Pupil"),
                (4, "Dolores", "Ruiz", "2004-01-08", "F", "Sevilla", 20, 8, "555-0104", "Sevilla", "N", "Pupil"),
                (5, "Elise", "Martin", "2002-05-22", "F", "Lyon", 21, 25, "555-0105", "Nice", "N", "Tutor")],
    "employee": [(1, "Ines", "Roth", "1980-02-01", "555-0200"), (2, "Karl", "Berg", "1975-06-30", "555-0200")],
    "department": [(1, "Physics", 1), (2, "Letters", 2)],
    "course": [(1, "Algebra", 2, 1), (2, "Poetry", 1, 2)],
    "person": [(1, "Ada", "Lovelace"), (2, "Alan", "Turing")],
    "movie": [(1, "Heat", "1995", 60.0), (2, "Up", "2009", 175.0), (3, "Arrival", "2016", 47.0)],
    "video_games": [(1, "Zelda", "RPG"), (2, "Tetris", "Puzzle"), (3, "Halo", "Shooter")],
    "apartments": [(1, 2, 3, 1200.0, "1,200"), (2, 3, 5, 800.0, "950"), (3, 1, 2, 0.0, "2,100")],
    "clubs": [(1, "Rowing", "Oxford", 1890), (2, "Chess", "Oxford", 1975), (3, "Sailing", "Brest", 2001)],
    "ref_club_types": [("RW", "Rowing and canoeing"), ("BG", "Board games")],
    "club_members": [(1, 1, 1), (2, 3, 2), (3, 3, 1)],
    "grapes": [("Merlot", "red"), ("Syrah", "red"), ("Chardonnay", "white")],
    "wines": [(1, "Merlot", 12.0, "now"), (2, "Merlot", 30.0, "2030"), (3, "Syrah", 18.0, "now")],
    "student_awards": [(1, 3, "Dean's list"), (2, 3, "Chess cup"), (3, 1, "Rowing cup")],
    "projects": [(1, "Solar roof"), (2, "Library app"), (3, "Solar roof")],
    "lessons": [(1, 1, "2024-09-02"), (2, 3, "2024-09-03")],
    "climber": [(1, "Reinhold", 40, 2), (2, "Junko", 55, 1), (3, "Wanda", 30, 3)],
    "program": [(1, "Newsnight", "London", "BBC"), (2, "Kaleidoscope", "Beijing", "CCTV"), (3, "Belong", "Paris", "TF1")],
    "broadcast": [(1, 1, "Night"), (2, 1, "Morning"), (3, 2, "Night")],
    "program_notes": [(1, 1, "Live"), (2, 1, "Repeat"), (3, 2, "Live")],
    "stations": [(1, "Oak", 37.5), (2, "Elm", 38.25)],
    "agents": [(1, "Moss", 3100, "LDN"), (2, "Vega", 2800, "MAD")],
    "screenings": [(1, 2), (2, 2), (3, 3)],
    "products": [(1, "Scarf", "S"), (2, "Coat", "L"), (3, "Cap", "S")],
    "apartment_bookings": [(1, 1, "2024-05-01", "Confirmed"), (2, 3, "2024-06-15", "Provisional")],
    "users": [(1, 1), (2, 0), (3, 1)],
    "offices": [(1, "Lyon", "69001"), (2, "Nice", "06000")],
    "dorms": [(1, "Oak Hall", 120), (2, "Elm Hall", 80)],
    "reviews": [(1, 4), (2, 5), (3, 3)],
    "bouts": [(1, 7), (2, 9)],
    "eliminations": [(1, "Team Orton", "Spear"), (2, "Team Batista", "Slam"), (3, "Team Orton", "Kick")],
    "festivals": [(1, "Ines Roth", "Sunday"), (2, "Karl Berg", "Monday")],
    "entrepreneurs": [(1, "Ada", "Solaris", 150000.0), (2, "Ada", "Verdant", 90000.0), (3, "Bo", "Quill", 120000.0)],
    "county_public_safety": [(1, "Howard", 300, 12, 7), (2, "Essex", 900, 40, 95)],
    "home_fixtures": [(1, "Oxford"), (2, "Brest"), (3, "Oxford")],
    "patrols": [(1, "North", 12), (2, "South", 30)],
    "stadiums": [(1, "Arena", 4, 900, 12.5, "Rovers", "North"), (2, "Bowl", 8, 300, 3.0, "United", "Coast")],
    "guests": [(1, "Iris", "2020-01-05"), (2, "Noor", "2023-03-01")],
    "stays": [(1, 1, "2024-06-01"), (2, 2, "2024-01-10")],
    "studies_records": [(1, 1, 6)],
}
CAMPUS_PATH = fixtures.write_sqlite(os.path.join(TMP, "campus.sqlite"), CAMPUS_SCHEMA, CAMPUS_ROWS)
# (name, question, expected rows, order matters, engines: None for both)
READINGS = [
    ("number_words_in_a_count_of_groups", "Which cities have more than two students?", [["Lyon"]], False, None),
    ("number_or_more_is_inclusive", "How many students have age 22 or more?", [[3]], False, None),
    ("the_n_oldest", "What are the first names of the 2 oldest students?", [["Chen"], ["Ada"]], True, None),
    ("initials_and_an_abbreviated_table_prefix", "What is the date of birth of the student with first name Ada?",
     [["2001-03-04"]], False, None),
    ("only_a_synonym_names_the_table", "How many films are there?", [[3]], False, None),
    ("full_name_is_first_and_last_name", "What are the full names of all persons?",
     [["Ada", "Lovelace"], ["Alan", "Turing"]], False, None),
    ("given_name_and_family_name", "What is the family name of the person with given name Alan?", [["Turing"]], False,
     None),
    ("table_initial_column_and_a_bare_direction", "List the names of video games in alphabetical order.",
     [["Halo"], ["Tetris"], ["Zelda"]], True, None),
    ("live_in_a_stored_value", "How many students live in Lyon?", [[3]], False, None),
    ("number_of_x_is_x_count", "What is the average number of bedrooms of apartments?", [[2.0]], False, None),
    ("average_number_of_a_number_column", "What is the average number of floors of apartments?",
     [[10 / 3]], False, None),
    ("amount_of_outstanding", "What is the maximum amount of outstanding of apartments?", [[1200.0]], False, None),
    ("a_unit_left_unsaid", "What is the average budget of movies?", [[94.0]], False, None),
    ("most_common_after_its_column", "Which city is the most common among students?", [["Lyon"]], False, None),
    ("synonym_for_one_word_of_a_column", "What is the telephone number of the student with first name Ada?",
     [["555-0101"]], False, None),
    ("words_run_together", "What is the birthplace of the student with first name Ada?", [["Paris"]], False, None),
    ("numbers_kept_as_text", "How many movies have year greater than 2000?", [[2]], False, ("sqlite",)),
    ("how_many_different_rows_of_a_table", "How many different students are there?", [[5]], False, None),
    ("sex_word_reads_the_stored_code", "How many female students are there?", [[3]], False, None),
    ("comparison_before_its_column", "How many students have more than 20 credits?", [[3]], False, None),
    ("at_each_groups", "How many students are there at each city?",
     [["Lyon", 3], ["Sevilla", 1], ["Utrecht", 1]], False, None),
    ("title_names_the_rows", "What are the names of all movies?", [["Heat"], ["Up"], ["Arrival"]], False, None),
    ("longest_direction_phrase", "List the names of all movies in ascending alphabetical order.",
     [["Arrival"], ["Heat"], ["Up"]], True, None),
    ("all_information_about", "Show all information about video games.",
     [[1, "Zelda", "RPG"], [2, "Tetris", "Puzzle"], [3, "Halo", "Shooter"]], False, None),
    ("abbreviated_table_prefix", "What are the first names of employees?", [["Ines"], ["Karl"]], False, None),
    ("a_table_named_by_its_own_column", "What clubs are in Oxford?", [["Rowing"], ["Chess"]], False, None),
    ("not_before_a_preposition_and_a_value", "What are the first names of students who are not from Lyon?",
     [["Bram"], ["Dolores"]], False, None),
    ("not_before_the_values_column", "Which clubs are not in the town of Oxford?", [["Sailing"]], False, None),
    ("oldest_is_the_earliest_birth_date_and_first_and_last_name_abbreviated",
     "What is the first and last name of the oldest employee?", [["Karl", "Berg"]], False, None),
    ("earliest_of_a_date_column", "What is the earliest date of birth of employees?", [["1975-06-30"]], False, None),
    ("the_n_rows_before_the_table_name", "What are the first names of the 2 students with the most credits?",
     [["Chen"], ["Ada"]], True, None),
    ("contains_a_quoted_text", "What are the first names of students whose city contains 'YO'?",
     [["Ada"], ["Chen"], ["Elise"]], False, None),
    ("ends_with_a_text", 'What are the years of movies whose title ends with "val"?', [["2016"]], False, None),
    ("the_letter_in_their_column", "How many students have the letter v in their city?", [[1]], False, None),
    ("a_table_named_without_another_tables_name",
     "What is the first name of the student with the most awards?", [["Chen"]], False, None),
    ("older_than_a_number_compares_the_age", "What are the first names of students older than 23?",
     [["Ada"], ["Chen"]], False, None),
    ("younger_than_average", "How many students are younger than average?", [[3]], False, None),
    ("more_than_average_without_the", "How many students have credits more than average?", [[3]], False, None),
    ("ordered_descending_by", "List the first names of students ordered descending by age.",
     [["Chen"], ["Ada"], ["Bram"], ["Elise"], ["Dolores"]], True, None),
    ("for_each_table_grouped_by_its_text_key", "How many wines are there for each grape?",
     [["Merlot", 2], ["Syrah", 1]], False, None),
    ("a_verb_and_a_year_compare_the_year_column", "Which clubs were founded after 1950?",
     [["Chess"], ["Sailing"]], False, None),
    ("a_verb_between_two_years", "How many clubs were founded between 1800 and 1980?", [[2]], False, None),
    ("has_most_without_the", "Which city has most students?", [["Lyon"]], False, None),
    ("a_relative_where", "List the first names of students where the age is above 24.", [["Chen"]], False, None),
    # a shared office phone: each employee's, not each phone once
    ("phone_number_is_the_phone_column_of_each_row", "List the phone numbers of all employees.",
     [["555-0200"], ["555-0200"]], False, None),
    ("a_sort_verb_away_from_its_ordering", "Sort the first names of students in descending order of age.",
     [["Chen"], ["Ada"], ["Bram"], ["Elise"], ["Dolores"]], True, None),
    ("a_lookup_tables_ref_prefix", "What is the description of the club type with code BG?", [["Board games"]],
     False, None),
    ("are_not_a_table", "List the first names of students that are not club members.",
     [["Bram"], ["Dolores"], ["Elise"]], False, None),
    ("an_aggregate_for_different_values_groups", "What is the total credits of students in different cities?",
     [["Lyon", 100], ["Sevilla", 8], ["Utrecht", 12]], False, None),
    ("one_aggregate_of_two_columns", "What is the average age and credits of students?", [[22.6, 24.0]], False, None),
    ("a_single_quoted_stored_value", "How many students have city 'Lyon'?", [[3]], False, None),
    ("a_key_naming_whose_columns_are_shown",
     "What is the first name of the instructor who has a course named Algebra?", [["Karl"]], False, None),
    # no schema word is "information": linking's related words stand details in for it, and the question
    # is read as if it said "details" (project_details without its table's name)
    ("a_related_word_read_as_if_said", "What are the ids and information of all projects?",
     [[1, "Solar roof"], [2, "Library app"], [3, "Solar roof"]], False, None),
    # WordNet's synonym of mountaineer is "mountain climber", whose head is the table's name
    ("a_compound_synonyms_head_names_the_table", "List the names of mountaineers with more than 50 points.", [["Junko"]],
     False, None),
    # a British spelling read as the schema spells it (WordNet also gives broadcast for programme)
    ("a_british_spelling", "List the names of programmes from Beijing.", [["Kaleidoscope"]], False, None),
    # WordNet's synonym salary said instead of wage: agent_salary without its table's name
    ("a_nouns_synonym_read_as_if_said", "What is the wage of the agent with name Vega?", [[2800]], False, None),
    # the table named first is the main one, though a synonym names it (films) and a name the other
    ("a_synonym_named_main_table", "What are the titles of films with at least 2 screenings?", [["Up"]],
     False, None),
    # the counted word after a number names the count column (bedroom_count)
    ("a_count_column_named_after_a_number", "How many apartments have more than 2 bedrooms?", [[1]], False, None),
    # a verb WordNet derives the column's name from (owned: owner), "not" before it
    ("a_verb_deriving_the_columns_name_negated", "What are the names of programs not owned by CCTV?",
     [["Newsnight"], ["Belong"]], False, None),
    # "belong to" a stored value; the verb in lower case is not the program named 'Belong'
    ("belong_to_a_value", "What are the names of programs that belong to CCTV?", [["Kaleidoscope"]], False, None),
    ("do_not_belong_to_a_value", "What are the names of programs that do not belong to CCTV?",
     [["Newsnight"], ["Belong"]], False, None),
    # linking's related words stand product in for goods; "goods sizes" is read as product_size
    ("a_related_word_said_instead_of_a_names_first_word", "What are the different goods sizes?", [["S"], ["L"]],
     False, None),
    # "the number of" a synonym said instead (bedchamber: bedroom) names the count column bedroom_count
    ("the_number_of_a_synonym", "What is the average number of bedchambers of all apartments?", [[2.0]], False,
     None),
    ("shared_by_more_than_n_rows", "Which cities are shared by more than two students?", [["Lyon"]], False, None),
    # booking_start_date in apartment_bookings: its name without the table's last word in front
    ("a_column_without_the_tables_last_word", "What are the start dates of all apartment bookings?",
     [["2024-05-01"], ["2024-06-15"]], False, None),
    # a code column named by the word before "code" (city_code)
    ("a_code_column_named_without_code", "Which city does the agent with name Moss live in?", [["LDN"]], False,
     None),
    # "programme notes" read as program notes: the program_notes table, which "notes" alone names too
    ("a_spelling_said_instead_over_a_tables_name", "How many programme notes are there?", [[3]], False, None),
    # a one-word column name cut short (lat)
    ("a_column_name_cut_short", "What is the latitude of the station named Elm?", [[38.25]], False, None),
    ("one_word_without_the_tables_last_word", "What are the statuses of all apartment bookings?",
     [["Confirmed"], ["Provisional"]], False, None),
    # the table's name between the aggregate and its column
    ("an_aggregate_of_a_tables_column_named_with_it", "What is the total wine price?", [[60.0]], False, None),
    # details are each row's own: listed once per row, repeated ones too
    ("details_listed_for_each_row", "Show all project details.",
     [["Solar roof"], ["Library app"], ["Solar roof"]], False, None),
    # a verb no other rule reads states the relation the tables hold: alone, and before a bridge's value
    # WordNet collocations read whole: an alcoholic drink is what wine is a kind of (though a column is
    # named drink), a postal code is a zip code
    ("a_collocation_read_whole", "List the prices of all alcoholic drinks.", [[12.0], [30.0], [18.0]], False, None),
    ("a_collocation_a_synonym_of_a_column", "What is the postal code of the office in town Nice?", [["06000"]],
     False, None),
    # a table of several words named by its first word, which no other name says
    ("a_table_named_by_its_first_word", "What is the name of the county with the largest population?",
     [["Essex"]], False, None),
    # a table of several words named by its last word, its head, which only its own columns start with
    ("a_table_named_by_its_last_word", "Show the fixture venues and the number of fixtures.",
     [["Brest", 1], ["Oxford", 2]], False, None),
    # a preposition before the count that opens the question
    ("a_preposition_before_how_many", "In how many different cities are students located?", [[3]], False, None),
    # a superlative after "of" and a table's name
    ("of_the_table_of_the_highest_column", "What is the name of the climber of the highest points?", [["Junko"]],
     False, None),
    # rank 1 is the highest
    ("the_highest_rank_is_the_smallest", "What is the highest rank of all climbers?", [[1]], False, None),
    # a count of a column's name: its different values
    ("how_many_of_a_column", "How many towns have clubs?", [[2]], False, None),
    # "both" with the second condition on the same column said alone
    ("both_then_a_condition_said_alone", "Which cities have both students with age above 25 and below 22?",
     [["Lyon"]], False, None),
    # a text column then "names": the column's values are the names (not the table's name column too)
    ("a_column_then_names", "What are the owner names of all programs?", [["BBC"], ["CCTV"], ["TF1"]], False,
     None),
    # alphabetical, beside several columns shown: by the naming column among them
    ("alphabetically_by_the_naming_column_shown",
     "What are the names and latitudes of stations, sorted alphabetically?",
     [["Elm", 38.25], ["Oak", 37.5]], True, None),
    # "the most recent" before a column of years: ordered by it
    ("the_most_recent_column", "Which club has the most recent founded year?", [["Sailing"]], False, None),
    # groups named by the table's name before its column
    ("for_each_table_then_column", "What is the maximum age for each student city?",
     [["Lyon", 26], ["Sevilla", 20], ["Utrecht", 22]], False, None),
    # a value two columns store (city, birth place): the one whose column's name is next to it
    ("a_value_of_two_columns_with_its_column_named_after", "What are the first names of students from Sevilla city?",
     [["Dolores"]], False, None),
    # the main table's rows a join repeats (a student with two awards), each counted once
    ("count_of_rows_a_join_repeats", "How many students have awards?", [[2]], False, None),
    ("count_of_rows_a_bridge_repeats", "How many students are members of clubs?", [[2]], False, None),
    # a range before its number column
    ("between_before_its_column", "What are the first names of students who have between 20 and 30 credits?",
     [["Ada"], ["Elise"]], False, None),
    # a verb between "not" and the value
    ("not_a_verb_then_a_value", "How many students are not living in Lyon?", [[2]], False, None),
    ("names_of_a_column", "What are the names of the owners of all programs?", [["BBC"], ["CCTV"], ["TF1"]], False,
     None),
    # the column named again after "the average of all": the average's, not one more to show
    ("than_the_average_of_all_column",
     "What are the first names of students with age greater than the average of all ages?",
     [["Ada"], ["Chen"]], False, None),
    # columns counting things: num_of_gates, total_seats
    ("a_count_column_num_of", "What is the average number of gates of all stadiums?", [[6.0]], False, None),
    ("a_count_column_total", "List the total number of seats of stadiums in ascending order.", [[300], [900]], True,
     None),
    # a column named with two units after it (revenue_millions_usd)
    ("a_column_with_two_units", "What is the maximum revenue of all stadiums?", [[12.5]], False, None),
    # ordered by the groups' sizes: of the one column shown, and beside the count shown
    ("ordered_by_the_number_of_the_tables_rows", "Show the towns of clubs in descending order of the number of clubs.",
     [["Oxford"], ["Brest"]], True, None),
    ("a_count_per_group_ordered_by_the_count",
     "Show the towns and the number of clubs in each town, ordered by the count.",
     [["Brest", 1], ["Oxford", 2]], True, None),
    # expensive and cheap measure a price; "most" / "least" before a measure
    ("the_most_expensive_by_price", "What is the drink of the most expensive wine?", [["2030"]], False, None),
    ("the_cheapest_by_price", "What is the drink of the cheapest wine?", [["now"]], False, None),
    # a verb after "who" is no table's first word (studies_records)
    ("a_verb_after_who_names_no_table", "What are the first names of students who study in Lyon?",
     [["Ada"], ["Chen"], ["Elise"]], False, None),
    # the word before (a column of its own: stadium_home) and a related word said instead name a column
    # whole ("home district": home_region)
    ("a_word_and_a_related_word_name_a_column_whole", "What is the home district of the stadium named Arena?",
     [["North"]], False, None),
    # a verb sharing the stem of a number column, then a comparison (money_requested)
    ("a_verb_of_a_number_column_compared", "What are the companies of entrepreneurs who requested more than 100000?",
     [["Solaris"], ["Quill"]], False, None),
    # "in each" with nothing after it: the count listed is per value of the column shown
    ("the_count_in_each_said_last", "Show the towns and the number of clubs in each.", [["Brest", 1], ["Oxford", 2]],
     False, None),
    # "N times": groups of the column shown holding more than N of the main table's rows
    ("more_than_n_times", "Which cities of students appear more than 2 times?", [["Lyon"]], False, None),
    # a two-word column named by its last word, which no other name says (student_capacity)
    ("a_column_named_by_its_last_word", "What is the total capacity of all dorms?", [[200]], False, None),
    # "different", then a table's name (a synonym: film), then its column
    ("different_before_a_tables_name_and_its_column", "What are the different film titles?",
     [["Heat"], ["Up"], ["Arrival"]], False, None),
    # related words read from the schema's words as spelled: a score is a rating (not the stem "rate")
    ("a_related_word_of_a_column_as_spelled", "What is the average score of all reviews?", [[4.0]], False, None),
    # a two-word column said with a related word for one of its words ("score" for rating)
    ("a_pair_with_a_related_word", "What are the match scores of all bouts?", [[7], [9]], False, None),
    # a verb sharing the stem of a column the question names already ("investor", "invested")
    ("a_verb_of_a_column_named_already", "Which investor has invested in the most entrepreneurs?", [["Ada"]],
     False, None),
    # a word that is a noun too, placed as a verb after a plural table's name
    ("a_noun_placed_as_a_verb", "How many students work in city Lyon?", [[3]], False, None),
    # a word before a table's name sharing the stem of the table's name says it again
    ("a_modifier_sharing_the_tables_stem", "How many reviewer reviews are there?", [[3]], False, None),
    # a direction "from highest to lowest" is no aggregate
    ("a_direction_from_highest_to_lowest", "What are the first names of students, ordered by age from highest to lowest?",
     [["Chen"], ["Ada"], ["Bram"], ["Elise"], ["Dolores"]], True, None),
    # "most often" after a column and a verb: the most common value
    ("most_often_after_a_verb", "Which city appears most often among students?", [["Lyon"]], False, None),
    # a column named again in a later sentence is the same column
    ("a_column_named_again_in_a_later_sentence",
     "What is the first name of the student with the most credits? Give the first name and the credits.",
     [["Chen", 45]], False, None),
    # a stored value of several words with a column's name in it ("Team Orton", a column team)
    ("a_value_holding_a_columns_name", "What are the moves of eliminations whose team is Team Orton?",
     [["Spear"], ["Kick"]], False, None),
    # "the names of the chairs": chair_name, the words the other way round
    ("a_column_named_x_of_y", "What are the names of the chairs of all festivals?", [["Ines Roth"], ["Karl Berg"]],
     False, None),
    # "the cities of the different students": each city once
    ("different_before_the_table_after_of", "What are the cities of all different students?",
     [["Lyon"], ["Utrecht"], ["Sevilla"]], False, None),
    # "terminals": a kind of station, though the schema says "end" (end_day), a near word of a terminal
    ("a_related_word_the_schema_says_a_near_word_of", "How many terminals are there?", [[2]], False, None),
    # "available" where no column says it: the rows there are
    ("available_rows", "How many available agents are there?", [[2]], False, None),
    # "report" opening a clause asks, like "show"
    ("report_opening_a_clause", "For each role, report the number of students.", [["Pupil", 3], ["Tutor", 2]],
     False, None),
    # "and the count" said last: the rows of the main table per value shown
    ("and_the_count_said_last", "Show the roles of students and the count.", [["Pupil", 3], ["Tutor", 2]], False,
     None),
    # a preposition the verb leaves at the question's end
    ("a_preposition_left_at_the_end", "How many different towns are clubs located at?", [[2]], False, None),
    ("a_verb_of_no_condition_alone", "How many courses are offered?", [[2]], False, None),
    ("a_verb_of_no_condition_before_a_value", "What are the first names of students involved in club Rowing?",
     [["Ada"], ["Chen"]], False, None),
]
# A wide schema (more tables than BI_WIDE_SCHEMA): the built-in reads the names of the tables linking found.
WIDE_SCHEMA = "".join("CREATE TABLE ledger_%02d (entry_id INTEGER PRIMARY KEY, amount REAL, memo TEXT);\n" % k
                      for k in range(70)) + "CREATE TABLE volunteers (volunteer_id INTEGER PRIMARY KEY, nickname TEXT, hours INTEGER);\n"
WIDE_PATH = fixtures.write_sqlite(os.path.join(TMP, "wide.sqlite"), WIDE_SCHEMA,
                                  {"volunteers": [(1, "Kit", 12), (2, "Sam", 30), (3, "Lee", 7)]})
# (name, question, refusal code)
READINGS_REFUSED = [
    ("refuses_a_relative_clause_column", "Show the last names of students who are on scholarship.",
     "unread_condition"),
    # "types" is gtype of the video games, not ref_club_types by its name's tail (beside clubs), whichever
    # table the engine lists first (MariaDB lists tables by name, SQLite and PostgreSQL as created)
    ("refuses_a_listed_table", "Show all video games and their types.", "table_listed"),
    # "where" opening a question asks a place, which no column here is said to be
    ("refuses_where_opening_a_question", "Where does the student with first name Ada live?", "unread_word"),
    # no column is said to hold the text
    ("refuses_a_text_pattern_whose_column_is_not_said", "Which students have the letter a?", "unread_like"),
    # employee is between course and department (instructor, head), and course joins department too
    ("refuses_three_tables_joined_two_ways", "What is the first name for the courses in department Physics?",
     "ambiguous_join"),
    # "1,200" is not a number SQLite adds up (it reads its leading 1)
    ("refuses_a_total_of_text_with_thousands_commas", "What is the total rent of apartments?", "not_a_number"),
    # the grape with the highest average, not the highest and the average price
    ("refuses_a_superlative_of_an_aggregate", "Which grape has the highest average wine price?", "aggregate_shape"),
    # no column here is the student's birthday: not read as the lessons' date (a table the question
    # does not name)
    ("refuses_a_related_word_of_a_table_not_named", "What is the birthday of the student with first name Ada?",
     "unread_word"),
    # "logged in" spells the column user_login: a condition, not a verb to pass over
    ("refuses_a_phrasal_verb_spelling_a_column", "How many users are logged in?", "unread_word"),
    # Sevilla is a student's city and birth place, and no column is named next to it
    ("refuses_a_value_two_columns_store", "How many students are from Sevilla?", "no_table"),
    # a number column named as its table: the rows, or the total it keeps?
    ("refuses_a_count_of_a_table_with_a_column_of_its_name", "How many patrols are there?", "stored_count"),
    # the condition after the negated table may be on its rows (a station with 15 platforms), not the main table's
    # "most recently": the guest's signup date or the stay's check-in date?
    ("refuses_most_recently_beside_a_joined_tables_date",
     "What is the name of the guest who made a stay most recently?", "unread_word"),
    # more than once per name of a table whose rows the name picks: the times are another table's rows
    ("refuses_n_times_of_a_tables_naming_column", "What are the names of stadiums listed more than 1 time?",
     "having_shape"),
    ("refuses_a_condition_after_the_negated_table",
     "Show the first names of students who do not have any awards with more than 20 credits.", "negation_shape"),
]
WRITES = ["Delete all orders.", "Update the city of every customer to Paris.", "Drop the customers table.",
          "Insert a new customer named Zoe."]


def norm(rows):
    out = []
    for row in rows or []:
        out.append(tuple(round(v, 6) if isinstance(v, float) else v for v in row))
    return out


def ask(svc, db, question, path="/query", **options):
    body = {"database": db, "question": question}
    if options:
        body["options"] = options
    return svc.request("POST", path, json=body, timeout=60)


def wait_values(svc, db, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = svc.request("POST", "/evidence", json={"database": db, "question": "probe"})
        if r.status == 200 and (r.json or {}).get("value_index") == "ready":
            return True
        time.sleep(0.05)
    return False


def config(databases, models=None):
    cfg = {"listen": {"host": "127.0.0.1", "port": t2s.free_port()}, "databases": databases,
           "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
           # The readings are what is tested here: the calibrated abstention over them (test_confidence.py) is off.
           "generate": {"cache_ttl_s": 0, "builtin_min_confidence": 0}, "log": QUIET}
    if models:
        cfg["models"] = models
    return cfg


def check_shapes(svc, db, engine):
    tap.ok(wait_values(svc, db), engine + "_value_index_ready")
    for name, question, want, ordered in SHAPES:
        r = ask(svc, db, question)
        j = r.json or {}
        got = norm(j.get("rows"))
        expect = norm(want)
        same = got == expect if ordered else sorted(got, key=repr) == sorted(expect, key=repr)
        conf = j.get("confidence")
        tap.ok(r.status == 200 and j.get("generator") == "builtin" and same and isinstance(conf, (int, float))
               and 0 < conf <= 1, "%s_%s" % (engine, name),
               diag=lambda: "%s -> %d %s" % (question, r.status, r.text[:500]))
    for name, question, want, shape, op in COMPOUND:
        r = ask(svc, db, question)
        j = r.json or {}
        same = sorted(norm(j.get("rows")), key=repr) == sorted(norm(want), key=repr)
        b = (j.get("trace") or {}).get("builtin") or {}
        conf = j.get("confidence")
        tap.ok(r.status == 200 and j.get("generator") == "builtin" and same and b.get("shape") == shape
               and op in (j.get("sql") or "") and isinstance(conf, (int, float)) and 0 < conf <= 1,
               "%s_%s" % (engine, name), diag=lambda: "%s -> %d %s" % (question, r.status, r.text[:700]))
    for name, question in REFUSED:
        r = ask(svc, db, question)
        b = (r.json or {}).get("builtin") or {}
        tap.ok(fixtures.is_problem(r, 422, "builtin-refused") and b.get("refusal") and b.get("reason")
               and b["reason"] in r.json.get("detail", "") and r.headers.get("Retry-After") is None,
               "%s_%s" % (engine, name), diag=r.text[:400])
        # the refusal names the rule that refused and which rule read each word, as the trace does
        claims = b.get("claims") or []
        words = [c.get("word") for c in claims]
        tap.ok(isinstance(b.get("refused_by"), str) and b["refused_by"] and words
               and words == [w.strip("?.,'\"").lower() for w in question.split()][:len(words)]
               and all(set(c) == {"word", "rule"} for c in claims),
               "%s_%s_problem_names_the_refusing_rule_and_the_claims" % (engine, name), diag=r.text[:600])
    for question in WRITES:
        r = ask(svc, db, question)
        sql = (r.json or {}).get("sql") or ""
        tap.ok(r.status == 422 or (r.status == 200 and sql.upper().startswith("SELECT")),
               "%s_write_question_refused_or_read_only: %s" % (engine, question), diag=r.text[:300])


def check_readings(svc, db, engine):
    tap.ok(wait_values(svc, db), engine + "_campus_value_index_ready")
    for name, question, want, ordered, engines in READINGS:
        if engines and engine not in engines:
            continue
        r = ask(svc, db, question)
        j = r.json or {}
        got, expect = norm(j.get("rows")), norm(want)
        same = got == expect if ordered else sorted(got, key=repr) == sorted(expect, key=repr)
        tap.ok(r.status == 200 and j.get("generator") == "builtin" and same, "%s_reads_%s" % (engine, name),
               diag=lambda: "%s -> %d %s" % (question, r.status, r.text[:600]))
    for name, question, code in READINGS_REFUSED:
        r = ask(svc, db, question)
        b = (r.json or {}).get("builtin") or {}
        tap.ok(fixtures.is_problem(r, 422, "builtin-refused") and b.get("refusal") == code,
               "%s_%s" % (engine, name), diag=r.text[:400])


def part_sqlite():
    before = t2s.sqlite_checksum(SQLITE_PATH)
    with fixtures.serving(tap, config([{"name": "shop", "url": "sqlite://" + SQLITE_PATH},
                                       {"name": "campus", "url": "sqlite://" + CAMPUS_PATH},
                                       {"name": "wide", "url": "sqlite://" + WIDE_PATH}]),
                          "sqlite_service_exits_0") as svc:
        check_shapes(svc, "shop", "sqlite")
        check_readings(svc, "campus", "sqlite")
        tap.ok(wait_values(svc, "wide"), "sqlite_wide_value_index_ready")
        r = ask(svc, "wide", "What is the nickname of the volunteer with the most hours?")
        tap.ok(r.status == 200 and (r.json or {}).get("rows") == [["Sam"]] and (r.json or {}).get("generator") == "builtin",
               "wide_schema_is_read_through_the_linked_tables", diag=r.text[:500])
        r = ask(svc, "shop", "How many customers are there?", path="/generate")
        tap.ok(((r.json or {}).get("generator"), (r.json or {}).get("sql")) == ("builtin", "SELECT count(*) FROM customers"),
               "generate_endpoint_answers_with_builtin_sql", diag=r.text[:300])
        r = ask(svc, "shop", "How many customers are there?", generator="model")
        tap.ok(fixtures.is_problem(r, 422, "generation-unavailable") and r.headers.get("Retry-After") is None,
               "generator_model_without_model_is_422_without_retry_after",
               diag=r.text[:300])
        r = ask(svc, "shop", "How many customers are there?", generator="oracle")
        tap.ok(fixtures.is_problem(r, 400, "invalid-request") and "options.generator" in r.json.get("detail", ""),
               "unknown_generator_is_400_naming_it", diag=r.text[:300])
        ready = svc.request("GET", "/readyz").json or {}
        gen = ready.get("checks", {}).get("generation", {})
        tap.eq((ready.get("status"), gen.get("status"), gen.get("generators")), ("ready", "builtin_only", ["builtin"]),
               "readyz_says_builtin_only")
        m = svc.request("GET", "/metrics").text
        tap.ok('text2sqld_answers_total{generator="builtin"}' in m, "metrics_count_answers_by_generator")
    tap.eq(t2s.sqlite_checksum(SQLITE_PATH), before, "sqlite_data_unchanged")


def pg_setup_sql(schema=SCHEMA, rows_of=ROWS):
    inserts = []
    for table, rows in rows_of.items():
        for row in rows:
            vals = ", ".join("'%s'" % str(v).replace("'", "''") if isinstance(v, str) else repr(v) for v in row)
            inserts.append("INSERT INTO %s VALUES (%s);" % (table, vals))
    ddl = schema.replace("INTEGER PRIMARY KEY", "integer PRIMARY KEY").replace(" REAL", " double precision")
    return (ddl + "\n".join(inserts) + "\nGRANT CONNECT ON DATABASE {DB} TO t2s_reader;"
            "\nGRANT SELECT ON ALL TABLES IN SCHEMA public TO t2s_reader;")


def part_postgres():
    if not fixtures.have_pg():
        tap.skip("postgres_builtin", "no PostgreSQL server (T2S_TEST_PG_PORT)")
        return
    pg = fixtures.PgDatabases(tap)
    try:
        url = pg.create("t2s_builtin", setup_sql=pg_setup_sql())
        campus_url = pg.create("t2s_builtin_campus", setup_sql=pg_setup_sql(CAMPUS_SCHEMA, CAMPUS_ROWS))
        before = t2s.pg_checksum("t2s_builtin")
        with fixtures.serving(tap, config([{"name": "shop_pg", "url": url}, {"name": "campus_pg", "url": campus_url}]),
                              "postgres_service_exits_0") as svc:
            check_shapes(svc, "shop_pg", "postgres")
            check_readings(svc, "campus_pg", "postgres")
            r = ask(svc, "shop_pg", "List the names of products whose unit price is greater than 20.")
            tap.ok('"unitPrice"' in ((r.json or {}).get("sql") or ""), "postgres_mixed_case_column_quoted",
                   diag=r.text[:300])
        tap.eq(t2s.pg_checksum("t2s_builtin"), before, "postgres_data_unchanged")
    finally:
        pg.drop_all()


def maria_setup_sql(db, schema=SCHEMA, rows_of=ROWS):
    """schema and rows_of as MariaDB statements (text as VARCHAR so it can be a key, REAL as DOUBLE)."""
    inserts = []
    for table, rows in rows_of.items():
        for row in rows:
            vals = ", ".join("'%s'" % str(v).replace("'", "''") if isinstance(v, str) else
                             ("NULL" if v is None else repr(v)) for v in row)
            inserts.append("INSERT INTO %s VALUES (%s);" % (table, vals))
    ddl = schema.replace(" TEXT", " VARCHAR(191)").replace(" REAL", " DOUBLE").replace('"unitPrice"', "`unitPrice`")
    return ("DROP DATABASE IF EXISTS `%s`; CREATE DATABASE `%s`; USE `%s`;\n" % (db, db, db) + ddl + "\n".join(inserts) +
            "\nGRANT SELECT ON `%s`.* TO '%s'@'%%';" % (db, MARIA_READER))


MARIA_READER = "t2s_builtin_my_%d" % os.getpid()
MARIA_PASSWORD = "builtin-%d" % os.getpid()


def part_mariadb():
    if not fixtures.have_mariadb():
        tap.skip("mariadb_builtin", "no MariaDB server (T2S_TEST_MARIADB_SOCKET)")
        return
    dbs = ["t2s_builtin_my", "t2s_builtin_my_campus"]
    try:
        fixtures.mariadb("DROP USER IF EXISTS '%s'@'%%'; CREATE USER '%s'@'%%' IDENTIFIED BY '%s';"
                         % (MARIA_READER, MARIA_READER, MARIA_PASSWORD))
        fixtures.mariadb(maria_setup_sql(dbs[0]))
        fixtures.mariadb(maria_setup_sql(dbs[1], CAMPUS_SCHEMA, CAMPUS_ROWS))
        before = fixtures.mariadb_checksum(dbs[0])
        urls = [fixtures.mariadb_url(d, MARIA_READER, MARIA_PASSWORD) for d in dbs]
        with fixtures.serving(tap, config([{"name": "shop_my", "url": urls[0]}, {"name": "campus_my", "url": urls[1]}]),
                              "mariadb_service_exits_0") as svc:
            check_shapes(svc, "shop_my", "mariadb")
            check_readings(svc, "campus_my", "mariadb")
            r = ask(svc, "shop_my", "List the names of products whose unit price is greater than 20.")
            tap.ok("unitPrice" in ((r.json or {}).get("sql") or "") and r.status == 200,
                   "mariadb_mixed_case_column_answered", diag=r.text[:300])
        tap.eq(fixtures.mariadb_checksum(dbs[0]), before, "mariadb_data_unchanged")
    finally:
        fixtures.mariadb("".join("DROP DATABASE IF EXISTS `%s`; " % d for d in dbs) +
                         "DROP USER IF EXISTS '%s'@'%%';" % MARIA_READER)


def part_fallback():
    stub = fixtures.ModelStub()
    try:
        models = {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 1500, "retries": 0,
                               "breaker": {"failures": 2, "cooldown_ms": 600000}}}
        with fixtures.serving(tap, config([{"name": "shop", "url": "sqlite://" + SQLITE_PATH}], models),
                              "fallback_service_exits_0") as svc:
            wait_values(svc, "shop")
            stub.rules([], default_content="```sql\nSELECT count(*) FROM customers WHERE age > 0\n```")
            r = ask(svc, "shop", "How many customers are there?")
            j = r.json or {}
            tap.ok((r.status, j.get("generator"), j.get("rows")) == (200, "model", [[5]])
                   and 0.0 <= (j.get("confidence") or -1) <= 1.0,
                   "auto_with_a_working_model_answers_from_the_model", diag=r.text[:300])
            n = len(stub.requests())
            r = ask(svc, "shop", "How many customers are there?", generator="builtin")
            tap.ok((r.json or {}).get("generator") == "builtin" and len(stub.requests()) == n,
                   "generator_builtin_never_calls_the_model", diag=r.text[:300])
            claims = (((r.json or {}).get("trace") or {}).get("builtin") or {}).get("claims")
            tap.eq([(c.get("word"), c.get("rule")) for c in claims or []],
                   [("how", "count"), ("many", "count"), ("customers", "select"), ("are", None), ("there", None)],
                   "trace_builtin_claims_name_the_rule_of_each_word")

            def fell_back(r):
                j = r.json or {}
                fb = (j.get("trace") or {}).get("fallbacks") or []
                return (r.status == 200 and j.get("generator") == "builtin" and j.get("rows") == [[5]]
                        and any(f.get("stage") == "generate" and "built-in" in f.get("reason", "") for f in fb))

            stub.rules([{"respond": {"status": 500, "content": "model broke"}}])
            r = ask(svc, "shop", "How many customers are there?")
            tap.ok(fell_back(r), "model_error_falls_back_to_builtin", diag=r.text[:600])
            r = ask(svc, "shop", "Which products taste best with breakfast?")
            tap.ok(fixtures.is_problem(r, 502, "upstream-error") and "built-in" in r.json.get("detail", ""),
                   "model_error_and_builtin_refusal_keeps_the_model_error", diag=r.text[:400])
            # Two failures in a row opened the breaker: the next question calls no model.
            n = len(stub.requests())
            r = ask(svc, "shop", "How many customers are there?")
            tap.ok(fell_back(r) and len(stub.requests()) == n, "open_breaker_falls_back_without_a_model_call",
                   diag=r.text[:600])
            r = ask(svc, "shop", "How many customers are there?", generator="model")
            tap.ok(fixtures.is_problem(r, 503, "unavailable"), "generator_model_keeps_the_breaker_error",
                   diag=r.text[:300])
        models["generate"]["breaker"] = {"failures": 10, "cooldown_ms": 1000}
        with fixtures.serving(tap, config([{"name": "shop", "url": "sqlite://" + SQLITE_PATH}], models),
                              "timeout_service_exits_0") as svc:
            wait_values(svc, "shop")
            stub.rules([{"respond": {"hang": True}}])
            r = ask(svc, "shop", "How many customers are there?")
            tap.ok(fell_back(r), "model_timeout_falls_back_to_builtin", diag=r.text[:600])
            r = ask(svc, "shop", "How many customers are there?", timeout_ms=600)
            tap.ok(fixtures.is_problem(r, 504, "timeout"), "spent_request_budget_stays_504_without_fallback",
                   diag=r.text[:300])
    finally:
        stub.close()


def guarded(part):
    def run():
        try:
            part()
        except Exception as e:  # a part that crashes is a failure, the others still run
            tap.ok(False, part.__name__ + "_ran_without_exception", diag=repr(e))
    return run


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "builtin", guarded(part_sqlite), guarded(part_postgres),
                                      guarded(part_mariadb), guarded(part_fallback)))
