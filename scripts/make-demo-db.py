#!/usr/bin/env python3
"""make-demo-db.py PATH - write the small demo SQLite database (a shop).

Tables customers, products, orders and order_items with primary and
foreign keys and a few dozen rows, so every endpoint has something real to
show.  Overwrites PATH.
"""
import os
import sqlite3
import sys

path = sys.argv[1]
if os.path.exists(path):
    os.remove(path)
db = sqlite3.connect(path)
db.executescript("""
CREATE TABLE customers (
  customer_id INTEGER PRIMARY KEY,
  full_name   TEXT NOT NULL,
  city        TEXT,
  country     TEXT,
  signup_date TEXT
);
CREATE TABLE products (
  product_id INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  category   TEXT,
  unit_price REAL NOT NULL
);
CREATE TABLE orders (
  order_id    INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
  order_date  TEXT NOT NULL,
  status      TEXT NOT NULL
);
CREATE TABLE order_items (
  order_id   INTEGER NOT NULL REFERENCES orders(order_id),
  product_id INTEGER NOT NULL REFERENCES products(product_id),
  quantity   INTEGER NOT NULL,
  PRIMARY KEY (order_id, product_id)
);
""")
customers = [
    (1, "Ada Moreau", "Lyon", "France", "2024-01-12"),
    (2, "Bram de Vries", "Utrecht", "Netherlands", "2024-02-03"),
    (3, "Chen Wei", "Shanghai", "China", "2024-02-28"),
    (4, "Dolores Ruiz", "Sevilla", "Spain", "2024-03-15"),
    (5, "Emeka Obi", "Lagos", "Nigeria", "2024-04-01"),
    (6, "Freya Lund", "Bergen", "Norway", "2024-05-20"),
    (7, "Gabriel Costa", "Porto", "Portugal", "2024-06-07"),
    (8, "Hana Sato", "Osaka", "Japan", "2024-07-19"),
]
products = [
    (1, "Espresso beans 1kg", "coffee", 24.50),
    (2, "Filter papers", "accessories", 3.90),
    (3, "Burr grinder", "equipment", 189.00),
    (4, "Green tea 250g", "tea", 12.00),
    (5, "Milk frother", "equipment", 45.00),
    (6, "Travel mug", "accessories", 19.90),
]
orders = [
    (101, 1, "2024-06-01", "shipped"), (102, 2, "2024-06-03", "shipped"),
    (103, 1, "2024-07-11", "delivered"), (104, 3, "2024-07-15", "cancelled"),
    (105, 4, "2024-08-02", "delivered"), (106, 5, "2024-08-20", "shipped"),
    (107, 6, "2024-09-09", "pending"), (108, 8, "2024-09-30", "delivered"),
    (109, 2, "2024-10-05", "pending"), (110, 7, "2024-10-21", "shipped"),
]
items = [
    (101, 1, 2), (101, 2, 1), (102, 3, 1), (103, 4, 3), (103, 6, 1), (104, 5, 1),
    (105, 1, 1), (105, 5, 1), (106, 6, 2), (107, 2, 4), (108, 3, 1), (108, 1, 3),
    (109, 4, 2), (110, 6, 1), (110, 2, 2),
]
db.executemany("INSERT INTO customers VALUES (?,?,?,?,?)", customers)
db.executemany("INSERT INTO products VALUES (?,?,?,?)", products)
db.executemany("INSERT INTO orders VALUES (?,?,?,?)", orders)
db.executemany("INSERT INTO order_items VALUES (?,?,?)", items)
db.commit()
db.close()
print("demo database written to %s" % path)
