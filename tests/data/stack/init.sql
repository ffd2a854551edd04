CREATE TABLE articles (id serial PRIMARY KEY, title text NOT NULL);
INSERT INTO articles (title) SELECT 'article ' || i FROM generate_series(1, 250) AS i;
